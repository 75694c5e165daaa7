#!/usr/bin/env python3
"""Connections against a real `weft controller` on loopback (issue 14, defect 1): with 100 kept-open
HTTP clients and 1,000 idle TCP connections, /healthz, /api/v1/mesh and a registration still answer
quickly; a slowloris client is cut off with 408; an oversized head gets 431 and an oversized body
413, and a wrong token 401, all without the body being sent. Usage: http_connections_test.py WEFT"""
import http.client
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time

WEFT = sys.argv[1]
PORT = 18097
TOKEN = "conn-test-token"
QUICK_S = 2.0  # "quickly": generous for a loaded 2-core CI machine; the old server never answered


def timed_request(method, path, body=None, headers=None):
    t0 = time.monotonic()
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=10)
    c.request(method, path, body=body, headers=headers or {})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data, time.monotonic() - t0


def raw(head, wait_s=3.0, src="127.0.0.1"):
    """Sends a request head only (no body) and returns (status line, seconds until answered)."""
    s = socket.create_connection(("127.0.0.1", PORT), timeout=wait_s, source_address=(src, 0))
    t0 = time.monotonic()
    s.sendall(head)
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            got = s.recv(65536)
            if not got:
                break
            data += got
    except socket.timeout:
        pass
    s.close()
    return data.split(b"\r\n", 1)[0].decode(errors="replace"), time.monotonic() - t0


def check(cond, what):
    if not cond:
        raise SystemExit(f"FAIL {what}")
    print(f"ok   {what}")


def main():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if hard < 1300:
        print(f"SKIP: descriptor limit {hard} < 1300")
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="wms-conn-")
    cfg = os.path.join(tmp, "weft.yaml")
    with open(cfg, "w") as f:
        f.write(f"listen: 127.0.0.1:{PORT}\ntokens: [{TOKEN}]\nshared_tokens: true\nstore: sqlite:{tmp}/h.db\nmax_body_bytes: 1048576\n"
                "http_header_timeout: 1s\nmax_header_bytes: 8192\n"
                "groups:\n  - {name: all, protocols: [udp], members: ['*']}\n")
    proc = subprocess.Popen([WEFT, "--log-level", "warn", "controller", "-c", cfg])
    kept, idle = [], []
    try:
        for _ in range(100):
            try:
                if timed_request("GET", "/healthz")[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.1)
        else:
            raise SystemExit("FAIL controller did not come up")
        auth = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}

        # 100 kept-open HTTP clients (as agents keep theirs), each having made a request.
        for i in range(100):
            c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=10)
            c.request("GET", "/healthz")
            r = c.getresponse()
            r.read()
            assert r.status == 200, r.status
            kept.append(c)
        # 1,000 idle TCP connections from other loopback addresses.
        for i in range(1000):
            s = socket.create_connection(("127.0.0.1", PORT), timeout=5, source_address=(f"127.0.2.{1 + i % 4}", 0))
            idle.append(s)
        print("ok   100 kept-open clients and 1,000 idle connections are open")

        st, body, dt = timed_request("GET", "/healthz")
        check(st == 200 and dt < QUICK_S, f"/healthz answers in {dt * 1000:.0f} ms")
        st, body, dt = timed_request("GET", "/api/v1/mesh?protocol=udp")
        check(st == 200 and "pairs" in json.loads(body) and dt < QUICK_S, f"/api/v1/mesh answers in {dt * 1000:.0f} ms")
        reg = {"name": "c1", "addresses": ["127.0.0.1"], "protocols": ["udp"], "udp_port": 18098}
        st, body, dt = timed_request("POST", "/api/v1/register", json.dumps(reg), auth)
        check(st == 200 and dt < QUICK_S, f"a registration answers in {dt * 1000:.0f} ms ({st})")
        kept[50].request("GET", "/api/v1/agents")
        r = kept[50].getresponse()
        check(r.status == 200 and "c1" in r.read().decode(), "a kept-open client is still served on its connection")

        # Slowloris: a header byte every 200 ms is cut off after http_header_timeout (1 s).
        s = socket.create_connection(("127.0.0.1", PORT), timeout=5)
        s.sendall(b"GET /healthz HTTP/1.1\r\n")
        t0 = time.monotonic()
        answer = b""
        while time.monotonic() - t0 < 6:
            try:
                s.sendall(b"X")
            except OSError:
                break
            s.settimeout(0.2)
            try:
                got = s.recv(4096)
                answer += got
                if not got or b"\r\n\r\n" in answer:
                    break
            except socket.timeout:
                pass
        dt = time.monotonic() - t0
        s.close()
        check(answer.startswith(b"HTTP/1.1 408") and dt < 3.0, f"slowloris cut off with 408 after {dt:.1f} s")

        line, dt = raw(b"GET /healthz HTTP/1.1\r\nX-Big: " + b"a" * 20000 + b"\r\n\r\n")
        check(line.startswith("HTTP/1.1 431"), f"oversized head: {line}")
        line, dt = raw(f"POST /api/v1/report HTTP/1.1\r\nAuthorization: Bearer {TOKEN}\r\n"
                       "Content-Type: application/json\r\nContent-Length: 100000000\r\n\r\n".encode())
        check(line.startswith("HTTP/1.1 413") and dt < QUICK_S, f"oversized body, none sent: {line} in {dt * 1000:.0f} ms")
        line, dt = raw(b"POST /api/v1/report HTTP/1.1\r\nAuthorization: Bearer wrong-token\r\n"
                       b"Content-Type: application/json\r\nContent-Length: 500000\r\n\r\n")
        check(line.startswith("HTTP/1.1 401") and dt < QUICK_S, f"wrong token, body not sent: {line} in {dt * 1000:.0f} ms")

        st, body, dt = timed_request("GET", "/metrics")
        check(st == 200 and dt < QUICK_S, "/metrics still answers")
        assert proc.poll() is None, "controller died"
        print("PASS")
    finally:
        for s in idle:
            s.close()
        for c in kept:
            c.close()
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
