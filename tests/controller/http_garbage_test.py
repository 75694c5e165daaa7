#!/usr/bin/env python3
"""Hostile and broken requests against a real `weft controller` on loopback: every one gets a 4xx
with a JSON error, nothing is stored, and the controller keeps serving. Usage: http_garbage_test.py WEFT"""
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

WEFT = sys.argv[1]
PORT = 18090
BASE = f"http://127.0.0.1:{PORT}"
TOKEN = "garbage-test-token"


def call(method, path, body=None, ctype="application/json", token=TOKEN, headers=None):
    h = {"Content-Type": ctype}
    if token is not None:
        h["Authorization"] = f"Bearer {token}"
    h.update(headers or {})
    data = body if isinstance(body, (bytes, type(None))) else body.encode()
    req = urllib.request.Request(BASE + path, data=data, method=method, headers=h)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except (ConnectionResetError, BrokenPipeError, urllib.error.URLError) as e:
        # The server may close early on an oversized body; the status is what matters, but a
        # reset is acceptable only for the huge-body case (checked by the caller).
        return -1, str(e).encode()


def expect(status_range, got, what):
    status, body = got
    if status not in status_range:
        raise SystemExit(f"FAIL {what}: status {status}, body {body[:200]!r}")
    if 400 <= status < 500:
        try:
            j = json.loads(body)
            assert isinstance(j.get("error"), str) and j["error"], j
        except Exception as e:  # noqa: BLE001
            raise SystemExit(f"FAIL {what}: 4xx without a JSON error message: {body[:200]!r} ({e})")
    print(f"ok   {what}: {status}")


