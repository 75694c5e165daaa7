#!/usr/bin/env python3
"""A hostile tenant against a real `weft controller` (issue 25): one attack per test, each run against
a controller process on a Redis store (WEFT_TEST_REDIS, started by with_redis.sh on loopback).

Usage: hostile_tenant_test.py WEFT ATTACK
ATTACK: impersonation | future_windows | fabricated_targets | absurd_health | forced_delete |
        huge_body | read_credential

The attacker holds a real credential: its own agent token (a per-agent token bound to its name). Every
attack is one the controller took before per-agent identity (docs/controller.md "Credentials").
With WEFT_HOSTILE_LEGACY=1 the controller is configured the old way (one shared token for every role)
so the same script can be run against an older build to see each attack succeed there."""
import base64
import hashlib
import hmac
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

WEFT = sys.argv[1]
ATTACK = sys.argv[2]
LEGACY = os.environ.get("WEFT_HOSTILE_LEGACY") == "1"
PORT = int(os.environ.get("WEFT_HOSTILE_PORT", "18420"))
BASE = f"http://127.0.0.1:{PORT}"
SECRET = "hostile-test-secret-0123456789abcdef"
SHARED = "hostile-shared-token"
ADMIN = "hostile-admin-token"
READ = "hostile-read-token"
WINDOW_NS = 2_000_000_000


def agent_token(name):
    if LEGACY:
        return SHARED
    mac = hmac.new(SECRET.encode(), b"weft agent token v1\n" + name.encode(), hashlib.sha256).hexdigest()
    return f"{name}.{mac}"


def admin_token():
    return SHARED if LEGACY else ADMIN


def read_token():
    return SHARED if LEGACY else READ


def call(method, path, body=None, token=None, ctype="application/json", headers=None, timeout=30):
    h = {"Content-Type": ctype}
    if token is not None:
        h["Authorization"] = f"Bearer {token}"
    h.update(headers or {})
    data = body if isinstance(body, (bytes, type(None))) else body.encode()
    req = urllib.request.Request(BASE + path, data=data, method=method, headers=h)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read(), dict(e.headers)
    except (ConnectionResetError, BrokenPipeError, urllib.error.URLError) as e:
        return -1, str(e).encode(), {}


def fail(msg):
    raise SystemExit(f"FAIL {ATTACK}: {msg}")


def ok(msg):
    print(f"ok   {msg}", flush=True)


def window(target, start, **kw):
    w = {"protocol": "udp", "target": target, "target_address": "127.0.0.1:7777", "start_unix_ns": start,
         "end_unix_ns": start + WINDOW_NS, "sent": 20, "received": 20, "lost": 0}
    w.update(kw)
    return w


def report(agent, windows, health=None, seq=1):
    r = {"agent": agent, "seq": seq, "windows": windows}
    if health is not None:
        r["health"] = health
    return json.dumps(r)


def register(name, address):
    reg = {"name": name, "addresses": [address], "protocols": ["udp"], "udp_port": 7777, "version": "test"}
    st, body, _ = call("POST", "/api/v1/register", json.dumps(reg), token=agent_token(name))
    if st != 200:
        fail(f"register {name}: {st} {body[:200]!r}")


