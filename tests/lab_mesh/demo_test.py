#!/usr/bin/env python3
"""`weft demo` end to end: it prints the URL, the API shows every ordered pair of its agents, and when
it stops (--duration, like Ctrl-C) nothing it made is left: processes, namespaces, links, temp dir.
Usage: demo_test.py WEFT [--netns]. --netns needs root (exit 77 otherwise)."""
import json
import os
import subprocess
import sys
import time
import urllib.request

WEFT, NETNS = sys.argv[1], "--netns" in sys.argv[2:]
PORT = 18088 if NETNS else 18089
AGENTS = 3


def get(path):
    with urllib.request.urlopen(f"http://127.0.0.1:{PORT}{path}", timeout=5) as r:
        return json.loads(r.read())


def leftovers():
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout if NETNS else ""
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    procs = subprocess.run(["pgrep", "-f", f"weft-demo-{proc.pid}"], capture_output=True, text=True).stdout
    return [x for x in ns.splitlines() + links.splitlines() if "wmsd" in x] + procs.split() + \
        ([f"/tmp/weft-demo-{proc.pid}"] if os.path.exists(f"/tmp/weft-demo-{proc.pid}") else [])


if NETNS and os.geteuid() != 0:
    print("SKIP: the namespace demo needs root")
    raise SystemExit(77)
args = [WEFT, "demo", "--agents", str(AGENTS), "--port", str(PORT), "--duration", "25"]
if not NETNS:
    args.append("--no-netns")
proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
try:
    deadline = time.monotonic() + 20
    want = {(f"host{a}", f"host{b}") for a in range(1, AGENTS + 1) for b in range(1, AGENTS + 1) if a != b}
    while True:
        try:
            have = {(p["src"], p["dst"]) for p in get("/api/v1/mesh?protocol=udp")["pairs"] if p["received"] > 0}
            have_tcp = {(p["src"], p["dst"]) for p in get("/api/v1/mesh?protocol=tcp")["pairs"] if p["received"] > 0}
            if want <= have and want <= have_tcp:
                break
        except OSError:
            pass
        assert time.monotonic() < deadline, "the demo's mesh did not fill in 20 s"
        time.sleep(0.5)
    agents = get("/api/v1/agents")["agents"]
    assert len(agents) == AGENTS and all(a["state"] == "up" for a in agents), agents
    out, _ = proc.communicate(timeout=40)
finally:
    if proc.poll() is None:
        proc.terminate()
        proc.wait(10)
print(out)
assert proc.returncode == 0, proc.returncode
assert f"http://127.0.0.1:{PORT}/" in out, "no dashboard URL printed"
assert "cleaned up" in out
time.sleep(0.5)
left = leftovers()
assert not left, f"left behind: {left}"
print("PASS")
