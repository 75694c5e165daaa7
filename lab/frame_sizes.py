#!/usr/bin/env python3
"""Sizes of the TCP data frames one address sends, as an interface sees them (root).

usage: lab/frame_sizes.py IFNAME SRC_IP SECONDS

Reads every IPv4 frame on IFNAME with a packet socket for SECONDS (a super-frame, GSO or GRO,
counts as one, with its whole length), keeps TCP frames from SRC_IP that carry data, and prints
how many there were, their mean payload and, per size class, the count and the share of the bytes.
"""
import collections
import socket
import sys
import time


def size_class(payload):
    for limit, name in ((1448, "<=1448"), (8688, "<=8K"), (32768, "<=32K"), (60000 - 1, "<60K")):
        if payload <= limit:
            return name
    return ">=60K"


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    ifname, src, seconds = sys.argv[1], socket.inet_aton(sys.argv[2]), float(sys.argv[3])
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
    s.bind((ifname, 0))
    s.settimeout(0.5)
    head = bytearray(128)  # Ethernet + IPv4 + TCP headers; MSG_TRUNC gives the whole length
    count, byts = collections.Counter(), collections.Counter()
    end = time.time() + seconds
    while time.time() < end:
        try:
            n = s.recv_into(head, len(head), socket.MSG_TRUNC)
        except socket.timeout:
            continue
        if n < 54 or head[12:14] != b"\x08\x00" or head[23] != 6 or bytes(head[26:30]) != src:
            continue
        ihl = (head[14] & 15) * 4
        payload = n - 14 - ihl - (head[14 + ihl + 12] >> 4) * 4
        if payload > 0:
            count[size_class(payload)] += 1
            byts[size_class(payload)] += payload
    total, frames = sum(byts.values()), sum(count.values())
    print("%d data frames, mean payload %.0f bytes" % (frames, total / max(frames, 1)))
    for k in sorted(count, key=lambda k: -byts[k]):
        print("  %-7s %7d frames, %5.1f %% of the bytes" % (k, count[k], 100.0 * byts[k] / max(total, 1)))


if __name__ == "__main__":
    main()