def main():
    tmp = tempfile.mkdtemp(prefix="wms-garbage-")
    cfg = os.path.join(tmp, "weft.yaml")
    with open(cfg, "w") as f:
        f.write(f"listen: 127.0.0.1:{PORT}\ntokens: [{TOKEN}]\nshared_tokens: true\nstore: sqlite:{tmp}/h.db\nmax_body_bytes: 1048576\n"
                "groups:\n  - {name: all, protocols: [udp, tcp], members: ['*']}\n")
    proc = subprocess.Popen([WEFT, "--log-level", "warn", "controller", "-c", cfg])
    try:
        for _ in range(100):
            try:
                if call("GET", "/healthz")[0] == 200:
                    break
            except Exception:  # noqa: BLE001
                pass
            time.sleep(0.1)
        else:
            raise SystemExit("FAIL controller did not come up")
        now = time.time_ns()
        reg = {"name": "g1", "addresses": ["127.0.0.1"], "protocols": ["udp"], "udp_port": 18091}
        expect({200}, call("POST", "/api/v1/register", json.dumps(reg)), "register")
        # The window's target, so that it is in g1's pinglist (windows to other targets are refused).
        reg2 = {"name": "g2", "addresses": ["127.0.0.2"], "protocols": ["udp"], "udp_port": 18091}
        expect({200}, call("POST", "/api/v1/register", json.dumps(reg2)), "register g2")
        good_window = {"protocol": "udp", "target": "g2", "start_unix_ns": now - 2_000_000_000,
                       "end_unix_ns": now - 1_000_000_000, "sent": 10, "received": 10, "lost": 0}
        good = {"agent": "g1", "windows": [good_window]}

        expect({401}, call("POST", "/api/v1/report", json.dumps(good), token=None), "no token")
        expect({401}, call("POST", "/api/v1/report", json.dumps(good), token="wrong-token-x"), "wrong token")
        expect({401}, call("POST", "/api/v1/register", json.dumps(reg), token=TOKEN + "x"), "register wrong token")
        expect({401}, call("GET", "/api/v1/pinglist?agent=g1", token=None), "pinglist no token")
        for i, body in enumerate(['{"agent":', "[]", "null", '{"agent":"g1"}', '{"agent":"g1","windows":"x"}',
                                  '{"agent":"g1","windows":[1,2]}', '{"agent":123,"windows":[]}',
                                  '{"agent":"g1","windows":[{"protocol":"udp"}]}',
                                  json.dumps({"agent": "g1", "windows": [dict(good_window, sent="10")]}),
                                  json.dumps({"agent": "g1", "windows": [dict(good_window, sent=-1)]}),
                                  json.dumps({"agent": "g1", "windows": [dict(good_window, sent=1e30)]}),
                                  json.dumps({"agent": "g1", "windows": [dict(good_window, received=11)]}),
                                  json.dumps({"agent": "g1", "windows": [dict(good_window, protocol="icmp")]}),
                                  json.dumps({"agent": "g1", "windows": [dict(good_window, target="../../etc")]}),
                                  json.dumps({"agent": "g1", "windows": [dict(good_window, end_unix_ns=now * 2)]}),
                                  json.dumps({"agent": "g1", "windows": [good_window, dict(good_window, lost=99)]}),
                                  json.dumps({"agent": "g1", "health": [], "windows": []}),
                                  json.dumps({"agent": "g1", "alarms": [{"kind": 5}], "windows": []}),
                                  '{"agent":"g1","windows":[' + ",".join(['{"a":' * 50 + "1" + "}" * 50] * 2) + "]}",
                                  "\xff\xfe garbage"]):
            expect(range(400, 500), call("POST", "/api/v1/report", body), f"bad report #{i}")
        expect({415}, call("POST", "/api/v1/report", "x", ctype="text/plain"), "wrong content type")
        rnd = random.Random(7)
        for i in range(30):
            junk = bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 300)))
            expect(range(400, 500), call("POST", "/api/v1/report", b"WFT1" + junk, ctype="application/x-weft-report"),
                   f"binary junk #{i}")
        status, _ = call("POST", "/api/v1/report", b"{" * (3 << 20))
        if status not in (413, -1):
            raise SystemExit(f"FAIL huge body: status {status}")
        print(f"ok   huge body: {status}")
        expect({413}, call("POST", "/api/v1/report", b"[" + b"1," * 600000 + b"1]"), "huge body 1.2 MB")
        for i, r in enumerate([{}, {"name": 5}, {"name": "x"}, {"name": "x", "addresses": "1.2.3.4"},
                               {"name": "x", "addresses": ["1.2.3.4"], "protocols": ["smtp"]},
                               {"name": "x", "addresses": ["1.2.3.4"], "protocols": ["udp"], "udp_port": 70000},
                               {"name": "a b", "addresses": ["1.2.3.4"], "protocols": ["udp"]}]):
            expect(range(400, 500), call("POST", "/api/v1/register", json.dumps(r)), f"bad register #{i}")
        # A malformed RDMA address: 400 naming the field, and the registration is not taken.
        ep = {"device": "rxe0", "port": 1, "gid": "::ffff:10.9.0.1", "gid_index": 1, "lid": 0, "qpn": 17, "qkey": 7}
        rreg = {"name": "r1", "addresses": ["127.0.0.1"], "protocols": ["udp", "rdma"], "udp_port": 18092}
        for i, (bad, msg) in enumerate([(dict(ep, qpn=0), "rdma[0]: qpn: 0 is out of range [2, 16777215]"),
                                        (dict(ep, gid="fe80::zz"), "rdma[0]: gid: required, an IPv6 address text"),
                                        ("rxe0", "rdma[0]: expected an object")]):
            got = call("POST", "/api/v1/register", json.dumps(dict(rreg, rdma=[bad])))
            expect({400}, got, f"bad rdma register #{i}")
            if not json.loads(got[1])["error"].startswith(msg):
                raise SystemExit(f"FAIL bad rdma register #{i}: {got[1]!r} does not say {msg!r}")
        expect({404}, call("GET", "/api/v1/pinglists/r1"), "agent with a bad rdma address not registered")
        expect({200}, call("POST", "/api/v1/register", json.dumps(dict(rreg, rdma=[ep]))), "register with rdma")
        st, b = call("GET", "/api/v1/agents")
        if [a["rdma"] for a in json.loads(b)["agents"] if a["name"] == "r1"] != [[dict(ep, link_layer="ethernet")]]:
            raise SystemExit(f"FAIL agents does not show r1's rdma address: {b[:400]!r}")
        print("ok   agents shows the rdma address")
        expect({409}, call("POST", "/api/v1/report", json.dumps(dict(good, agent="nobody"))), "unregistered agent")
        expect({400}, call("GET", "/api/v1/mesh"), "mesh without protocol")
        expect({400}, call("GET", "/api/v1/mesh?protocol=smtp"), "mesh bad protocol")
        expect({404}, call("GET", "/api/v1/mesh?protocol=udp&group=nope"), "mesh unknown group")
        expect({400}, call("GET", "/api/v1/pairs/g1/g2/history?protocol=udp&since=yesterday"), "history bad since")
        expect({400}, call("GET", "/api/v1/pairs/g1/g2/history?protocol=udp&limit=0"), "history bad limit")
        expect({404}, call("GET", "/api/v1/nothing"), "unknown path")
        expect({400}, call("GET", "/api/v1/suspects"), "suspects without protocol")
        for bad in ("2", "0", "-0.1", "abc", "0.5x", "nan"):
            expect({400}, call("GET", f"/api/v1/suspects?protocol=udp&loss={bad}"), f"suspects loss={bad}")
        st, b = call("GET", "/api/v1/suspects?protocol=udp&loss=0.2")
        expect({200}, (st, b), "suspects")
        v = json.loads(b)
        if v["loss_threshold"] != 0.2 or not {"hosts", "links", "down", "measured_pairs", "bad_pairs"} <= set(v):
            raise SystemExit(f"FAIL suspects answer: {b[:300]!r}")
        expect({400}, call("GET", "/api/v1/pinglist?agent=%00"), "pinglist bad name")
        for bad in ("12abc", "-1", "+1", "", "1.0", "99999999999999999999"):
            expect({400}, call("GET", f"/api/v1/pinglist?agent=g1&version={bad}"), f"pinglist version={bad!r}")
        for bad in ("10x", "+5", "", "-1"):
            expect({400}, call("GET", f"/api/v1/pairs/g1/g2/history?protocol=udp&limit={bad}"), f"history limit={bad!r}")
        expect({200}, call("GET", "/api/v1/pinglist?agent=g1&version=0"), "pinglist version=0")
        # Broken HTTP on a raw socket.
        for raw in [b"GARBAGE\r\n\r\n", b"POST /api/v1/report HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n",
                    b"\x00" * 5000, b"GET /" + b"a" * 100000 + b" HTTP/1.1\r\n\r\n"]:
            with socket.create_connection(("127.0.0.1", PORT), timeout=5) as s:
                try:
                    s.sendall(raw)
                    s.shutdown(socket.SHUT_WR)
                    s.recv(4096)
                except OSError:
                    pass
        print("ok   raw garbage sent")

        # Still healthy, nothing stored from all that, and a good report still works.
        status, body = call("GET", "/healthz")
        assert status == 200, (status, body)
        assert json.loads(body)["pairs"] == 0, body
        status, body = call("GET", "/api/v1/mesh?protocol=udp")
        assert status == 200 and json.loads(body)["pairs"] == [], body
        expect({200}, call("POST", "/api/v1/report", json.dumps(good)), "good report after the garbage")
        status, body = call("GET", "/api/v1/mesh?protocol=udp")
        pairs = json.loads(body)["pairs"]
        assert len(pairs) == 1 and pairs[0]["sent"] == 10, pairs
        # The 0.1 name of the total RTT is still there for scripts (deprecated), with the same values.
        assert pairs[0]["rtt_us"] == pairs[0]["rtt_incl_responder_delay_us"], pairs[0]
        assert proc.poll() is None, "controller died"
        print("PASS")
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        subprocess.run(["rm", "-rf", tmp])
    if proc.returncode not in (0, -15):
        raise SystemExit(f"FAIL controller exited with {proc.returncode}")


if __name__ == "__main__":
    main()
