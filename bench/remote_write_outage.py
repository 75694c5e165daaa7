#!/usr/bin/env python3
"""Remote-write completeness through a controller outage (issue 25): a real Prometheus (remote-write
receiver, out_of_order_time_window 1h), a `weft controller` (SQLite store, 1 s windows) and three real
agents probing each other over UDP on loopback, for DURATION seconds; at OUTAGE_AT the controller is
stopped (SIGTERM; with --kill SIGKILL, so it cannot flush its remote-write queue and must push what
it owed from its spool after the restart) and started again OUTAGE seconds later (the agents spool
meanwhile and resend).
Then, per pair, every window in the controller's history must be in Prometheus once, at its end:
prints missing (in the store, not in Prometheus) and extra (in Prometheus, not in the store) windows.
Exit 1 if any is missing or extra.

Usage: bench/remote_write_outage.py WEFT [--duration 600] [--outage 60] [--outage-at 240] [--kill] [--json]
       [--port P] [--lane N]
The ctests `bench_remote_write_outage_short` and `bench_remote_write_outage_kill_short` run it with
--duration 50 --outage 10 --outage-at 15 (the second with --kill).
Loopback only; skips (77) without prometheus."""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "pylib"))
from mesh_harness import controller_config, get, start_agent, stop, wait  # noqa: E402  (tests/pylib)
from prometheus_server import skip_without_prometheus, start_prometheus  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("weft")
ap.add_argument("--duration", type=int, default=600)
ap.add_argument("--outage", type=int, default=60)
ap.add_argument("--outage-at", type=int, default=240)
ap.add_argument("--kill", action="store_true", help="SIGKILL the controller (a crash) instead of SIGTERM")
ap.add_argument("--lane", type=int, default=0,
                help="agents on 127.0.LANE.91-93 and UDP/TCP ports 18153+2*LANE: two runs at once, e.g. an A/B")
ap.add_argument("--json", action="store_true")
ap.add_argument("--port", type=int, default=18295, help="Prometheus' port; the controller's is the next one")
args = ap.parse_args()
skip_without_prometheus()
PROM_PORT, PORT = args.port, args.port + 1
TOKEN = "remote-write-outage"
AGENTS = {n: f"127.0.{args.lane}.{91 + i}" for i, n in enumerate("abc")}
UDP, TCP = 18153 + 2 * args.lane, 18154 + 2 * args.lane
PAIRS = [(s, d) for s in AGENTS for d in AGENTS if s != d]


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def start_controller(tmp):
    return subprocess.Popen([args.weft, "--log-level", "info", "controller", "-c", f"{tmp}/c.yaml"],
                            stderr=open(f"{tmp}/controller.log", "a"))


tmp = tempfile.mkdtemp(prefix="wms-rw-outage-")
procs = []
try:
    procs.append(start_prometheus(tmp, PROM_PORT))
    with open(f"{tmp}/c.yaml", "w") as f:
        f.write(controller_config(PORT, TOKEN, f"sqlite:{tmp}/h.db", agent_down_after="1h") +
                f"remote_write: http://127.0.0.1:{PROM_PORT}/api/v1/write\nremote_write_interval: 1s\n")
    ctl = start_controller(tmp)
    wait(lambda: get(PORT, "/healthz")["status"] == "ok", "controller up")
    agents = [start_agent(args.weft, tmp, f"http://127.0.0.1:{PORT}", TOKEN, n, a, UDP, TCP) for n, a in AGENTS.items()]
    procs += agents
    t0 = time.time()
    end = t0 + args.duration
    time.sleep(max(0, args.outage_at))
    if args.kill:
        # Killed while it owes the receiver windows (accepted, answered, not yet pushed): what a
        # crash costs is then seen on every run, not only when it happens to land between pushes.
        def owes():
            with urllib.request.urlopen(f"http://127.0.0.1:{PORT}/metrics", timeout=5) as r:
                for line in r.read().decode().splitlines():
                    if line.startswith("weft_remote_write_queued_windows "):
                        return float(line.split()[1]) > 0
            return False
        end_poll = time.monotonic() + 10
        while time.monotonic() < end_poll and not owes():
            time.sleep(0.02)
    log(f"controller {'killed' if args.kill else 'stopped'} at {time.time() - t0:.0f} s for {args.outage} s")
    ctl.send_signal(signal.SIGKILL if args.kill else signal.SIGTERM)
    ctl.wait(timeout=30)
    time.sleep(args.outage)
    ctl = start_controller(tmp)
    procs.append(ctl)
    wait(lambda: get(PORT, "/healthz")["status"] == "ok", "controller up again")
    log(f"controller back at {time.time() - t0:.0f} s")
    time.sleep(max(0, end - time.time()))
    stop(agents)  # their last windows are sent when they stop
    time.sleep(2)

    def drained():
        with urllib.request.urlopen(f"http://127.0.0.1:{PORT}/metrics", timeout=5) as r:
            for line in r.read().decode().splitlines():
                if line.startswith("weft_remote_write_queued_windows "):
                    return float(line.split()[1]) == 0
        # A build without the queue (an A/B against an older commit): give its pushes a few rounds.
        time.sleep(5)
        return True
    wait(drained, "remote-write queue drained", timeout=120)

    since = int(t0 - 5) * 10**9
    missing = extra = held = 0
    q = urllib.parse.quote(f"weft_pair_loss_ratio[{args.duration + 600}s]")
    res = get(PROM_PORT, f"/api/v1/query?query={q}")["data"]["result"]
    prom = {(s["metric"]["src"], s["metric"]["dst"]): [round(float(t) * 1000) for t, _ in s["values"]] for s in res}
    per_pair = {}
    for src, dst in PAIRS:
        hist = get(PORT, f"/api/v1/pairs/{src}/{dst}/history?protocol=udp&since={since}&limit=100000")["windows"]
        ends = {round(w["window_end"] * 1000) for w in hist}
        got = prom.get((src, dst), [])
        m = len(ends - set(got))
        x = len(got) - len(set(got) & ends)
        per_pair[f"{src}->{dst}"] = {"store": len(ends), "prometheus": len(got), "missing": m, "extra": x}
        missing += m
        extra += x
        held += len(ends)
    result = {"duration_s": args.duration, "outage_s": args.outage, "outage_at_s": args.outage_at,
              "stop": "SIGKILL" if args.kill else "SIGTERM",
              "windows": held, "missing": missing, "extra": extra, "pairs": per_pair}
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{held} windows in the store over {args.duration} s with a {args.outage} s controller outage "
              f"({'SIGKILL' if args.kill else 'SIGTERM'}): "
              f"{missing} missing in Prometheus, {extra} extra")
    if held < len(PAIRS) * (args.duration - args.outage) * 0.8:
        print(f"FAIL: only {held} windows in the store (agents not probing?)")
        sys.exit(1)
    sys.exit(1 if missing or extra else 0)
finally:
    stop(procs)
