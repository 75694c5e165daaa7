#!/usr/bin/env python3
"""Issue 25: remote write pushes every window once. A real Prometheus (Debian's, remote-write
receiver on, out_of_order_time_window 1h) and a real `weft controller` on loopback; three agents'
reports are posted as agents send them: one window per pair per report, a spooled backlog of several
windows per pair in one report, late windows (older than the pair's latest), resends of windows
already taken. Prometheus is stopped for part of the run (the controller queues and retries with
back-off) and started again. Then, per pair, the windows' ends in Prometheus must be exactly the
windows the controller accepted (0 missing, 0 extra), each with its own loss ratio, and the
controller must have sent each window once (weft_remote_write_windows_total{result="sent"}).
Skips (77) when prometheus is not installed. Loopback only. Usage: remote_write_complete_test.py WEFT"""
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from mesh_harness import agent_secret, agent_token, finish, get, stop, wait  # noqa: E402  (tests/pylib)
from prometheus_server import skip_without_prometheus, start_prometheus  # noqa: E402

WEFT = sys.argv[1]
skip_without_prometheus()
PROM_PORT, PORT = 18293, 18294
TOKEN = "remote-write-complete"
AGENTS = ["a1", "a2", "a3"]
PAIRS = [(s, d) for s in AGENTS for d in AGENTS if s != d]
W = 2_000_000_000  # window length, ns
N = 30             # windows per pair


