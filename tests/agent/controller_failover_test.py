#!/usr/bin/env python3
"""Issue 15: two controllers on one Redis (run through tests/controller/with_redis.sh, which sets
WEFT_TEST_REDIS) are replicas: agents given both URLs keep reporting when the first one dies, and no
window measured meanwhile is lost (the outbox keeps it until the second one takes it). Registrations
and history read from the second controller include what the first one stored.
Loopback only. Usage: with_redis.sh controller_failover_test.py WEFT"""
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from mesh_harness import controller_config, finish, get, start_agent, stop, wait  # noqa: E402  (tests/pylib)

WEFT = sys.argv[1]
REDIS = os.environ.get("WEFT_TEST_REDIS")
if not REDIS:
    print("SKIP: WEFT_TEST_REDIS not set")
    sys.exit(77)
PORTS = (18197, 18198)
TOKEN = "failover-token-1"
A, B = "127.0.0.51", "127.0.0.52"
UDP, TCP = 18131, 18132


def history(port, src, dst):
    return get(port, f"/api/v1/pairs/{src}/{dst}/history?protocol=udp", TOKEN)["windows"]


tmp = tempfile.mkdtemp(prefix="wms-failover-")
procs = []
failed = []
try:
    for port in PORTS:
        with open(f"{tmp}/c{port}.yaml", "w") as f:
            f.write(controller_config(port, TOKEN, REDIS))
        procs.append(subprocess.Popen([WEFT, "--log-level", "warn", "controller", "-c", f"{tmp}/c{port}.yaml"],
                                      stderr=open(f"{tmp}/controller-{port}.log", "w")))
        wait(lambda: get(port, "/healthz", TOKEN)["status"] == "ok", f"controller {port} up")
    urls = ",".join(f"http://127.0.0.1:{p}" for p in PORTS)
    for name, addr in (("a", A), ("b", B)):
        procs.append(start_agent(WEFT, tmp, urls, TOKEN, name, addr, UDP, TCP))
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
    agents = get(PORTS[1], "/api/v1/agents", TOKEN)
    names = {a["name"] for a in (agents["agents"] if isinstance(agents, dict) else agents)}
    if not {"a", "b"} <= names:
        failed.append(f"the second controller lists {sorted(names)}")
    if "trying replica" not in open(f"{tmp}/agent-a.log").read():
        failed.append("agent a did not say it moved to the other controller")
finally:
    stop(procs)
finish(failed, "ok   controller failover lost nothing")
