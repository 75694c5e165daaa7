#!/usr/bin/env python3
"""A hostile L2 link in user space: forwards Ethernet frames between two interfaces (AF_PACKET on
each, run in the namespace that holds both) and, for IPv4 frames, drops, duplicates, delays with
jitter and reorders them, with rates bounded below and a seed, so a run can be repeated.

    relay.py IF_A IF_B [--seed N] [--loss P] [--dup P] [--reorder P] [--reorder-us US]
                       [--delay-us US] [--jitter-us US] [--queue FRAMES] [--stats FILE]

Every IPv4 frame, in each direction on its own: dropped with probability --loss; otherwise held
--delay-us +/- --jitter-us (uniform; jitter alone reorders frames closer together than it), with
probability --reorder held up to --reorder-us more (uniform), and with probability --dup sent a
second time 0-200 us after the first. Frames that are not IPv4 (ARP) pass after --delay-us only.
At most --queue frames wait at once (more are dropped, counted as queue drops). Turn the
interfaces' offloads off first (lab/offloads.py IF off): a TSO/GRO super-frame read here could
not be sent on. Stops on SIGTERM/SIGINT and writes its counters as one JSON line to --stats (or
stdout).
"""
import argparse
import heapq
import json
import os
import random
import select
import signal
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_IGNORE_OUTGOING = 23
PACKET_STATISTICS = 6
SO_RCVBUFFORCE = 33
SO_SNDBUFFORCE = 32
LIMITS = {"loss": 0.5, "dup": 0.5, "reorder": 0.5}  # bounded: past these the link is not a link


def open_port(ifname):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)  # our own sends must not come back
    for opt in (SO_RCVBUFFORCE, SO_SNDBUFFORCE):
        s.setsockopt(socket.SOL_SOCKET, opt, 8 << 20)  # a slow relay must not add loss of its own
    s.bind((ifname, ETH_P_ALL))
    s.setblocking(False)
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--loss", type=float, default=0.0)
    ap.add_argument("--dup", type=float, default=0.0)
    ap.add_argument("--reorder", type=float, default=0.0)
    ap.add_argument("--reorder-us", type=int, default=2000)
    ap.add_argument("--delay-us", type=int, default=0)
    ap.add_argument("--jitter-us", type=int, default=0)
    ap.add_argument("--queue", type=int, default=20000)
    ap.add_argument("--stats")
    o = ap.parse_args()
    for k, hi in LIMITS.items():
        if not 0.0 <= getattr(o, k) <= hi:
            ap.error("--%s must be within 0..%g" % (k, hi))
    if not (0 <= o.delay_us <= 1_000_000 and 0 <= o.jitter_us <= 1_000_000 and 0 <= o.reorder_us <= 1_000_000):
        ap.error("delays must be within 0..1 s")
    if not 1 <= o.queue <= 1_000_000:
        ap.error("--queue must be within 1..1000000")
    rng = random.Random(o.seed)
    ports = [open_port(o.a), open_port(o.b)]
    fd_to = {ports[0].fileno(): (0, ports[1]), ports[1].fileno(): (1, ports[0])}
    c = {k: [0, 0] for k in ("frames", "dropped", "duplicated", "reordered", "queue_drops", "send_errors")}
    heap, seq = [], 0
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    poller = select.poll()
    for p in ports:
        poller.register(p, select.POLLIN)

    def schedule(at, out, frame):
        nonlocal seq
        seq += 1
        heapq.heappush(heap, (at, seq, out, frame))

    while not stop:
        now = time.monotonic()
        while heap and heap[0][0] <= now:
            _, _, out, frame = heapq.heappop(heap)
            try:
                out.send(frame)
            except OSError:
                c["send_errors"][0 if out is ports[1] else 1] += 1
        wait_ms = 50 if not heap else max(0, (heap[0][0] - time.monotonic()) * 1000)
        try:
            ready = poller.poll(wait_ms)
        except InterruptedError:
            continue
        now = time.monotonic()
        for fd, _ in ready:
            d, out = fd_to[fd]
            for _ in range(256):  # a burst, then the queue's due frames again
                try:
                    frame = os.read(fd, 65536)
                except BlockingIOError:
                    break
                c["frames"][d] += 1
                base = o.delay_us / 1e6
                if len(frame) < 14 or frame[12:14] != b"\x08\x00":
                    schedule(now + base, out, frame)  # ARP and the like: no faults
                    continue
                if rng.random() < o.loss:
                    c["dropped"][d] += 1
                    continue
                if len(heap) >= o.queue:
                    c["queue_drops"][d] += 1
                    continue
                hold = base + rng.uniform(-o.jitter_us, o.jitter_us) / 1e6 if o.jitter_us else base
                if o.reorder and rng.random() < o.reorder:
                    hold += rng.uniform(0, o.reorder_us) / 1e6
                    c["reordered"][d] += 1
                schedule(now + max(0.0, hold), out, frame)
                if o.dup and rng.random() < o.dup:
                    c["duplicated"][d] += 1
                    schedule(now + max(0.0, hold) + rng.uniform(0, 200e-6), out, frame)
    kernel_drops = 0
    for p in ports:
        st = p.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8)
        kernel_drops += struct.unpack("II", st)[1]
    out = {"a_to_b": {k: v[0] for k, v in c.items()}, "b_to_a": {k: v[1] for k, v in c.items()},
           "socket_drops": kernel_drops}
    line = json.dumps(out)
    if o.stats:
        with open(o.stats, "w") as f:
            f.write(line + "\n")
    else:
        print(line, flush=True)


if __name__ == "__main__":
    sys.exit(main())
