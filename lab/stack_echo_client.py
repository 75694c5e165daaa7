#!/usr/bin/env python3
"""Sends N random bytes to HOST port 7 (an echo server: weft stack echo or the kernel's), reads them
back at the same time and checks every byte (SHA-256 of what came back against what was sent).
Used by the stack lab tests and bench/stack_interop.sh.
  stack_echo_client.py HOST N [TIMEOUT_S] [--brief]
Prints "sha256 PREFIX match|MISMATCH, GOT of N bytes back", or with --brief "match|MISMATCH GOT SECONDS".
Exits 0 only when all N bytes came back intact."""
import hashlib
import os
import socket
import sys
import threading
import time

args = [a for a in sys.argv[1:] if a != "--brief"]
brief = "--brief" in sys.argv[1:]
host, n = args[0], int(args[1])
limit = float(args[2]) if len(args) > 2 else 120.0
data = os.urandom(n)
h = hashlib.sha256()
got = 0
s = socket.create_connection((host, 7), timeout=limit if len(args) > 2 else 60)
t0 = time.time()


def read_back():
    global got
    while got < n:
        b = s.recv(1 << 20)
        if not b:
            break
        h.update(b)
        got += len(b)


t = threading.Thread(target=read_back)
t.start()
s.sendall(data)
t.join(limit)
s.close()
sent = hashlib.sha256(data)
ok = got == n and h.digest() == sent.digest()
if brief:
    print("%s %d %.2f" % ("match" if ok else "MISMATCH", got, time.time() - t0))
else:
    print("sha256 %s %s, %d of %d bytes back" % (sent.hexdigest()[:16], "match" if ok else "MISMATCH", got, n))
sys.exit(0 if ok else 1)
