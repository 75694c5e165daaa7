#!/usr/bin/env python3
"""A user-space L2 relay that delays frames (this kernel has no netem): every frame received on one
interface of a pair is sent out of the other one `delay_ms` later, both ways. The interfaces must be
up and in no bridge, with checksum offloads off on the path (lab/offloads.py), since the relay
copies frames as they are. Stops on SIGTERM/SIGINT.

    l2_delay.py DELAY_MS A:B [C:D ...]        # run in the namespace holding the interfaces
"""
import heapq
import os
import select
import signal
import socket
import sys
import time

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_IGNORE_OUTGOING = 23  # our own sends must not come back in on the same socket


def open_if(name):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    s.bind((name, 0))
    s.setblocking(False)
    return s


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    delay = float(sys.argv[1]) / 1000.0
    peer = {}
    for pair in sys.argv[2:]:
        a, b = pair.split(":")
        sa, sb = open_if(a), open_if(b)
        peer[sa.fileno()] = (sa, sb)
        peer[sb.fileno()] = (sb, sa)
    # A wire does not wait for a CPU: on a busy machine a normal process wakes milliseconds late,
    # which would add that to every frame. A high CFS weight lets it preempt the lab's other
    # processes as frames come due. Not real-time priority: relaying a spine's frames takes most of
    # a core, and SCHED_FIFO may hold a core 950 ms of every second: an agent queued behind it can
    # answer nothing for longer than its 500 ms probe timeout (the likely cause of lab_clos_blame
    # once naming host h1, during spine_latency, as a responder that lost probes).
    try:
        os.setpriority(os.PRIO_PROCESS, 0, -15)
    except OSError:
        pass  # not root: the delay is then only a lower bound
    running = [True]
    signal.signal(signal.SIGTERM, lambda *_: running.__setitem__(0, False))
    signal.signal(signal.SIGINT, lambda *_: running.__setitem__(0, False))
    poll = select.poll()
    for fd in peer:
        poll.register(fd, select.POLLIN)
    queue, seq = [], 0  # (due, seq, out socket, frame)
    while running[0]:
        now = time.monotonic()
        while queue and queue[0][0] <= now:
            due, n, out, frame = queue[0]
            try:
                out.send(frame)
            except BlockingIOError:
                break  # the socket's send buffer is full (a busy machine): retry, do not drop
            except OSError:
                pass  # the far end is down: the frame is lost, as on a cable
            heapq.heappop(queue)
        wait_ms = 200 if not queue else max(1 if queue[0][0] <= now else 0, int((queue[0][0] - now) * 1000))
        for fd, _ in poll.poll(wait_ms):
            src, dst = peer[fd]
            for _ in range(64):
                try:
                    frame = src.recv(65535)
                except BlockingIOError:
                    break
                seq += 1
                heapq.heappush(queue, (time.monotonic() + delay, seq, dst, frame))


if __name__ == "__main__":
    main()
