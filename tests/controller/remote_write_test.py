#!/usr/bin/env python3
"""Issue 15: long-term series in Prometheus. Starts a real Prometheus (Debian's, with its
remote-write receiver) on 127.0.0.1, a controller with `remote_write:` pointing at it and two agents
on loopback. Then asks Prometheus' query API for the a->b and b->a pair series and checks that the
samples at the windows' ends hold the same loss ratio and network RTT percentiles as the
controller's history of those windows. Skips (77) when prometheus is not installed.
Loopback only. Usage: remote_write_test.py WEFT"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from mesh_harness import controller_config, finish, get, start_agent, stop, wait  # noqa: E402  (tests/pylib)

WEFT = sys.argv[1]
PROM = shutil.which("prometheus")
if not PROM:
    print("SKIP: prometheus not installed")
    sys.exit(77)
PROM_PORT, PORT = 18291, 18292
TOKEN = "remote-write-token"
AGENTS = {"a": "127.0.0.71", "b": "127.0.0.72"}
UDP, TCP = 18151, 18152


def prom_samples(query):
    """{(src, dst, stat): {timestamp_s: value}} of a range-vector query."""
    q = urllib.parse.quote(query)
    r = get(PROM_PORT, f"/api/v1/query?query={q}")
    out = {}
    for s in r["data"]["result"]:
        m = s["metric"]
        out[(m["src"], m["dst"], m.get("stat"))] = {round(float(t), 3): float(v) for t, v in s["values"]}
    return out


tmp = tempfile.mkdtemp(prefix="wms-remote-write-")
procs = []
failed = []
try:
    with open(f"{tmp}/prometheus.yml", "w") as f:
        f.write("global: {}\n")
    procs.append(subprocess.Popen([PROM, f"--config.file={tmp}/prometheus.yml",
                                   f"--storage.tsdb.path={tmp}/tsdb",
                                   f"--web.listen-address=127.0.0.1:{PROM_PORT}",
                                   "--web.enable-remote-write-receiver"],
                                  stdout=subprocess.DEVNULL, stderr=open(f"{tmp}/prometheus.log", "w")))
    wait(lambda: get(PROM_PORT, "/api/v1/status/buildinfo")["status"] == "success", "prometheus up")
    with open(f"{tmp}/c.yaml", "w") as f:
        f.write(controller_config(PORT, TOKEN, f"sqlite:{tmp}/h.db") +
                f"remote_write: http://127.0.0.1:{PROM_PORT}/api/v1/write\nremote_write_interval: 1s\n")
    procs.append(subprocess.Popen([WEFT, "--log-level", "warn", "controller", "-c", f"{tmp}/c.yaml"],
                                  stderr=open(f"{tmp}/controller.log", "w")))
    wait(lambda: get(PORT, "/healthz")["status"] == "ok", "controller up")
    for n, addr in AGENTS.items():
        procs.append(start_agent(WEFT, tmp, f"http://127.0.0.1:{PORT}", TOKEN, n, addr, UDP, TCP))

    # Windows the controller has and Prometheus got, matched by the window's end (the sample's time).
    def matched():
        loss = prom_samples("weft_pair_loss_ratio[5m]")
        rtt = prom_samples("weft_pair_network_rtt_seconds[5m]")
        found = []
        for src, dst in (("a", "b"), ("b", "a")):
            hist = get(PORT, f"/api/v1/pairs/{src}/{dst}/history?protocol=udp")["windows"]
            for w in hist:
                t = round(w["window_end"], 3)
                if t in loss.get((src, dst, None), {}) and t in rtt.get((src, dst, "p50"), {}):
                    found.append((src, dst, w, loss, rtt))
                    break
        return found if len(found) == 2 else None
    found = wait(matched, "pair series in Prometheus at the windows' ends", timeout=40)
    for src, dst, w, loss, rtt in found:
        t = round(w["window_end"], 3)
        want = {"loss": w["loss_ratio"]}
        got = {"loss": loss[(src, dst, None)][t]}
        for stat in ("p50", "p90", "p99", "max"):
            want[stat] = w["network_rtt_us"][stat] / 1e6
            got[stat] = rtt[(src, dst, stat)][t]
        bad = {k: (got[k], want[k]) for k in want if abs(got[k] - want[k]) > 1e-12 + 1e-9 * abs(want[k])}
        print(f"{src}->{dst} window ending {t}: Prometheus {json.dumps(got)}")
        if bad:
            failed.append(f"{src}->{dst}: Prometheus (got, controller) differ: {bad}")
        if w["network_rtt_us"]["count"] == 0 or got["p50"] <= 0:
            failed.append(f"{src}->{dst}: no RTT measured (the check would be empty)")
finally:
    stop(procs)
finish(failed, "ok   pair series in Prometheus by remote write, values as the controller's")
