#!/usr/bin/env python3
"""Agent supervision: a responder that cannot start (its UDP port is taken) is retried and reported to
the controller as an alarm; once the port is free it runs and the peer's probes get answers.
Also checks the agent's health report (CPU, RSS, probes/s). Loopback only. Usage: supervision_test.py WEFT"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

WEFT = sys.argv[1]
PORT = 18096
TOKEN = "supervision-token"
A, B = "127.0.0.31", "127.0.0.32"
UDP, TCP = 18111, 18112


def get(path):
    with urllib.request.urlopen(f"http://127.0.0.1:{PORT}{path}", timeout=5) as r:
        return json.loads(r.read())


def wait(pred, what, timeout=20):
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


tmp = tempfile.mkdtemp(prefix="wms-sup-")
with open(f"{tmp}/weft.yaml", "w") as f:
    f.write(f"listen: 127.0.0.1:{PORT}\ntokens: [{TOKEN}]\nstore: sqlite:{tmp}/h.db\nwindow: 1s\nreport_interval: 300ms\n"
            "pinglist_sync: 1s\nprotocols:\n  udp: {interval: 20ms, timeout: 300ms}\n"
            "groups:\n  - {name: all, protocols: [udp], members: ['*']}\n")
blocker = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
blocker.bind((B, UDP))  # agent b's responder port, taken
procs = [subprocess.Popen([WEFT, "--log-level", "warn", "controller", "-c", f"{tmp}/weft.yaml"])]
try:
    wait(lambda: get("/healthz")["status"] == "ok", "controller up")
    for name, addr in (("a", A), ("b", B)):
        procs.append(subprocess.Popen([WEFT, "--log-level", "warn", "agent", "--controller", f"http://127.0.0.1:{PORT}",
                                       "--token", TOKEN, "--name", name, "--address", addr, "--protocols", "udp",
                                       "--udp-port", str(UDP), "--tcp-port", str(TCP)],
                                      stdout=subprocess.DEVNULL, stderr=open(f"{tmp}/agent-{name}.log", "w")))

    def b_alarm():
        b = [x for x in get("/api/v1/agents")["agents"] if x["name"] == "b"]
        return b and any(al["kind"] == "responder_failed" for al in b[0]["alarms"]) and b[0]
    b = wait(b_alarm, "responder_failed alarm for b")
    print("ok   alarm:", [al["message"] for al in b["alarms"] if al["kind"] == "responder_failed"][0])

    def a_to_b():
        return [p for p in get("/api/v1/mesh?protocol=udp")["pairs"] if (p["src"], p["dst"]) == ("a", "b")]
    wait(lambda: a_to_b() and a_to_b()[0]["sent"] > 0, "a probes b")
    assert a_to_b()[0]["received"] == 0, "b answered without a responder?"
    print("ok   a's probes of b go unanswered while b's responder is down")

    blocker.close()  # the port is free: b's supervisor starts the responder on its next try
    wait(lambda: a_to_b()[0]["received"] > 0 and a_to_b()[0]["lost"] == 0, "b answers once its responder runs")
    print("ok   responder restarted by the agent; a -> b lossless")

    agents = {x["name"]: x for x in get("/api/v1/agents")["agents"]}
    h = agents["a"]["health"]
    assert h["rss_kb"] > 1000 and h["probes_per_s"] > 10 and h["cpu_percent"] >= 0, h
    assert h["dropped_windows"] == 0, h
    print("ok   health:", h)
    print("PASS")
finally:
    for p in reversed(procs):
        p.terminate()
    for p in procs:
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
    subprocess.run(["rm", "-rf", tmp])