def post(path, body, token):
    req = urllib.request.Request(f"http://127.0.0.1:{PORT}{path}", data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def metric(name, labels=""):
    with urllib.request.urlopen(f"http://127.0.0.1:{PORT}/metrics", timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + labels + " "):
                return float(line.split()[-1])
    return None


tmp = tempfile.mkdtemp(prefix="wms-rw-complete-")
procs = []
failed = []
base = time.time_ns() // W * W - (N + 2) * W  # every window has ended when it is sent
sent_windows = 0  # what the controller said it accepted


def window(dst, k):
    # lost = k: each window's loss ratio (k / 100) says which window Prometheus holds at a time.
    return {"protocol": "udp", "target": dst, "target_address": "127.0.0.1:7777", "start_unix_ns": base + k * W,
            "end_unix_ns": base + (k + 1) * W, "sent": 100, "received": 100 - k, "lost": k}


def send(agent, ks, seq, expect_accepted=None):
    """One report of `agent` carrying windows ks (in that order) to each of its targets."""
    global sent_windows
    ws = [window(d, k) for k in ks for d in AGENTS if d != agent]
    st, reply = post("/api/v1/report", {"agent": agent, "seq": seq, "windows": ws}, agent_token(TOKEN, agent))
    if st != 200:
        raise SystemExit(f"FAIL: report of {agent} windows {ks}: {st} {reply!r}")
    want = len(ws) if expect_accepted is None else expect_accepted
    if reply["accepted"] != want:
        raise SystemExit(f"FAIL: report of {agent} windows {ks}: accepted {reply['accepted']}, expected {want}")
    sent_windows += reply["accepted"]


def send_all(ks, seq, expect_accepted=None):
    for a in AGENTS:
        send(a, ks, seq, expect_accepted)


try:
    prom = start_prometheus(tmp, PROM_PORT)
    procs.append(prom)
    with open(f"{tmp}/c.yaml", "w") as f:
        f.write(f"listen: 127.0.0.1:{PORT}\nagent_secret: {agent_secret(TOKEN)}\nstore: sqlite:{tmp}/h.db\n"
                "window: 2s\nagent_down_after: 1h\n"
                f"remote_write: http://127.0.0.1:{PROM_PORT}/api/v1/write\nremote_write_interval: 1s\n"
                "groups:\n  - {name: all, protocols: [udp], members: ['*']}\n")
    ctl = subprocess.Popen([WEFT, "--log-level", "info", "controller", "-c", f"{tmp}/c.yaml"],
                           stderr=open(f"{tmp}/controller.log", "w"))
    procs.append(ctl)
    wait(lambda: get(PORT, "/healthz")["status"] == "ok", "controller up")
    for i, a in enumerate(AGENTS):
        reg = {"name": a, "addresses": [f"127.0.0.{81 + i}"], "protocols": ["udp"], "udp_port": 7777, "version": "t"}
        st, _ = post("/api/v1/register", reg, agent_token(TOKEN, a))
        if st != 200:
            raise SystemExit(f"FAIL: register {a}: {st}")
        with urllib.request.urlopen(urllib.request.Request(
                f"http://127.0.0.1:{PORT}/api/v1/pinglist?agent={a}",
                headers={"Authorization": f"Bearer {agent_token(TOKEN, a)}"}), timeout=5) as r:
            r.read()

    seq = 1
    # Receiver up: in order, then a spooled backlog (5 windows per pair in one report), then a late one.
    for k in range(0, 8):
        send_all([k], seq)
        seq += 1
    send_all(list(range(8, 13)), seq)
    seq += 1
    send_all([14], seq)
    send_all([13], seq + 1)  # late: older than the pair's latest
    seq += 2
    wait(lambda: metric("weft_remote_write_queued_windows") == 0, "queue drained while Prometheus is up")

    # Receiver down: the windows wait in the queue, pushes fail and are retried.
    prom.terminate()
    prom.wait(timeout=30)
    for k in range(15, 19):
        send_all([k], seq)
        seq += 1
    send_all([20, 21, 22], seq)  # spooled
    send_all([19], seq + 1)      # late
    send_all([21], seq + 2, expect_accepted=0)  # a resend: a duplicate, not queued again
    seq += 3
    wait(lambda: (metric("weft_remote_write_failed_pushes_total") or 0) >= 2, "failed pushes while Prometheus is down")
    queued = metric("weft_remote_write_queued_windows")
    if queued != len(PAIRS) * 8:
        failed.append(f"{queued} windows queued while the receiver is down, expected {len(PAIRS) * 8}")
    time.sleep(3)  # a few more back-off rounds

    # Receiver back: the queue drains; more windows come in meanwhile.
    prom = start_prometheus(tmp, PROM_PORT)
    procs.append(prom)
    for k in range(23, N):
        send_all([k], seq)
        seq += 1
    send_all([22], seq, expect_accepted=0)  # resent after the outage: duplicate
    wait(lambda: metric("weft_remote_write_queued_windows") == 0, "queue drained after the receiver came back",
         timeout=90)
    SENT = '{result="sent"}'
    print(f"accepted {sent_windows} windows; controller sent {metric('weft_remote_write_windows_total', SENT)}, "
          f"failed pushes {metric('weft_remote_write_failed_pushes_total')}")

    # What Prometheus holds: per pair, the window ends and values.
    accepted_ks = list(range(N))
    q = urllib.parse.quote("weft_pair_loss_ratio[1h]")
    res = get(PROM_PORT, f"/api/v1/query?query={q}")["data"]["result"]
    got = {(s["metric"]["src"], s["metric"]["dst"]): s["values"] for s in res}
    missing = extra = wrong = 0
    for pair in PAIRS:
        samples = got.get(pair, [])
        by_ts = {round(float(t) * 1000): float(v) for t, v in samples}
        want = {(base + (k + 1) * W) // 1_000_000: k / 100 for k in accepted_ks}
        missing += len(set(want) - set(by_ts))
        extra += len(samples) - len(set(by_ts) & set(want))
        wrong += sum(1 for t in set(want) & set(by_ts) if abs(by_ts[t] - want[t]) > 1e-12)
        hist = get(PORT, f"/api/v1/pairs/{pair[0]}/{pair[1]}/history?protocol=udp&limit=1000")["windows"]
        if len(hist) != len(accepted_ks):
            failed.append(f"{pair}: the controller's history has {len(hist)} windows, expected {len(accepted_ks)}")
    print(f"Prometheus: {len(PAIRS)} pairs x {len(accepted_ks)} windows: {missing} missing, {extra} extra, "
          f"{wrong} with another value")
    if missing or extra or wrong:
        failed.append(f"Prometheus: {missing} missing, {extra} extra (or repeated), {wrong} wrong windows")
    if sent_windows != len(PAIRS) * len(accepted_ks):
        failed.append(f"the controller accepted {sent_windows} windows, expected {len(PAIRS) * len(accepted_ks)}")
    sent = metric("weft_remote_write_windows_total", '{result="sent"}')
    if sent != sent_windows:
        failed.append(f"remote write sent {sent} windows for {sent_windows} accepted (each must go once)")
    for r in ("dropped", "rejected"):
        n = metric("weft_remote_write_windows_total", '{result="%s"}' % r)
        if n != 0:
            failed.append(f"windows {r}: {n}")
finally:
    stop(procs)
finish(failed, "ok   every window in Prometheus once: spooled, late, and through a receiver outage")
