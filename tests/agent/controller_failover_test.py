#!/usr/bin/env python3
"""Issue 15: two controllers on one Redis (run through tests/controller/with_redis.sh, which sets
WEFT_TEST_REDIS) are replicas: agents given both URLs keep reporting when the first one dies, and no
window measured meanwhile is lost (the outbox keeps it until the second one takes it). Registrations
and history read from the second controller include what the first one stored.
Loopback only. Usage: with_redis.sh controller_failover_test.py WEFT"""
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

WEFT = sys.argv[1]
REDIS = os.environ.get("WEFT_TEST_REDIS")
if not REDIS:
    print("SKIP: WEFT_TEST_REDIS not set")
    sys.exit(77)
PORTS = (18197, 18198)
TOKEN = "failover-token-1"
A, B = "127.0.0.51", "127.0.0.52"
UDP, TCP = 18131, 18132


def get(port, path):
    with urllib.request.urlopen(urllib.request.Request(
            f"http://127.0.0.1:{port}{path}", headers={"Authorization": f"Bearer {TOKEN}"}), timeout=5) as r:
        return json.loads(r.read())


def wait(pred, what, timeout=30):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            v = pred()
            if v:
                return v
        except OSError:
            pass
        time.sleep(0.3)
    raise SystemExit(f"FAIL: {what}")


def history(port, src, dst):
    return get(port, f"/api/v1/pairs/{src}/{dst}/history?protocol=udp")["windows"]


tmp = tempfile.mkdtemp(prefix="wms-failover-")
procs = []
failed = []
try:
    for port in PORTS:
        with open(f"{tmp}/c{port}.yaml", "w") as f:
            f.write(f"listen: 127.0.0.1:{port}\ntokens: [{TOKEN}]\nstore: {REDIS}\nwindow: 1s\n"
                    "report_interval: 300ms\npinglist_sync: 1s\nagent_down_after: 60s\n"
                    "protocols:\n  udp: {interval: 50ms, timeout: 300ms}\n"
                    "groups:\n  - {name: all, protocols: [udp], members: ['*']}\n")
        procs.append(subprocess.Popen([WEFT, "--log-level", "warn", "controller", "-c", f"{tmp}/c{port}.yaml"],
                                      stderr=open(f"{tmp}/controller-{port}.log", "w")))
        wait(lambda: get(port, "/healthz")["status"] == "ok", f"controller {port} up")
    urls = ",".join(f"http://127.0.0.1:{p}" for p in PORTS)
    for name, addr in (("a", A), ("b", B)):
        procs.append(subprocess.Popen([WEFT, "--log-level", "info", "agent", "--controller", urls,
                                       "--token", TOKEN, "--name", name, "--address", addr, "--protocols", "udp",
                                       "--udp-port", str(UDP), "--tcp-port", str(TCP)],
                                      stdout=subprocess.DEVNULL, stderr=open(f"{tmp}/agent-{name}.log", "w")))
    wait(lambda: len(history(PORTS[0], "a", "b")) >= 2 and len(history(PORTS[0], "b", "a")) >= 2,
         "windows flowing through the first controller")
    # The second controller reads what the first stored.
    if len(history(PORTS[1], "a", "b")) < 2:
        failed.append("the second controller does not see the first one's history")
    procs[0].kill()  # the first controller dies without a goodbye
    procs[0].wait()
    killed_at = time.time()
    for src, dst in (("a", "b"), ("b", "a")):
        ws = wait(lambda: [w for w in history(PORTS[1], src, dst) if w["window_start"] > killed_at + 2]
                  and history(PORTS[1], src, dst), f"{src}->{dst} windows through the second controller")
        starts = sorted(w["window_start"] for w in ws)
        gaps = [round(b - a, 2) for a, b in zip(starts, starts[1:]) if b - a > 1.5]
        dup = len(starts) - len(set(starts))
        print(f"{src}->{dst}: {len(starts)} windows, gaps > 1.5 s: {gaps}, doubled: {dup}")
        if gaps:
            failed.append(f"{src}->{dst}: windows lost over the failover (gaps {gaps})")
        if dup:
            failed.append(f"{src}->{dst}: {dup} windows doubled")
    agents = get(PORTS[1], "/api/v1/agents")
    names = {a["name"] for a in (agents["agents"] if isinstance(agents, dict) else agents)}
    if not {"a", "b"} <= names:
        failed.append(f"the second controller lists {sorted(names)}")
    if "trying replica" not in open(f"{tmp}/agent-a.log").read():
        failed.append("agent a did not say it moved to the other controller")
finally:
    for p in procs[::-1]:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
if failed:
    for f in failed:
        print("FAIL:", f)
    sys.exit(1)
print("ok   controller failover lost nothing")
