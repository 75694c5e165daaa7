#!/usr/bin/env python3
"""Issue 14, defect 2: rotating the controller's token for a few seconds lost two windows on every
pair, because an agent dropped a batch answered with HTTP 401. The outbox must keep it and deliver it
once the token is accepted again. Two agents on loopback, the controller's token swapped for 4 s by
rewriting its config (it reloads on change); afterwards every pair's history has no hole.
Loopback only. Usage: token_rotation_test.py WEFT"""
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

WEFT = sys.argv[1]
PORT = 18097
TOKEN, OTHER = "rotation-token-1", "rotation-token-2"
A, B = "127.0.0.41", "127.0.0.42"
UDP, TCP = 18121, 18122


def get(path):
    with urllib.request.urlopen(f"http://127.0.0.1:{PORT}{path}", timeout=5) as r:
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


def write_config(tmp, token):
    with open(f"{tmp}/weft.yaml.new", "w") as f:
        f.write(f"listen: 127.0.0.1:{PORT}\ntokens: [{token}]\nstore: sqlite:{tmp}/h.db\nwindow: 1s\n"
                "report_interval: 300ms\npinglist_sync: 1s\nagent_down_after: 60s\n"
                "protocols:\n  udp: {interval: 50ms, timeout: 300ms}\n"
                "groups:\n  - {name: all, protocols: [udp], members: ['*']}\n")
    os.replace(f"{tmp}/weft.yaml.new", f"{tmp}/weft.yaml")


def history(src, dst):
    return get(f"/api/v1/pairs/{src}/{dst}/history?protocol=udp")["windows"]


tmp = tempfile.mkdtemp(prefix="wms-rot-")
write_config(tmp, TOKEN)
procs = [subprocess.Popen([WEFT, "--log-level", "warn", "controller", "-c", f"{tmp}/weft.yaml"],
                          stderr=open(f"{tmp}/controller.log", "w"))]
failed = []
try:
    wait(lambda: get("/healthz")["status"] == "ok", "controller up")
    for name, addr in (("a", A), ("b", B)):
        procs.append(subprocess.Popen([WEFT, "--log-level", "info", "agent", "--controller", f"http://127.0.0.1:{PORT}",
                                       "--token", TOKEN, "--name", name, "--address", addr, "--protocols", "udp",
                                       "--udp-port", str(UDP), "--tcp-port", str(TCP)],
                                      stdout=subprocess.DEVNULL, stderr=open(f"{tmp}/agent-{name}.log", "w")))
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
    for p in procs[::-1]:
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
print("ok   token rotation lost nothing")
