#!/usr/bin/env python3
"""Issue 15: two controllers over one Redis Cluster (run through with_redis_cluster.sh, which sets
WEFT_TEST_REDIS_CLUSTER) answer alike. Four agents report to the first controller only; the second
learns their registrations, windows and last-seen times from the store's replica feed
(src/controller/redis_feed.hpp). Checked three times: all up, an agent killed (the pairs towards it
lose every probe and blame names it), and that agent marked down (it leaves every pinglist). Each
time the mesh, the suspects, every pinglist and the agent list (name, state, addresses, registered)
must be identical from both controllers.
Reads happen while windows keep arriving, so one comparison reads A, B, A and counts only when A did
not change in between; it is retried (bounded) until one such read finds B equal to A.
Loopback only. Usage: with_redis_cluster.sh replica_agreement_test.py WEFT"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from mesh_harness import controller_config, finish, get, start_agent, stop, wait  # noqa: E402  (tests/pylib)

WEFT = sys.argv[1]
STORE = os.environ.get("WEFT_TEST_REDIS_CLUSTER")
if not STORE:
    print("SKIP: WEFT_TEST_REDIS_CLUSTER not set")
    sys.exit(77)
PORTS = (18297, 18298)
TOKEN = "replica-token-1"
AGENTS = {"a": "127.0.0.61", "b": "127.0.0.62", "c": "127.0.0.63", "d": "127.0.0.64"}
UDP, TCP = 18141, 18142


def pinglist(port, name):
    try:
        return get(port, f"/api/v1/pinglists/{name}")
    except urllib.error.HTTPError as e:
        return e.code  # 404: not registered there


def targets(pl):
    """The UDP targets' names of a pinglist answer."""
    return sorted(t["name"] for pp in pl["protocols"] if pp["protocol"] == "udp" for t in pp["targets"])


def view(port):
    """What a replica answers, without what depends on the moment of the read (age_s, last_seen)."""
    mesh = get(port, "/api/v1/mesh?protocol=udp")
    for p in mesh["pairs"]:
        p.pop("age_s")
    agents = sorted((a["name"], a["state"], a["addresses"], a["registered"])
                    for a in get(port, "/api/v1/agents")["agents"])
    return {"mesh": mesh, "suspects": get(port, "/api/v1/suspects?protocol=udp"),
            "pinglists": {n: pinglist(port, n) for n in AGENTS}, "agents": agents}


def agree(what, cond=lambda v: True, tries=60):
    """A view both replicas give alike (and that satisfies cond), or a FAIL naming the difference."""
    last = None
    for _ in range(tries):
        a1, b, a2 = view(PORTS[0]), view(PORTS[1]), view(PORTS[0])
        if a1 == a2 and cond(a1):
            if a1 == b:
                return a1
            last = [k for k in a1 if a1[k] != b[k]]
        time.sleep(0.1)
    raise SystemExit(f"FAIL: {what}: the replicas differ in {last}" if last else
                     f"FAIL: {what}: never a stable view")


tmp = tempfile.mkdtemp(prefix="wms-replicas-")
procs = []
failed = []
try:
    for port in PORTS:
        with open(f"{tmp}/c{port}.yaml", "w") as f:
            f.write(controller_config(port, TOKEN, STORE, agent_down_after="6s"))
        procs.append(subprocess.Popen([WEFT, "--log-level", "warn", "controller", "-c", f"{tmp}/c{port}.yaml"],
                                      stderr=open(f"{tmp}/controller-{port}.log", "w")))
        wait(lambda: get(port, "/healthz")["status"] == "ok", f"controller {port} up")
    agents = {n: start_agent(WEFT, tmp, f"http://127.0.0.1:{PORTS[0]}", TOKEN, n, addr, UDP, TCP)
              for n, addr in AGENTS.items()}
    procs += agents.values()
    full = len(AGENTS) * (len(AGENTS) - 1)

    def lossless(v):
        return len(v["mesh"]["pairs"]) == full and all(p["lost"] == 0 for p in v["mesh"]["pairs"])
    wait(lambda: lossless(view(PORTS[0])), "all 12 pairs through the first controller", timeout=40)
    v = agree("all agents up", lossless)
    print(f"all up: {len(v['mesh']['pairs'])} pairs, {len(targets(v['pinglists']['a']))} targets "
          f"in a's pinglist, identical from both replicas")

    agents["d"].send_signal(signal.SIGKILL)  # its peers' probes to it go unanswered
    agents["d"].wait()

    def d_blamed(v):
        s = v["suspects"]
        return any(h["host"] == "d" for h in s["hosts"]) or any(lk["dst"] == "d" for lk in s["links"])
    wait(lambda: d_blamed(view(PORTS[0])), "the first controller blames d", timeout=20)
    v = agree("d killed, blamed", d_blamed)
    print(f"d killed: suspects {json.dumps(v['suspects']['hosts'])} links "
          f"{[(lk['src'], lk['dst']) for lk in v['suspects']['links']]}, identical from both replicas")

    def d_down(v):
        return ("d", "down") in {(a[0], a[1]) for a in v["agents"]} and \
            "d" not in targets(v["pinglists"]["a"])
    wait(lambda: d_down(view(PORTS[0])), "the first controller marks d down", timeout=20)
    v = agree("d down", d_down)
    print(f"d down: suspects.down {v['suspects']['down']}, a's pinglist "
          f"{targets(v['pinglists']['a'])}, identical from both replicas")
finally:
    stop(procs)
finish(failed, "ok   two controllers over one Redis Cluster answer alike")
