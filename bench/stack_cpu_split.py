#!/usr/bin/env python3
"""Where a receiving thread's CPU goes, per GB received (bench/stack_vs_kernel.sh's rx_* cells).

Usage (root; RUNS= makes the bench keep its per-run lines, with each receiver's thread id):
  perf record -a -g -F 999 -e cpu-clock -o P.data -- \\
      env RUNS=/tmp/runs SENDERS="rx_kernel_on rx_packet_on" bench/stack_vs_kernel.sh build/weft 3 3
  perf script -i P.data -F comm,tid,ip,sym > P.txt
  bench/stack_cpu_split.py P.txt /tmp/runs [HZ=999]

Each cpu-clock sample of a receiving thread (the kernel discard server's thread, or `weft stack
serve`) goes to the first category its call chain matches, in this order:
  ack_tx    inside a send system call, a write to the TAP (tun_get_user, also from io_uring) or
            the kernel's own ACK transmission (tcp_send_ack ... ip_output, veth): the sender's ACK
            processing and next transmissions run in it;
  timer     a timer interrupt's softirqs (the sender's pacing hrtimers and TSQ work armed on this
            CPU by those ACKs; NET_RX of the sender's frames);
  copy      the payload copy from the kernel to user memory (_copy_to_iter, __skb_datagram_iter);
  tcp_rx    the kernel's TCP receive work in the receiver's thread (the socket backlog);
  wait      sleeping and waking (schedule, poll);
  syscall   the rest of a receive system call, and system call entry and exit;
  weft      weft's own code (parsing, TCP, the socket layer);
  user      any other user-space code (the Python loop, libc, the loader, page faults at start).
On a paravirtualised CPU many kernel samples land on pvm_irq_enable (work done with interrupts
off is seen where they come back on); the chain above that frame still says whose work it was.
Prints, per receiver label, the seconds per GB in each category (all rounds pooled: samples / HZ
over the bytes the client sent), and the share of the total.
"""
import collections
import sys

ACK_TX = {"__x64_sys_sendmmsg", "__x64_sys_sendmsg", "__x64_sys_sendto", "__x64_sys_write", "__x64_sys_writev",
          "packet_sendmsg", "__dev_queue_xmit", "__dev_direct_xmit", "__tcp_transmit_skb", "tcp_send_ack",
          "__tcp_send_ack", "ip_output", "ip_finish_output2", "tun_get_user", "tun_chr_write_iter"}
TIMER = {"sysvec_apic_timer_interrupt", "asm_sysvec_apic_timer_interrupt", "hrtimer_interrupt"}
COPY_PREFIXES = ("_copy_to_iter", "__skb_datagram_iter", "skb_copy_datagram", "copy_user", "rep_movs",
                 "simple_copy_to_iter", "copy_mc")
TCP_RX = {"tcp_v4_rcv", "__release_sock", "tcp_rcv_established", "tcp_v4_do_rcv", "tcp_cleanup_rbuf",
          "tcp_recvmsg_locked", "process_backlog", "net_rx_action", "handle_softirqs", "tpacket_rcv", "packet_rcv"}
WAIT = {"schedule", "__schedule", "__x64_sys_epoll_wait", "do_epoll_wait", "__x64_sys_poll", "__x64_sys_ppoll",
        "do_sys_poll", "futex_wait", "__x64_sys_futex"}
RECV = {"__x64_sys_recvmmsg", "__x64_sys_recvmsg", "__x64_sys_recvfrom", "do_recvmmsg", "__sys_recvfrom",
        "skb_free_datagram", "consume_skb", "kfree_skb_reason", "sock_recvmsg", "packet_recvmsg", "tcp_recvmsg"}
SYSCALL_PREFIXES = ("entry_SYSCALL", "do_syscall", "syscall_exit", "exit_to_user", "pvm_", "__raw_callee_save_pvm")
CATEGORIES = ["copy", "tcp_rx", "weft", "ack_tx", "timer", "wait", "syscall", "user"]


def classify(chain):
    """chain: the sample's frames, innermost first (function names)."""
    names = set(chain)
    if names & ACK_TX:
        return "ack_tx"
    if names & TIMER:
        return "timer"
    if any(f.startswith(COPY_PREFIXES) for f in chain[:6]):
        return "copy"
    if names & TCP_RX:
        return "tcp_rx"
    if names & WAIT:
        return "wait"
    if names & RECV or any(f.startswith(SYSCALL_PREFIXES) for f in chain[:4]):
        return "syscall"
    if any(f.startswith("weft::") for f in chain):
        return "weft"
    return "user"


def samples(lines):
    """Yields (tid, chain) from `perf script -F comm,tid,ip,sym` output."""
    tid, chain = None, []
    for line in lines:
        if not line.strip():
            if tid is not None:
                yield tid, chain
            tid, chain = None, []
        elif not line[0].isspace():
            if tid is not None:
                yield tid, chain
            tid, chain = line.split()[-1], []
        else:
            parts = line.split(None, 1)
            if len(parts) == 2:
                chain.append(parts[1].split("+")[0].split(" (")[0].strip())
    if tid is not None:
        yield tid, chain


def receivers(lines):
    """From the bench's RUNS lines: {tid: (label, bytes)} for the receive runs that name a thread."""
    out = {}
    for line in lines:
        f = line.split()
        if len(f) >= 10 and f[0].startswith(("rx_", "ref_rx_")) and f[2] == "client":
            out[f[9]] = (f[0], int(f[3]))
    return out


def split(sample_lines, run_lines, hz):
    rx = receivers(run_lines)
    counts = collections.defaultdict(collections.Counter)
    for tid, chain in samples(sample_lines):
        if tid in rx:
            counts[rx[tid][0]][classify(chain)] += 1
    gb = collections.Counter()
    for label, n in rx.values():
        gb[label] += n / 1e9
    return {label: {c: counts[label][c] / hz / gb[label] for c in CATEGORIES} for label in counts if gb[label] > 0}


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    hz = float(sys.argv[3]) if len(sys.argv) > 3 else 999.0
    with open(sys.argv[1]) as s, open(sys.argv[2]) as r:
        table = split(s, list(r), hz)
    print("| receiver | " + " | ".join(CATEGORIES) + " | total s/GB |")
    print("|---|" + "---|" * (len(CATEGORIES) + 1))
    for label, row in sorted(table.items()):
        total = sum(row.values())
        cells = ["%.3f (%d %%)" % (row[c], round(100 * row[c] / total)) if total else "0" for c in CATEGORIES]
        print("| %s | %s | %.3f |" % (label, " | ".join(cells), total))


if __name__ == "__main__":
    main()
