#!/usr/bin/env python3
"""Turns a network interface's offloads on or off without the ethtool program (not on this host):
the legacy SIOCETHTOOL commands `ethtool -K IF tso off gso off gro off tx off sg off` uses.

    python3 lab/offloads.py IF off     # run inside the interface's namespace (ip netns exec NS ...)
    python3 lab/offloads.py IF on
    python3 lab/offloads.py IF         # only print the current state
    python3 lab/offloads.py IF on gro  # only the features named (here GRO), the others as they are

Prints the state read back afterwards, e.g. "IF tx 0 sg 0 tso 0 gso 0 gro 0", so a bench records
what it measured and not what it asked for. Turning tx checksumming off takes sg and tso with it
(the kernel's own dependency); turning it on restores them in that order.
"""
import ctypes
import fcntl
import socket
import struct
import sys

SIOCETHTOOL = 0x8946
# (name, get, set) from <linux/ethtool.h>; the order is the order they are switched on.
FEATURES = [("tx", 0x16, 0x17), ("sg", 0x18, 0x19), ("tso", 0x1E, 0x1F), ("gso", 0x23, 0x24), ("gro", 0x2B, 0x2C)]


def call(sock, ifname, cmd, data=0):
    """One struct ethtool_value command; returns its data field as the kernel left it."""
    val = (ctypes.c_uint32 * 2)(cmd, data)  # struct ethtool_value; ifr_data points at it
    ifr = struct.pack("16sQ16x", ifname.encode(), ctypes.addressof(val))
    fcntl.ioctl(sock.fileno(), SIOCETHTOOL, ifr)
    return val[1]


def main():
    ifname = sys.argv[1]
    want = sys.argv[2] if len(sys.argv) > 2 else None
    only = set(sys.argv[3:])
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    order = [f for f in (FEATURES if want == "on" else list(reversed(FEATURES))) if not only or f[0] in only]
    if want in ("on", "off"):
        for name, _, set_cmd in order:
            try:
                call(s, ifname, set_cmd, 1 if want == "on" else 0)
            except OSError as e:
                print(f"{ifname}: setting {name} {want}: {e}", file=sys.stderr)
    state = " ".join(f"{name} {call(s, ifname, get)}" for name, get, _ in FEATURES)
    print(f"{ifname} {state}")


if __name__ == "__main__":
    main()
