#!/usr/bin/env python3
"""Issue 25: replicas agree on agents. Three `weft controller` replicas on one real redis-server (the
test starts both on loopback) and three real agents, each reporting to a different replica. Every
replica must list every agent alike: while they run, each replica holds each agent's health (RSS,
probe rate) and pinglist (version, targets); once the agents stop, /api/v1/agents (all but the
request-time age) and every weft_agent_* series in /metrics are identical on the three replicas, and
again once agent_down_after has passed and every replica marked them down with the same alarm.
Skips (77) without redis-server. Loopback only. Usage: replica_agents_test.py WEFT"""
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from mesh_harness import controller_config, finish, get, start_agent, stop, wait  # noqa: E402  (tests/pylib)
import redis_servers  # noqa: E402  (tests/pylib)

WEFT = sys.argv[1]
redis_servers.skip_without_redis()
REDIS_PORT = 18470
PORTS = [18471, 18472, 18473]
TOKEN = "replica-agents-token"
AGENTS = {"a": "127.0.0.111", "b": "127.0.0.112", "c": "127.0.0.113"}
UDP, TCP = 18157, 18158


def agents(port):
    """{name: agent} as the replica lists them, without the request-time age."""
    out = {}
    for a in get(port, "/api/v1/agents")["agents"]:
        a.pop("last_seen_age_s", None)
        out[a["name"]] = a
    return out


def agent_series(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        return sorted(line for line in r.read().decode().splitlines() if line.startswith("weft_agent_"))


def differences(what, views):
    """Lines naming what differs between the replicas' views (empty: they agree)."""
    out = []
    for i in range(1, len(views)):
        if views[i] != views[0]:
            if isinstance(views[0], dict):
                for k in sorted(set(views[0]) | set(views[i])):
                    if views[0].get(k) != views[i].get(k):
                        out.append(f"{what} {k}: replica 1 {json.dumps(views[0].get(k))[:300]} "
                                   f"vs replica {i + 1} {json.dumps(views[i].get(k))[:300]}")
            else:
                out.append(f"{what}: replica 1 {sorted(set(views[0]) - set(views[i]))[:5]} vs replica {i + 1} "
                           f"{sorted(set(views[i]) - set(views[0]))[:5]}")
    return out


tmp = tempfile.mkdtemp(prefix="wms-replica-agents-")
procs = []
failed = []
try:
    procs.append(redis_servers.start_redis(tmp, REDIS_PORT, appendonly=False))
    for i, port in enumerate(PORTS):
        with open(f"{tmp}/c{i}.yaml", "w") as f:
            f.write(controller_config(port, TOKEN, f"redis://127.0.0.1:{REDIS_PORT}", agent_down_after="4s"))
        procs.append(subprocess.Popen([WEFT, "--log-level", "warn", "controller", "-c", f"{tmp}/c{i}.yaml"],
                                      stderr=open(f"{tmp}/controller{i}.log", "w")))
    for port in PORTS:
        wait(lambda: get(port, "/healthz")["status"] == "ok", f"replica {port} up")
    agent_procs = [start_agent(WEFT, tmp, f"http://127.0.0.1:{PORTS[i]}", TOKEN, n, a, UDP, TCP)
                   for i, (n, a) in enumerate(AGENTS.items())]
    procs += agent_procs

    # Running: every replica holds every agent's own health and pinglist, not only the replica it talks to.
    def known_everywhere():
        for port in PORTS:
            v = agents(port)
            if len(v) != 3:
                return False
            for a in v.values():
                if a["state"] != "up" or a["health"]["rss_kb"] == 0 or a["pinglist_targets"] != 2 or \
                        a["pinglist_version"] == 0:
                    return False
        return True
    try:
        wait(known_everywhere, "every replica knows every agent's health and pinglist", timeout=40)
        print("ok   running: each replica holds every agent's health and pinglist")
    except SystemExit as e:
        failed.append(str(e))
        failed += differences("running: agents", [agents(p) for p in PORTS])

    # Stopped: nothing moves any more; every replica must say exactly the same.
    stop(agent_procs)
    time.sleep(2)
    failed += differences("stopped: agents", [agents(p) for p in PORTS])
    failed += differences("stopped: weft_agent_* series", [agent_series(p) for p in PORTS])
    if not failed:
        print("ok   agents stopped: /api/v1/agents and weft_agent_* identical on 3 replicas")

    # Down: each replica sweeps on its own clock, and all raise the same alarm.
    wait(lambda: all(a["state"] == "down" for p in PORTS for a in agents(p).values()), "all down everywhere",
         timeout=20)
    time.sleep(1.5)  # the agent list may be up to 1 s old (render cache)
    down = differences("down: agents", [agents(p) for p in PORTS])
    down += differences("down: weft_agent_* series", [agent_series(p) for p in PORTS])
    failed += down
    if not down:
        print("ok   agents down: identical on 3 replicas, alarms included")
finally:
    stop(procs)
finish(failed, "ok   replicas agree on agents")
