#!/usr/bin/env python3
"""Issue 25: replicas agree on which pinglist each agent holds, also when they were not there or the
store was away when it was handed. A real redis-server (append-only file, so it comes back with its
data) and two `weft controller` replicas on loopback, three real agents reporting to replica A:
 1. replica B, started after the agents got their pinglists, lists each agent's pinglist version and
    target count as A does at once (not from the next pinglist change: the feed only carries changes);
 2. with Redis stopped, agent c stops; once A hands a and b their smaller pinglists (c is down) and
    Redis is back, B lists the new versions too (the change A could not publish is passed on).
Skips (77) without redis-server. Loopback only. Usage: replica_pinglist_test.py WEFT"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from mesh_harness import controller_config, finish, get, start_agent, stop, wait  # noqa: E402  (tests/pylib)
import redis_servers  # noqa: E402  (tests/pylib)

WEFT = sys.argv[1]
redis_servers.skip_without_redis()
REDIS_PORT = 18490
A, B = 18491, 18492
TOKEN = "replica-pinglist-token"
AGENTS = {"a": "127.0.0.121", "b": "127.0.0.122", "c": "127.0.0.123"}
UDP, TCP = 18165, 18166


def handed(port):
    """{agent: (pinglist_version, pinglist_targets)} as the replica lists them."""
    return {a["name"]: (a["pinglist_version"], a["pinglist_targets"]) for a in get(port, "/api/v1/agents")["agents"]}


def start_controller(tmp, name, port):
    with open(f"{tmp}/{name}.yaml", "w") as f:
        f.write(controller_config(port, TOKEN, f"redis://127.0.0.1:{REDIS_PORT}", agent_down_after="3s"))
    p = subprocess.Popen([WEFT, "--log-level", "info", "controller", "-c", f"{tmp}/{name}.yaml"],
                         stderr=open(f"{tmp}/controller-{name}.log", "a"))
    wait(lambda: get(port, "/healthz")["status"] == "ok", f"replica {name} up")
    return p


tmp = tempfile.mkdtemp(prefix="wms-replica-pinglist-")
procs = []
failed = []
try:
    redis = redis_servers.start_redis(tmp, REDIS_PORT)
    procs.append(redis)
    procs.append(start_controller(tmp, "A", A))
    agent_procs = {n: start_agent(WEFT, tmp, f"http://127.0.0.1:{A}", TOKEN, n, addr, UDP, TCP)
                   for n, addr in AGENTS.items()}
    procs += agent_procs.values()
    first = wait(lambda: (lambda h: h if len(h) == 3 and all(v[0] != 0 and v[1] == 2 for v in h.values())
                          else None)(handed(A)), "replica A hands every agent its pinglist")
    time.sleep(1.5)  # pinglists settled and published; nothing changes from here until c stops

    # 1. A replica started later: the agents' pinglists were all handed before it came.
    procs.append(start_controller(tmp, "B", B))
    try:
        wait(lambda: handed(B) == first, "replica B lists the pinglists the agents hold", timeout=5)
        print(f"ok   a replica started later lists every agent's pinglist: {first}")
    except SystemExit as e:
        failed.append(f"{str(e).removeprefix('FAIL: ')}: A {first}, B {handed(B)}")

    # 2. A pinglist change while Redis is away reaches B once it is back.
    redis.terminate()
    redis.wait(timeout=30)
    stop([agent_procs["c"]])
    changed = wait(lambda: (lambda h: h if h["a"][1] == 1 and h["b"][1] == 1 and h["a"][0] != first["a"][0]
                            else None)(handed(A)), "replica A hands a and b their pinglists without c",
                   timeout=30)
    procs.append(redis_servers.start_redis(tmp, REDIS_PORT))
    want = {n: changed[n] for n in ("a", "b")}
    try:
        wait(lambda: {n: handed(B)[n] for n in ("a", "b")} == want,
             "replica B lists the pinglists A handed while Redis was away", timeout=20)
        print(f"ok   a change made while Redis was away reaches the other replica: {want}")
    except SystemExit as e:
        failed.append(f"{str(e).removeprefix('FAIL: ')}: A {want}, B {handed(B)}")
finally:
    stop(procs)
    if not failed:
        shutil.rmtree(tmp, ignore_errors=True)
finish(failed, "ok   replicas agree on the agents' pinglists")
