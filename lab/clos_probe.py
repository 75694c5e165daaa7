#!/usr/bin/env python3
"""Packet tools the Clos lab's tests run inside its namespaces (Python 3 stdlib; trace needs root):

  trace DST DPORT SPORTS [MAX_TTL]   Paris-style trace: for each source port (comma-separated), UDP
                                     probes with TTL 1..MAX_TTL and that exact 5-tuple (so ECMP
                                     hashes them like the flow); prints {"SPORT": [hop or null, ...]}
  echo PORT                          UDP echo server (until killed)
  udpping DST DPORT SPORTS COUNT INTERVAL_S
                                     COUNT probes per source port, round robin; prints
                                     {"SPORT": {"sent": n, "received": n, "rtt_p50_ms": x}}
  blast MBIT TARGET...               1200-byte UDP datagrams to port 9 of each target at MBIT Mbit/s
                                     each (until killed): the congestion load
"""
import json
import select
import socket
import struct
import sys
import time

ICMP_TIME_EXCEEDED, ICMP_UNREACH = 11, 3


def trace(dst, dport, sports, max_ttl=4):
    """Each probe's UDP length field carries its TTL (8 + ttl bytes), so an answer quoting the
    probe's header says which TTL expired; the ports stay the flow's."""
    send = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP)
    recv = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    hops = {sp: [None] * max_ttl for sp in sports}
    for ttl in range(1, max_ttl + 1):
        send.setsockopt(socket.IPPROTO_IP, socket.IP_TTL, ttl)
        for sp in sports:
            # checksum 0: none (allowed in IPv4), so the payload length is free to carry the TTL
            send.sendto(struct.pack("!HHHH", sp, dport, 8 + ttl, 0) + b"\0" * ttl, (dst, 0))
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        r, _, _ = select.select([recv], [], [], max(0.0, deadline - time.monotonic()))
        if not r:
            break
        pkt, (src, _) = recv.recvfrom(2048)
        ihl = (pkt[0] & 0x0F) * 4
        icmp_type = pkt[ihl]
        if icmp_type not in (ICMP_TIME_EXCEEDED, ICMP_UNREACH):
            continue
        inner = pkt[ihl + 8:]
        if len(inner) < 20:
            continue
        iihl = (inner[0] & 0x0F) * 4
        if inner[9] != socket.IPPROTO_UDP or socket.inet_ntoa(inner[16:20]) != dst or len(inner) < iihl + 8:
            continue
        sp, dp, ln, _ = struct.unpack("!HHHH", inner[iihl:iihl + 8])
        ttl = ln - 8
        if dp == dport and sp in hops and 1 <= ttl <= max_ttl:
            hops[sp][ttl - 1] = src
            if all(all(h) for h in hops.values()):
                break  # every hop answered: no need to wait out the second
    return {str(sp): h for sp, h in hops.items()}


def echo(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", port))
    while True:
        data, addr = s.recvfrom(2048)
        s.sendto(data, addr)


def udpping(dst, dport, sports, count, interval):
    socks = {}
    for sp in sports:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("0.0.0.0", sp))
        s.setblocking(False)
        socks[s] = sp
    rtts = {sp: [] for sp in sports}
    sent = {sp: 0 for sp in sports}

    def drain(timeout):
        r, _, _ = select.select(list(socks), [], [], timeout)
        now = time.monotonic()
        for s in r:
            while True:
                try:
                    data = s.recv(2048)
                except BlockingIOError:
                    break
                (t,) = struct.unpack("!d", data[:8])
                rtts[socks[s]].append(now - t)
    nxt = time.monotonic()
    for _ in range(count):
        for s, sp in socks.items():
            s.sendto(struct.pack("!d", time.monotonic()) + b"p" * 24, (dst, dport))
            sent[sp] += 1
        nxt += interval
        while time.monotonic() < nxt:
            drain(max(0.0, nxt - time.monotonic()))
    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        drain(end - time.monotonic())
    out = {}
    for sp in sports:
        r = sorted(rtts[sp])
        out[str(sp)] = {"sent": sent[sp], "received": len(r), "rtt_p50_ms": r[len(r) // 2] * 1000 if r else None}
    return out


def blast(mbit, targets):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
    payload = b"\0" * 1200
    per_s = mbit * 1e6 / 8 / (len(payload) + 28)  # datagrams per second per target
    start, n = time.monotonic(), 0
    while True:
        due = start + n / per_s
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        for t in targets:
            try:
                s.sendto(payload, (t, 9))
            except OSError:
                pass  # a full qdisc refuses: that is the congestion
        n += 1


def ports(arg):
    return [int(p) for p in arg.split(",") if p]


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "trace":
        print(json.dumps(trace(args[0], int(args[1]), ports(args[2]), int(args[3]) if len(args) > 3 else 4)))
    elif cmd == "echo":
        echo(int(args[0]))
    elif cmd == "udpping":
        print(json.dumps(udpping(args[0], int(args[1]), ports(args[2]), int(args[3]), float(args[4]))))
    elif cmd == "blast":
        blast(float(args[0]), args[1:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
