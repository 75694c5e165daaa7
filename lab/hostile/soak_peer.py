#!/usr/bin/env python3
"""The kernel's side of the hostile soak (lab/hostile/soak.sh): an echo server and an echo client
that both watch for stalls.

    soak_peer.py server PORT [--rcvbuf BYTES] [--stall S] [--log FILE] [--close-port P] [--hold-port P]
    soak_peer.py client HOST PORT BYTES [--rcvbuf BYTES] [--stall S] [--limit S] [--seed N]

server: echoes every connection (a thread each). A connection that moved no byte either way for
--stall seconds (default 5) while open is a stall: one line "STALL peer=... got=N" goes to --log
(or stderr) and the connection is reset. --rcvbuf sets SO_RCVBUF on the listener (so on every
accepted socket): the squeezed peer whose pruning and zero windows a stack must live through.

--close-port, --hold-port (lab/hostile/differential.py's TIME-WAIT cases, where the server closes
first; as `weft stack echo`'s options of the same names): also listen on these ports, whose
connections echo their first data and then close (--close-port), or half-close and keep the socket
open until the server leaves (--hold-port).

client: sends BYTES seeded pseudo-random bytes, reads the echo at the same time and checks every
byte. Prints one JSON line {"ok", "bytes", "got", "seconds", "stall", "wrong_at"}; exits 0 only when
all came back intact, 2 on a stall (no byte moved either way for --stall seconds), 1 otherwise.
"""
import argparse
import hashlib
import json
import random
import socket
import sys
import threading
import time


def pattern(seed, n):
    return random.Random(seed).randbytes(n)


def serve(o):
    log = open(o.log, "a", buffering=1) if o.log else sys.stderr
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if o.rcvbuf:
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, o.rcvbuf)
    ls.bind(("0.0.0.0", o.port))
    ls.listen(64)

    def one(c, peer):
        last = [time.monotonic()]
        done = threading.Event()
        moved = [0]

        def watch():
            while not done.wait(0.5):
                if time.monotonic() - last[0] > o.stall:
                    log.write("STALL peer=%s:%d got=%d\n" % (peer[0], peer[1], moved[0]))
                    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                    c.shutdown(socket.SHUT_RDWR)
                    return

        threading.Thread(target=watch, daemon=True).start()
        try:
            c.settimeout(0.5)
            pending = b""
            while True:
                try:
                    if pending:
                        k = c.send(pending)
                        pending = pending[k:]
                        last[0] = time.monotonic()
                        continue
                    b = c.recv(1 << 18)
                except socket.timeout:
                    continue
                if not b:
                    break
                moved[0] += len(b)
                last[0] = time.monotonic()
                pending = b
        except OSError:
            pass
        finally:
            done.set()
            c.close()

    def first_then(port, hold):
        fl = socket.socket()
        fl.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        fl.bind(("0.0.0.0", port))
        fl.listen(64)
        kept = []
        while True:
            c, _ = fl.accept()
            try:
                b = c.recv(1 << 16)
                if b:
                    c.sendall(b)
                if hold:
                    c.shutdown(socket.SHUT_WR)
                    kept.append(c)  # never closed: its TIME-WAIT begins with the socket still open
                    continue
            except OSError:
                pass
            c.close()

    for port, hold in ((o.close_port, False), (o.hold_port, True)):
        if port:
            threading.Thread(target=first_then, args=(port, hold), daemon=True).start()
    while True:
        c, peer = ls.accept()
        threading.Thread(target=one, args=(c, peer), daemon=True).start()


def client(o):
    data = pattern(o.seed, o.bytes)
    s = socket.socket()
    if o.rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, o.rcvbuf)
    s.settimeout(o.stall)
    t0 = time.monotonic()
    res = {"ok": False, "bytes": o.bytes, "got": 0, "seconds": 0.0, "stall": False, "wrong_at": -1}
    try:
        s.connect((o.host, o.port))
    except OSError as e:
        res["error"] = "connect: %s" % e
        res["stall"] = isinstance(e, socket.timeout)
        print(json.dumps(res), flush=True)
        return 2 if res["stall"] else 1
    last = [time.monotonic()]
    got = bytearray()
    err = []

    def read_back():
        try:
            while len(got) < o.bytes:
                b = s.recv(1 << 18)
                if not b:
                    break
                got.extend(b)
                last[0] = time.monotonic()
        except OSError as e:
            err.append("recv: %s" % e)

    t = threading.Thread(target=read_back, daemon=True)
    t.start()
    sent = 0
    try:
        while sent < o.bytes:
            k = s.send(data[sent:sent + (1 << 18)])
            sent += k
            last[0] = time.monotonic()
    except OSError as e:
        err.append("send: %s" % e)
    deadline = t0 + o.limit
    while t.is_alive() and time.monotonic() < deadline:
        t.join(0.2)
        if time.monotonic() - last[0] > o.stall:
            res["stall"] = True
            break
    if err and "timed out" in err[0]:
        res["stall"] = True
    res["seconds"] = round(time.monotonic() - t0, 4)
    res["got"] = len(got)
    b = bytes(got)
    if b != data[:len(b)]:
        res["wrong_at"] = next(i for i in range(len(b)) if b[i] != data[i])
    res["ok"] = len(b) == o.bytes and res["wrong_at"] < 0 and not res["stall"]
    if err:
        res["error"] = err[0]
    s.close()
    print(json.dumps(res), flush=True)
    return 0 if res["ok"] else 2 if res["stall"] else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="mode", required=True)
    sv = sub.add_parser("server")
    sv.add_argument("port", type=int)
    cl = sub.add_parser("client")
    cl.add_argument("host")
    cl.add_argument("port", type=int)
    cl.add_argument("bytes", type=int)
    cl.add_argument("--limit", type=float, default=300.0)
    cl.add_argument("--seed", type=int, default=1)
    for p in (sv, cl):
        p.add_argument("--rcvbuf", type=int, default=0)
        p.add_argument("--stall", type=float, default=5.0)
    sv.add_argument("--log")
    sv.add_argument("--close-port", type=int, default=0)
    sv.add_argument("--hold-port", type=int, default=0)
    o = ap.parse_args()
    return serve(o) if o.mode == "server" else client(o)


if __name__ == "__main__":
    sys.exit(main())
