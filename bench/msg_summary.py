#!/usr/bin/env python3
"""Summarises bench/msg_guest.sh output: per size and type, medians over rounds, and ratios to
the perftest run of the same round (latency: weft t_typical / ib_send_lat t_typical; bandwidth:
weft MsgRate / ib_send_bw MsgRate). Usage: bench/msg_summary.py < output"""
import json
import statistics as st
import sys
from collections import defaultdict

pt = defaultdict(dict)  # (test, size) -> round -> fields
weft = defaultdict(dict)  # (mode, type, size) -> round -> json
shared = defaultdict(lambda: defaultdict(lambda: {"senders": []}))  # (n, size) -> round -> receiver/senders
rounds_seen = defaultdict(int)
for line in sys.stdin:
    line = line.strip()
    if line.startswith("PT "):
        f = line.split()
        test, size = f[1], int(f[2])
        vals = [float(x) for x in f[3:]]
        r = rounds_seen[(test, size)] = rounds_seen[(test, size)] + 1
        if test.endswith("_lat"):
            pt[(test, size)][r] = dict(t_min=vals[2], t_typical=vals[4], p999=vals[8])
        else:
            pt[(test, size)][r] = dict(bw_avg=vals[3], mpps=vals[4])
    elif line.startswith("{"):
        j = json.loads(line)
        if "side" in j:  # the shared ring, N:1 (bench/msg_guest.sh SHARED_SENDERS)
            r = shared[(j["n"], j["bytes"])][j["round"]]
            if j["side"] == "receiver":
                r["receiver"] = j
            else:
                r["senders"].append(j)
            continue
        # A run that blocked on the completion channel is its own row (WAITS="busy channel").
        t = j["type"] if j.get("wait", "busy") == "busy" else f'{j["type"]} ({j["wait"]})'
        weft[(j["mode"], t, j["bytes"])][j["round"]] = j


def med(xs):
    xs = [x for x in xs if x is not None]
    return st.median(xs) if xs else float("nan")


sizes = sorted({k[2] for k in weft} | {k[1] for k in shared})
types = []
for k in weft:
    if k[1] not in types:
        types.append(k[1])
for size in sizes:
    print(f"\n### {size} B latency (us, RTT/2; median over rounds; ratio = weft t_typical / ib_send_lat t_typical, same round)\n")
    print("| type | t_min | t_typical | p99.9 | ratio to ib_send_lat | WR/msg | CPU ns/msg |")
    print("|---|---|---|---|---|---|---|")
    for test in ("ib_send_lat", "ib_write_lat", "ib_read_lat"):
        rs = pt.get((test, size), {})
        if rs:
            note = " (full RTT)" if test == "ib_read_lat" else ""
            print(f"| perftest {test}{note} | {med([v['t_min'] for v in rs.values()]):.2f} | "
                  f"{med([v['t_typical'] for v in rs.values()]):.2f} | {med([v['p999'] for v in rs.values()]):.2f} | | | |")
    base = pt.get(("ib_send_lat", size), {})
    for t in types:
        rs = weft.get(("latency", t, size), {})
        if not rs:
            continue
        ratios = [v["t_typical"] / base[r]["t_typical"] for r, v in rs.items() if r in base and base[r]["t_typical"] > 0]
        print(f"| {t} | {med([v['t_min'] for v in rs.values()]):.2f} | {med([v['t_typical'] for v in rs.values()]):.2f} | "
              f"{med([v['percentile_99.9'] for v in rs.values()]):.2f} | {med(ratios):.2f} | "
              f"{med([v['wr_per_msg'] for v in rs.values()]):.2f} | {med([v['cpu_ns_per_msg'] for v in rs.values()]):.0f} |")
    print(f"\n### {size} B bandwidth (median over rounds; ratio = weft MsgRate / ib_send_bw MsgRate, same round)\n")
    print("| type | Gb/s | MsgRate Mpps | ratio to ib_send_bw | WR/msg | CPU ns/msg |")
    print("|---|---|---|---|---|---|")
    for test in ("ib_send_bw", "ib_write_bw"):
        rs = pt.get((test, size), {})
        if rs:
            print(f"| perftest {test} | {med([v['bw_avg'] for v in rs.values()]):.2f} MB/s | "
                  f"{med([v['mpps'] for v in rs.values()]):.6f} | | | |")
    base = pt.get(("ib_send_bw", size), {})
    for t in types:
        rs = weft.get(("bandwidth", t, size), {})
        if not rs:
            continue
        ratios = [v["msg_rate_mpps"] / base[r]["mpps"] for r, v in rs.items() if r in base and base[r]["mpps"] > 0]
        print(f"| {t} | {med([v['bw_gbps'] for v in rs.values()]):.4f} | {med([v['msg_rate_mpps'] for v in rs.values()]):.6f} | "
              f"{med(ratios):.2f} | {med([v['wr_per_msg'] for v in rs.values()]):.2f} | "
              f"{med([v['cpu_ns_per_msg'] for v in rs.values()]):.0f} |")
    rows = sorted(k for k in shared if k[1] == size)
    if rows:
        print(f"\n### {size} B shared ring, N senders into one receiver (median over rounds; ratio = receiver MsgRate / ib_send_bw MsgRate, same round)\n")
        print("| senders | receiver MsgRate Mpps | ratio to ib_send_bw | Gb/s | WR/msg | CPU ns/msg | holes |")
        print("|---|---|---|---|---|---|---|")
        for key in rows:
            rs = {r: v for r, v in shared[key].items() if "receiver" in v}
            rate = [v["receiver"]["msg_rate_mpps"] for v in rs.values()]
            ratios = [v["receiver"]["msg_rate_mpps"] / base[r]["mpps"] for r, v in rs.items() if r in base and base[r]["mpps"] > 0]
            # Both ends per message: the senders' posted WRs (announce, FAA, WRITE_WITH_IMM, READs) and the
            # receiver's receives; CPU: the receiver's plus the senders' (each per its own messages).
            wr = [v["receiver"]["recv_wrs_per_msg"] + st.mean(x["send_wrs_per_msg"] for x in v["senders"]) for v in rs.values() if v["senders"]]
            cpu = [v["receiver"]["cpu_ns_per_msg"] + st.mean(x["cpu_ns_per_msg"] for x in v["senders"]) for v in rs.values() if v["senders"]]
            holes = sum(v["receiver"]["holes"] for v in rs.values())
            print(f"| {key[0]} | {med(rate):.6f} | {med(ratios):.2f} | {med([v['receiver']['bw_gbps'] for v in rs.values()]):.4f} | "
                  f"{med(wr):.2f} | {med(cpu):.0f} | {holes} |")
