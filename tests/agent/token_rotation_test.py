#!/usr/bin/env python3
"""Issue 14, defect 2: rotating the controller's token for a few seconds lost two windows on every
pair, because an agent dropped a batch answered with HTTP 401. The outbox must keep it and deliver it
once the token is accepted again. Two agents on loopback, the controller's token swapped for 4 s by
rewriting its config (it reloads on change); afterwards every pair's history has no hole.
Loopback only. Usage: token_rotation_test.py WEFT"""
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from mesh_harness import controller_config, finish, get, start_agent, stop, wait  # noqa: E402  (tests/pylib)

WEFT = sys.argv[1]
PORT = 18097
TOKEN, OTHER = "rotation-token-1", "rotation-token-2"
A, B = "127.0.0.41", "127.0.0.42"
UDP, TCP = 18121, 18122


def write_config(tmp, token):
    with open(f"{tmp}/weft.yaml.new", "w") as f:
        f.write(controller_config(PORT, token, f"sqlite:{tmp}/h.db"))
    os.replace(f"{tmp}/weft.yaml.new", f"{tmp}/weft.yaml")


def history(src, dst):
    return get(PORT, f"/api/v1/pairs/{src}/{dst}/history?protocol=udp")["windows"]


tmp = tempfile.mkdtemp(prefix="wms-rot-")
write_config(tmp, TOKEN)
procs = [subprocess.Popen([WEFT, "--log-level", "warn", "controller", "-c", f"{tmp}/weft.yaml"],
                          stderr=open(f"{tmp}/controller.log", "w"))]
failed = []
try:
    wait(lambda: get(PORT, "/healthz")["status"] == "ok", "controller up")
    for name, addr in (("a", A), ("b", B)):
        procs.append(start_agent(WEFT, tmp, f"http://127.0.0.1:{PORT}", TOKEN, name, addr, UDP, TCP))
    wait(lambda: len(history("a", "b")) >= 2 and len(history("b", "a")) >= 2, "windows flowing both ways")

    write_config(tmp, OTHER)  # the agents' token is now refused
    wait(lambda: any("HTTP 401" in open(f"{tmp}/agent-{n}.log").read() for n in "ab"), "agents see 401", 10)
    refused_at = time.time()
    time.sleep(4)
    write_config(tmp, TOKEN)  # and accepted again
    back_at = time.time()
    # Everything measured while refused arrives: windows ending after the token came back exist, and
    # there is no hole between consecutive windows of either pair.
    for src, dst in (("a", "b"), ("b", "a")):
        ws = wait(lambda: [w for w in history(src, dst) if w["window_start"] > back_at + 1] and history(src, dst),
                  f"{src}->{dst} windows after the token came back")
        starts = sorted(w["window_start"] for w in ws)
        gaps = [round(b - a, 2) for a, b in zip(starts, starts[1:]) if b - a > 1.5]
        during = [s for s in starts if refused_at <= s <= back_at]
        print(f"{src}->{dst}: {len(starts)} windows, {len(during)} measured while refused, gaps > 1.5 s: {gaps}")
        if gaps:
            failed.append(f"{src}->{dst}: windows lost while the token was refused (gaps {gaps})")
        if len(during) < 3:
            failed.append(f"{src}->{dst}: only {len(during)} windows from the refused period arrived")
    logs = open(f"{tmp}/agent-a.log").read() + open(f"{tmp}/agent-b.log").read()
    if "dropping batch" in logs or "dropped" in logs:
        failed.append("an agent logged a dropped batch")
    if "keeping" not in logs:
        failed.append("no agent said it kept the refused windows")
finally:
    stop(procs)
finish(failed, "ok   token rotation lost nothing")