def rss_kb(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def mesh_pairs():
    st, body, _ = call("GET", "/api/v1/mesh?protocol=udp", token=read_token())
    if st != 200:
        fail(f"mesh: {st} {body[:200]!r}")
    return {(p["src"], p["dst"]): p for p in json.loads(body)["pairs"]}


def agent_info(name):
    st, body, _ = call("GET", "/api/v1/agents", token=read_token())
    if st != 200:
        fail(f"agents: {st}")
    for a in json.loads(body)["agents"]:
        if a["name"] == name:
            return a
    return None


def last_boundary():
    now = time.time_ns()
    return now - now % WINDOW_NS


# --- the attacks ------------------------------------------------------------------------------------

def impersonation():
    # h2 is a live, honest host; the attacker a1 reports h2's windows to h3 as all lost.
    start = last_boundary() - WINDOW_NS
    st, body, _ = call("POST", "/api/v1/report", report("h2", [window("h3", start, received=0, lost=20)],
                                                       {"cpu_percent": 99999.0 if LEGACY else 9.0}),
                       token=agent_token("a1"))
    if st != 403:
        fail(f"a report as h2 with a1's token was answered {st} {body[:200]!r} (expected 403)")
    ok("a report as another agent: 403")
    st, _, _ = call("POST", "/api/v1/register",
                    json.dumps({"name": "h2", "addresses": ["127.0.0.99"], "protocols": ["udp"], "udp_port": 7777}),
                    token=agent_token("a1"))
    if st != 403:
        fail(f"registering as h2 with a1's token: {st} (expected 403)")
    ok("registering as another agent: 403")
    # The honest host's own window for that start is then taken, not dropped as a duplicate.
    st, body, _ = call("POST", "/api/v1/report", report("h2", [window("h3", start)]), token=agent_token("h2"))
    if st != 200 or json.loads(body)["accepted"] != 1:
        fail(f"h2's own window: {st} {body[:200]!r} (expected accepted 1)")
    p = mesh_pairs().get(("h2", "h3"))
    if not p or p["loss_ratio"] != 0.0:
        fail(f"h2->h3 in the mesh: {p}")
    ok("the honest host's window is the one kept (loss 0)")


def future_windows():
    # Windows starting at the next window boundary: they have not happened yet.
    nxt = last_boundary() + WINDOW_NS
    st, body, _ = call("POST", "/api/v1/report", report("a1", [window("h2", nxt, received=0, lost=20)]),
                       token=agent_token("a1"))
    if st != 425:
        fail(f"a window starting at the next boundary: {st} {body[:200]!r} (expected 425)")
    ok("a window that has not ended: 425")
    if ("a1", "h2") in mesh_pairs():
        fail("the future window reached the mesh")
    # One that ended a moment ago is taken (the skew allowance is 2 s, a window ending 1 s ahead too).
    st, body, _ = call("POST", "/api/v1/report", report("a1", [window("h2", time.time_ns() - WINDOW_NS + 1_000_000_000)]),
                       token=agent_token("a1"))
    if st != 200 or json.loads(body)["accepted"] != 1:
        fail(f"a window ending 1 s ahead (within the allowance): {st} {body[:200]!r}")
    ok("a window ending within the 2 s allowance is taken")


def metrics_lines():
    """/metrics?pairs=1 without the request timings (series per route and status, bounded by the
    routes: a refused request may add its status's)."""
    st, body, _ = call("GET", "/metrics?pairs=1", token=read_token())
    if st != 200:
        fail(f"/metrics: {st}")
    if b"made-up" in body:
        fail("a made-up target is in /metrics")
    return sum(1 for line in body.split(b"\n") if b"weft_controller_http_" not in line)


def fabricated_targets():
    # a1's real pair first, so that what follows can add no honest series.
    st, body, _ = call("POST", "/api/v1/report", report("a1", [window("h2", last_boundary() - 2 * WINDOW_NS)]),
                       token=agent_token("a1"))
    if st != 200:
        fail(f"a1's own window: {st} {body[:200]!r}")
    time.sleep(1.2)  # /metrics may be cached for up to 1 s
    lines_before = metrics_lines()
    st, body, _ = call("GET", "/healthz")
    pairs_before = json.loads(body)["pairs"]
    start = last_boundary() - WINDOW_NS
    fake = [window(f"made-up-{i:05d}", start, received=0, lost=20) for i in range(10000)]
    st, body, _ = call("POST", "/api/v1/report", report("a1", fake), token=agent_token("a1"))
    if st == 200 and json.loads(body).get("accepted", 0) > 0:
        fail(f"10,000 windows to made-up targets: accepted {json.loads(body)['accepted']}")
    ok(f"10,000 windows to made-up targets: {st}, none kept")
    # Fewer than the size cap: each is refused by target, the report's real window taken.
    few = [window(f"made-up-{i:05d}", start) for i in range(40)] + [window("h2", start)]
    st, body, _ = call("POST", "/api/v1/report", report("a1", few), token=agent_token("a1"))
    if st != 200:
        fail(f"40 made-up + 1 real window: {st} {body[:200]!r}")
    j = json.loads(body)
    if j["accepted"] != 1 or j.get("refused") != 40:
        fail(f"40 made-up + 1 real window: {j} (expected accepted 1, refused 40)")
    ok("40 made-up targets refused, the real one taken")
    time.sleep(1.2)
    st, body, _ = call("GET", "/healthz")
    pairs_after = json.loads(body)["pairs"]
    lines_after = metrics_lines()
    if pairs_after > pairs_before:
        fail(f"pairs held grew from {pairs_before} to {pairs_after}")
    # One more pair's series would be ~70 lines, 40 made-up pairs thousands; the margin is for a cached
    # /metrics (refreshed at most once a second) that did not yet hold a1's real pair at the baseline.
    if lines_after > lines_before + 30:
        fail(f"/metrics grew from {lines_before} to {lines_after} lines")
    ok(f"pairs {pairs_before} -> {pairs_after}, /metrics {lines_before} -> {lines_after} lines")


def absurd_health():
    start = last_boundary() - WINDOW_NS
    for field, value in [("rss_kb", 2**64 - 1), ("spooled_windows", 2**64 - 1), ("prober_restarts", 2**64 - 1),
                         ("dropped_windows", 2**64 - 1), ("cpu_percent", 99999.0)]:
        health = {"cpu_percent": 1.0, "rss_kb": 10000, "probes_per_s": 10.0, "dropped_windows": 0,
                  "spooled_windows": 0, "prober_restarts": 0}
        health[field] = value
        st, body, _ = call("POST", "/api/v1/report", report("a1", [window("h2", start)], health),
                           token=agent_token("a1"))
        if st != 400:
            fail(f"health.{field} = {value}: {st} {body[:200]!r} (expected 400)")
        ok(f"health.{field} = {value}: 400")
    h = agent_info("a1")["health"]
    if h["rss_kb"] > 2**32 or h["spooled_windows"] > 2**40 or h["cpu_percent"] > 6400:
        fail(f"a1's health after the attempts: {h}")
    ok(f"a1's health unchanged: {h}")


def forced_delete():
    st, body, _ = call("DELETE", "/api/v1/agents/h2?force=1", token=agent_token("a1"))
    if st not in (401, 403):
        fail(f"DELETE h2?force=1 with an agent token: {st} {body[:200]!r} (expected 403)")
    if agent_info("h2") is None:
        fail("h2 was removed")
    ok(f"forced delete with an agent token: {st}, h2 still listed")
    st, body, _ = call("DELETE", "/api/v1/agents/h3?force=1", token=admin_token())
    if st != 200 or agent_info("h3") is not None:
        fail(f"DELETE h3?force=1 with the admin token: {st} {body[:200]!r}")
    ok("forced delete with the admin token: 200, h3 gone")


def huge_body(pid):
    base = rss_kb(pid, "VmHWM")
    # 64 MiB of well-formed JSON windows (about 110,000), authenticated: what took 13.7 s and 1.14 GB.
    start = last_boundary() - WINDOW_NS
    one = json.dumps(window("h2", start)) + ","
    n = (64 << 20) // len(one)
    body = ('{"agent":"a1","seq":1,"windows":[' + one * n)[:-1] + "]}"
    t0 = time.monotonic()
    st, reply, _ = call("POST", "/api/v1/report", body, token=agent_token("a1"), timeout=60)
    secs = time.monotonic() - t0
    grew = rss_kb(pid, "VmHWM") - base
    print(f"     64 MiB: {st} in {secs:.2f} s, peak RSS +{grew} kB", flush=True)
    if st not in (413, -1) or secs > 5:
        fail(f"64 MiB report: {st} {reply[:200]!r} in {secs:.1f} s (expected 413 within 5 s)")
    if grew > 16 * 1024:
        fail(f"64 MiB report raised peak RSS by {grew} kB (bound: 16 MiB)")
    ok("64 MiB report: 413 before the body is read")
    # Just under max_report_bytes (16 MiB): read and decoded, memory within 3x the body.
    n = (15 << 20) // len(one)
    body = ('{"agent":"a1","seq":2,"windows":[' + one * n)[:-1] + "]}"
    base = rss_kb(pid, "VmHWM")
    t0 = time.monotonic()
    st, reply, _ = call("POST", "/api/v1/report", body, token=agent_token("a1"), timeout=60)
    secs = time.monotonic() - t0
    grew = rss_kb(pid, "VmHWM") - base
    print(f"     15 MiB ({n} windows): {st} in {secs:.2f} s, peak RSS +{grew} kB", flush=True)
    if grew > 3 * 15 * 1024:
        fail(f"a 15 MiB report raised peak RSS by {grew} kB (bound: 3 x the body, 46,080 kB)")
    if st == 200 and json.loads(reply)["accepted"] > 8 * 4:
        fail(f"a 15 MiB report of one target's windows was taken: {reply[:200]!r}")
    ok(f"15 MiB report: {st}, peak RSS +{grew} kB (<= 3 x body)")


def read_credential():
    paths = ["/api/v1/agents", "/api/v1/mesh?protocol=udp", "/metrics", "/api/v1/pinglists/h2",
             "/api/v1/groups", "/api/v1/suspects?protocol=udp", "/api/v1/pairs/h2/h3/history?protocol=udp"]
    for p in paths:
        for what, tok in [("no", None), ("a wrong", "not-the-read-token"), ("an agent's", agent_token("a1"))]:
            st, _, hdr = call("GET", p, token=tok)
            if st != 401:
                fail(f"GET {p} with {what} credential: {st} (expected 401)")
        st, _, _ = call("GET", p, token=read_token())
        if st != 200:
            fail(f"GET {p} with the read token: {st}")
    ok(f"{len(paths)} read endpoints: 401 without/with a wrong or an agent's credential, 200 with the read token")
    basic = base64.b64encode(f"anyone:{read_token()}".encode()).decode()
    st, _, _ = call("GET", "/api/v1/agents", headers={"Authorization": f"Basic {basic}"})
    if st != 200:
        fail(f"Basic auth with the read token as password: {st}")
    st, _, hdr = call("GET", "/api/v1/agents")
    if "Basic" not in hdr.get("WWW-Authenticate", ""):
        fail(f"a 401 on a read endpoint without WWW-Authenticate: Basic ({hdr})")
    st, _, _ = call("GET", "/healthz")
    if st != 200:
        fail(f"/healthz: {st} (stays open for load balancers)")
    ok("Basic auth for browsers, WWW-Authenticate on 401, /healthz open")


ATTACKS = {"impersonation": impersonation, "future_windows": future_windows,
           "fabricated_targets": fabricated_targets, "absurd_health": absurd_health,
           "forced_delete": forced_delete, "huge_body": huge_body, "read_credential": read_credential}


def main():
    if ATTACK not in ATTACKS:
        raise SystemExit(f"unknown attack {ATTACK} ({', '.join(ATTACKS)})")
    store = os.environ.get("WEFT_TEST_REDIS")
    if not store:
        raise SystemExit("WEFT_TEST_REDIS not set (run under with_redis.sh)")
    tmp = tempfile.mkdtemp(prefix="wms-hostile-")
    cfg = os.path.join(tmp, "weft.yaml")
    if LEGACY:
        creds = f"tokens: [{SHARED}]\n"
    else:
        with open(os.path.join(tmp, "agent-secret"), "w") as f:
            f.write(SECRET + "\n")
        creds = (f"agent_secret_file: {tmp}/agent-secret\nadmin_tokens: [{ADMIN}]\nread_tokens: [{READ}]\n")
    # Beyond loopback (0.0.0.0; the test itself connects over loopback only): read access needs a token.
    with open(cfg, "w") as f:
        f.write(f"listen: 0.0.0.0:{PORT}\nplain_http: true\n{creds}store: {store}\nwindow: 2s\nreport_interval: 1s\n"
                "agent_down_after: 1h\ngroups:\n  - {name: all, protocols: [udp], members: ['*']}\n")
    log = open(os.path.join(tmp, "controller.log"), "w")
    proc = subprocess.Popen([WEFT, "--log-level", "warn", "controller", "-c", cfg], stdout=log, stderr=log)
    try:
        for _ in range(100):
            if proc.poll() is not None:
                fail(f"controller exited: {open(os.path.join(tmp, 'controller.log')).read()[-500:]}")
            try:
                if call("GET", "/healthz")[0] == 200:
                    break
            except Exception:  # noqa: BLE001
                pass
            time.sleep(0.1)
        else:
            fail("controller did not come up")
        if not LEGACY:
            # The CLI derives the same token (controller/auth.hpp): what an operator hands an agent.
            out = subprocess.run([WEFT, "token", "agent", "a1", "--config", cfg], capture_output=True, text=True)
            if out.returncode != 0 or out.stdout.strip() != agent_token("a1"):
                fail(f"weft token agent a1: rc {out.returncode}, {out.stdout!r} {out.stderr!r}")
        for i, name in enumerate(["a1", "h2", "h3"]):
            register(name, f"127.0.0.{20 + i}")
        for name in ["a1", "h2", "h3"]:  # each fetches its pinglist, as agents do
            st, _, _ = call("GET", f"/api/v1/pinglist?agent={name}", token=agent_token(name))
            if st != 200:
                fail(f"pinglist of {name}: {st}")
        if ATTACK == "huge_body":
            huge_body(proc.pid)
        else:
            ATTACKS[ATTACK]()
        if proc.poll() is not None:
            fail("the controller died")
        print(f"PASS {ATTACK}")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


if __name__ == "__main__":
    main()
