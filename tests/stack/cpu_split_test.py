#!/usr/bin/env python3
"""bench/stack_cpu_split.py sorts each sample of a receiving thread by its call chain and divides by
the bytes that thread received: checked on a hand-made `perf script` text and RUNS file."""
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("split", os.path.join(HERE, "..", "..", "bench", "stack_cpu_split.py"))
split = importlib.util.module_from_spec(spec)
spec.loader.exec_module(split)

# Chains innermost first, as perf script prints them; the key is the category wanted ("_tap": the
# same category reached another way).
CHAINS = {
    "copy": ["_copy_to_iter", "__skb_datagram_iter", "skb_copy_datagram_iter", "packet_recvmsg", "__x64_sys_recvmmsg"],
    "ack_tx": ["pvm_irq_enable", "tcp_ack", "tcp_v4_rcv", "veth_xmit", "__dev_direct_xmit", "packet_sendmsg",
               "__x64_sys_sendmmsg"],
    "ack_tx_tap": ["tcp_v4_rcv", "netif_receive_skb", "tun_get_user", "tun_chr_write_iter", "io_write",
                "__x64_sys_io_uring_enter"],
    "timer": ["pvm_irq_enable", "handle_softirqs", "__irq_exit_rcu", "sysvec_apic_timer_interrupt", "_copy_to_iter"],
    "tcp_rx": ["tcp_rcv_established", "tcp_v4_do_rcv", "__release_sock", "tcp_recvmsg", "__x64_sys_recvfrom"],
    "wait": ["pvm_irq_enable", "finish_task_switch.isra.0", "__schedule", "schedule", "do_sys_poll",
             "__x64_sys_ppoll"],
    "syscall": ["pvm_irq_enable", "do_syscall_64", "entry_SYSCALL_64_after_hwframe", "__recvmmsg"],
    "weft": ["weft::stack::Interface::poll_rx", "main"],
    "user": ["_PyEval_EvalFrameDefault", "main"],
}


def perf_text(tid, chains):
    out = []
    for chain in chains:
        out.append("weft %s\n" % tid)
        out += ["\tffffffff81000000 %s+0x10\n" % f for f in chain]
        out.append("\n")
    return out


def main():
    bad = 0
    for want, chain in CHAINS.items():
        got = split.classify(chain)
        if got != want.removesuffix("_tap"):
            print("FAIL: %s classified as %s" % (" < ".join(chain), got))
            bad += 1
    # Thread 42 received 0.5 GB: 2 copy samples and 1 ack sample at 100 Hz are 0.04 and 0.02 s/GB.
    # Thread 7 (not a receiver) and the send run's line are left out.
    lines = perf_text("42", [CHAINS["copy"], CHAINS["copy"], CHAINS["ack_tx"]]) + perf_text("7", [CHAINS["copy"]])
    runs = ["rx_packet_on 1 client 500000000 3.0 0.5 0.3 0.4 12 42\n",
            "kernel_on 1 10.0.0.1 900000000 3.0 0.5 0.3 0.4\n"]
    table = split.split(lines, runs, 100.0)
    if set(table) != {"rx_packet_on"}:
        print("FAIL: receivers %s" % sorted(table))
        bad += 1
    else:
        row = table["rx_packet_on"]
        if abs(row["copy"] - 0.04) > 1e-9 or abs(row["ack_tx"] - 0.02) > 1e-9 or row["user"] != 0:
            print("FAIL: per GB %s" % row)
            bad += 1
    print("ok" if bad == 0 else "%d failures" % bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
