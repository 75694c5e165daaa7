#!/usr/bin/env python3
"""Agent supervision: a responder that cannot start (its UDP port is taken) is retried and reported to
the controller as an alarm; once the port is free it runs and the peer's probes get answers.
Also checks the agent's health report (CPU, RSS, probes/s). Loopback only. Usage: supervision_test.py WEFT"""
import os
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from mesh_harness import controller_config, get, start_agent, stop, wait  # noqa: E402  (tests/pylib)

WEFT = sys.argv[1]
PORT = 18096
TOKEN = "supervision-token"
A, B = "127.0.0.31", "127.0.0.32"
UDP, TCP = 18111, 18112


tmp = tempfile.mkdtemp(prefix="wms-sup-")
with open(f"{tmp}/weft.yaml", "w") as f:
    f.write(controller_config(PORT, TOKEN, f"sqlite:{tmp}/h.db", interval="20ms", agent_down_after=None))
blocker = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
blocker.bind((B, UDP))  # agent b's responder port, taken
procs = [subprocess.Popen([WEFT, "--log-level", "warn", "controller", "-c", f"{tmp}/weft.yaml"])]
try:
    wait(lambda: get(PORT, "/healthz")["status"] == "ok", "controller up", 20)
    for name, addr in (("a", A), ("b", B)):
        procs.append(start_agent(WEFT, tmp, f"http://127.0.0.1:{PORT}", TOKEN, name, addr, UDP, TCP, "warn"))

    def b_alarm():
        b = [x for x in get(PORT, "/api/v1/agents")["agents"] if x["name"] == "b"]
        return b and any(al["kind"] == "responder_failed" for al in b[0]["alarms"]) and b[0]
    b = wait(b_alarm, "responder_failed alarm for b", 20)
    print("ok   alarm:", [al["message"] for al in b["alarms"] if al["kind"] == "responder_failed"][0])

    def a_to_b():
        return [p for p in get(PORT, "/api/v1/mesh?protocol=udp")["pairs"] if (p["src"], p["dst"]) == ("a", "b")]
    wait(lambda: a_to_b() and a_to_b()[0]["sent"] > 0, "a probes b", 20)
    assert a_to_b()[0]["received"] == 0, "b answered without a responder?"
    print("ok   a's probes of b go unanswered while b's responder is down")

    blocker.close()  # the port is free: b's supervisor starts the responder on its next try
    wait(lambda: a_to_b()[0]["received"] > 0 and a_to_b()[0]["lost"] == 0, "b answers once its responder runs", 20)
    print("ok   responder restarted by the agent; a -> b lossless")

    agents = {x["name"]: x for x in get(PORT, "/api/v1/agents")["agents"]}
    # Every supervised part's restarts are counted alike (agent/supervisor.hpp): b's responder
    # failed at least once, a's parts never did.
    assert agents["b"]["health"]["prober_restarts"] >= 1, agents["b"]["health"]
    assert agents["a"]["health"]["prober_restarts"] == 0, agents["a"]["health"]
    print("ok   restarts counted:", agents["b"]["health"]["prober_restarts"])
    h = agents["a"]["health"]
    assert h["rss_kb"] > 1000 and h["probes_per_s"] > 10 and h["cpu_percent"] >= 0, h
    assert h["dropped_windows"] == 0, h
    print("ok   health:", h)
    print("PASS")
finally:
    stop(procs)
    subprocess.run(["rm", "-rf", tmp])
