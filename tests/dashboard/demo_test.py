#!/usr/bin/env python3
"""Lab test: the dashboard against `weft demo` (controller + 4 real agents, each in its own
network namespace on a bridge), with 30 % loss injected on one link by nftables on the bridge.

Checks in headless Chromium: no console errors, a current cell for every ordered pair (UDP), the
pair whose probes cross the lossy link painted lossy (red end) while pairs off that link stay
green, and a click on it shows that pair's history. Screenshot: <artifacts>/dashboard-demo.png.
Needs root (namespaces, nftables): exits 77 (skipped) otherwise.

    demo_test.py WEFT_BINARY ARTIFACT_DIR
"""
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from webdriver import Browser, wait_port  # noqa: E402

DEMO_PORT, DRIVER_PORT, DEVTOOLS_PORT = 19104, 19105, 19106
NFT_TABLE = "wdb_demo_loss"
HOSTS = [f"host{i}" for i in range(1, 5)]
# Frames from host1's veth to host3's are dropped: host1's probes to host3 and host3's answers
# to host1 both cross it, so pairs host1->host3 and host3->host1 lose, no other pair does.
LOSSY_PAIRS = {("host1", "host3"), ("host3", "host1")}


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def api(path):
    with urllib.request.urlopen(f"http://127.0.0.1:{DEMO_PORT}{path}", timeout=10) as r:
        return json.load(r)


def udp_pairs():
    mesh = api("/api/v1/mesh?protocol=udp&group=demo")
    return {(p["src"], p["dst"]): p for p in mesh["pairs"] if p["age_s"] <= 2 * mesh["window_s"]}


def wait(cond, timeout, what):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = cond()
            if last:
                return last
        except OSError as e:
            last = e
        time.sleep(1)
    raise AssertionError(f"timed out after {timeout} s waiting for {what} (last: {last!r})")


def nft(*args, check_rc=True):
    return subprocess.run(["nft", *args], check=check_rc, capture_output=True)


def main():
    weft, artifacts = sys.argv[1], sys.argv[2]
    if os.geteuid() != 0:
        print("needs root (network namespaces, nftables): skipped")
        return 77
    for tool in ("/usr/bin/chromium", "/usr/bin/chromedriver", "/usr/sbin/nft"):
        if not os.access(tool, os.X_OK):
            print(f"{tool} not installed: skipped")
            return 77
    os.makedirs(artifacts, exist_ok=True)
    log = open(os.path.join(artifacts, "demo.log"), "wb")
    # --duration bounds the demo even if this test is killed before it can stop it.
    demo = subprocess.Popen([weft, "demo", "--port", str(DEMO_PORT), "--duration", "240"],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_port(DEMO_PORT, timeout=60, proc=demo)
        n = len(HOSTS)
        wait(lambda: len(udp_pairs()) == n * (n - 1), 60, f"all {n * (n - 1)} UDP pairs current")
        nft("add", "table", "bridge", NFT_TABLE)
        nft("add", "chain", "bridge", NFT_TABLE, "f", "{ type filter hook forward priority 0; policy accept; }")
        nft("add", "rule", "bridge", NFT_TABLE, "f", "iifname", "wmsd-v1", "oifname", "wmsd-v3",
            "numgen", "random", "mod", "100", "<", "30", "drop")
        # Two windows (5 s each) after the rule, the latest windows of the crossing pairs are lossy.
        wait(lambda: all(udp_pairs().get(p, {}).get("loss_ratio", 0) > 0.15 for p in LOSSY_PAIRS), 60,
             "the pairs across the lossy link to show loss")
        pairs = udp_pairs()
        print("UDP loss ratios: " + ", ".join(f"{s}->{d} {p['loss_ratio']:.2f}" for (s, d), p in sorted(pairs.items())))

        with Browser(DRIVER_PORT, DEVTOOLS_PORT) as b:
            b.get(f"http://127.0.0.1:{DEMO_PORT}/?protocol=udp&group=demo&metric=loss&refresh=5")
            st = b.wait_for("const d = window.weftDashboard; return d && d.state().renders > 0 && d.state();",
                            what="first render")
            check(st["error"] is None, f"page error: {st['error']}")
            check(st["hosts"] == HOSTS, f"heatmap axes {st['hosts']}")
            check(st["counts"]["ok"] == n * (n - 1), f"cells: {st['counts']}")
            for s in HOSTS:
                for d in HOSTS:
                    if s == d:
                        continue
                    c = b.js("return window.weftDashboard.cell(arguments[0], arguments[1]);", s, d)
                    r, g, _ = c["rgb"]
                    if (s, d) in LOSSY_PAIRS:
                        check(c["pair"]["loss"] > 0.15 and r > 180 and g < 130,
                              f"{s}->{d} loss {c['pair']['loss']} painted {c['rgb']}: expected the lossy end")
                    elif c["pair"]["loss"] == 0:
                        check(g > r, f"{s}->{d} without loss painted {c['rgb']}: expected green")
                    else:  # a stray lost probe on an idle machine: must still be far from red
                        check(c["pair"]["loss"] < 0.05, f"{s}->{d} has loss {c['pair']['loss']} off the lossy link")
            rect = b.js("return window.weftDashboard.cell('host1', 'host3').rect;")
            b.click_at(rect["x"] + rect["w"] / 2, rect["y"] + rect["h"] / 2)
            hist = b.wait_for("const h = window.weftDashboard.state().history; return h && h.windows && h;",
                              what="pair history")
            check((hist["src"], hist["dst"]) == ("host1", "host3") and hist["windows"] >= 2, f"history {hist}")
            b.move_to(5, 5)
            time.sleep(0.3)
            print("screenshot:", b.screenshot(os.path.join(artifacts, "dashboard-demo.png")))
            errors = b.console_errors()
            check(not errors, f"console errors: {errors}")
    finally:
        nft("delete", "table", "bridge", NFT_TABLE, check_rc=False)
        if demo.poll() is None:
            demo.send_signal(signal.SIGTERM)  # the demo removes its namespaces, links and files
            try:
                demo.wait(60)
            except subprocess.TimeoutExpired:
                demo.kill()
                demo.wait()
    print("demo dashboard test: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
