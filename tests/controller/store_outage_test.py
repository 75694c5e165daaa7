#!/usr/bin/env python3
"""Issue 25: reads answer from memory while the store is away. A real redis-server (append-only file
in a temporary folder, so a restart keeps its data), a `weft controller` on it and three real agents
on loopback. Redis is stopped mid-run for longer than agent_down_after, then started again.
While it is away: /api/v1/agents, /suspects, /mesh and a pair's history answer 200 within 2 s from the
controller's memory with the header X-Weft-Store: unavailable (history: the pair's latest window, with
"store_unavailable": true); every agent stays up (liveness comes from the agents' own contact).
After it is back: no header, history from the store again, and the windows the agents held during the
outage (their reports were answered 503) are in it: no gap. Skips (77) without redis-server.
Loopback only. Usage: store_outage_test.py WEFT"""
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from mesh_harness import controller_config, finish, start_agent, stop, wait  # noqa: E402  (tests/pylib)
import redis_servers  # noqa: E402  (tests/pylib)

WEFT = sys.argv[1]
redis_servers.skip_without_redis()
REDIS_PORT, PORT = 18462, 18463
TOKEN = "store-outage-token"
AGENTS = {"a": "127.0.0.101", "b": "127.0.0.102", "c": "127.0.0.103"}
UDP, TCP = 18155, 18156
READS = ["/api/v1/agents", "/api/v1/suspects?protocol=udp", "/api/v1/mesh?protocol=udp",
         "/api/v1/pairs/a/b/history?protocol=udp"]


def fetch(path):
    """(status, headers, decoded JSON, seconds taken) of GET path."""
    t = time.monotonic()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{PORT}{path}", timeout=10) as r:
            return r.status, dict(r.headers), json.loads(r.read()), time.monotonic() - t
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), {}, time.monotonic() - t


tmp = tempfile.mkdtemp(prefix="wms-store-outage-")
procs = []
failed = []
try:
    redis = redis_servers.start_redis(tmp, REDIS_PORT)
    procs.append(redis)
    with open(f"{tmp}/c.yaml", "w") as f:
        f.write(controller_config(PORT, TOKEN, f"redis://127.0.0.1:{REDIS_PORT}", agent_down_after="3s"))
    procs.append(subprocess.Popen([WEFT, "--log-level", "warn", "controller", "-c", f"{tmp}/c.yaml"],
                                  stderr=open(f"{tmp}/controller.log", "w")))
    wait(lambda: fetch("/healthz")[0] == 200, "controller up")
    for n, a in AGENTS.items():
        procs.append(start_agent(WEFT, tmp, f"http://127.0.0.1:{PORT}", TOKEN, n, a, UDP, TCP))
    wait(lambda: len(fetch("/api/v1/mesh?protocol=udp")[2].get("pairs", [])) == 6, "6 pairs in the mesh")
    wait(lambda: len(fetch("/api/v1/pairs/a/b/history?protocol=udp")[2]["windows"]) >= 2, "history of a->b")

    # --- Redis away, longer than agent_down_after ---
    outage_start = time.time()
    redis.terminate()
    redis.wait(timeout=30)
    wait(lambda: fetch("/healthz")[0] == 503, "healthz says the store is away")
    time.sleep(4)
    for path in READS:
        st, hdr, body, secs = fetch(path)
        note = f"{path} with the store away: {st} in {secs:.2f} s, X-Weft-Store: {hdr.get('X-Weft-Store')}"
        print(note)
        if st != 200 or secs > 2 or hdr.get("X-Weft-Store") != "unavailable":
            failed.append(note)
    _, _, agents, _ = fetch("/api/v1/agents")
    down = [a["name"] for a in agents.get("agents", []) if a["state"] != "up"]
    if len(agents.get("agents", [])) != 3 or down:
        failed.append(f"agents with the store away: {len(agents.get('agents', []))} listed, down: {down}")
    _, _, mesh, _ = fetch("/api/v1/mesh?protocol=udp")
    if len(mesh.get("pairs", [])) != 6:
        failed.append(f"mesh with the store away: {len(mesh.get('pairs', []))} pairs, expected 6")
    _, _, hist, _ = fetch("/api/v1/pairs/a/b/history?protocol=udp")
    if not hist.get("store_unavailable") or len(hist.get("windows", [])) != 1:
        failed.append(f"history with the store away: {json.dumps(hist)[:300]}")
    outage_end = time.time()

    # --- Redis back ---
    procs.append(redis_servers.start_redis(tmp, REDIS_PORT))
    wait(lambda: fetch("/healthz")[0] == 200, "healthz ok once the store is back", timeout=30)

    def no_gap():
        st, hdr, h, _ = fetch(f"/api/v1/pairs/a/b/history?protocol=udp&since={outage_start - 3:.3f}")
        if st != 200 or "X-Weft-Store" in hdr or h.get("store_unavailable"):
            return None
        ends = sorted(w["window_end"] for w in h["windows"])
        inside = [e for e in ends if outage_start <= e <= outage_end]
        return (ends, inside) if len(inside) >= (outage_end - outage_start) * 0.8 - 1 else None
    got = wait(no_gap, "the windows of the outage stored once Redis is back", timeout=60)
    print(f"store back: {len(got[1])} windows of a->b inside the {outage_end - outage_start:.1f} s outage stored")
    for path in READS:
        st, hdr, _, _ = fetch(path)
        if st != 200 or "X-Weft-Store" in hdr:
            failed.append(f"{path} after the store came back: {st}, X-Weft-Store {hdr.get('X-Weft-Store')}")
finally:
    stop(procs)
finish(failed, "ok   reads from memory while Redis is away, agents up, no gap once it is back")
