#!/usr/bin/env bash
# weft's RDMA commands between two Soft-RoCE guests wired by qemu's UDP socket netdev
# (lab/rdma-guest --two), against their verbs references measured interleaved in the same boot
# (docs/BENCHMARKS.md, "RDMA across two guests"). Needs root.
#   bench/rdma_two_guests.sh [WEFT] [ROUNDS]          (default build/weft, 5)
# Environment: CHECK_N random-size messages per msg check round (default 500).
# Per round (bench/rdma_two_guests.guest): `weft ping rdma --busy-poll` and `weft rdma pingpong
# --qp ud --wait busy`; `weft msg bench` send-recv 64 B latency and `ib_send_lat -s 64`; a msg
# check run. Prints every run, then per kind the median over rounds and the median of per-round
# ratios to the reference. The guest CPU is emulated: compare ratios, not absolutes.
# (perftest's own side-by-side across the wire: TWO=1 bench/rdma_vs_perftest.sh.)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
weft=$(readlink -f "${1:-$here/../build/weft}")
rounds=${2:-5}
[[ -x $weft ]] || { echo "build $weft first"; exit 2; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$here/../lab/rdma-guest" --two --timeout "${TIMEOUT:-1800}" --bin "$weft" --bin "$here/rdma_two_guests.guest" \
  -- "CHECK_N=${CHECK_N:-500} sh /usr/local/bin/rdma_two_guests.guest $rounds" | tee "$out" ||
  echo "rdma-guest exited non-zero: the summary covers the runs that finished"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$out" <<'EOF'
import json, statistics, sys
runs = {}  # (kind, round) -> dict of figures
for line in open(sys.argv[1]):
    line = line.strip()
    if line.startswith("[g1] ") or line.startswith("[g0] "):
        line = line[5:]
    if not line.startswith("RUN "):
        continue
    _, r, kind, rest = (line.split(" ", 3) + [""])[:4]
    r = int(r)
    if kind == "ib_send_lat":  # bytes iters t_min t_max t_typical t_avg t_stdev p99 p99.9
        c = rest.split()
        if len(c) >= 9:
            runs[(kind, r)] = {"min": float(c[2]), "typ": float(c[4]), "p99": float(c[7])}
        continue
    try:
        j = json.loads(rest)
    except json.JSONDecodeError:
        print("unparsed:", line)
        continue
    if kind == "msg-lat":
        runs[(kind, r)] = {"min": j["t_min"], "typ": j["t_typical"], "p99": j["percentile_99"]}
    elif kind in ("pingpong", "ping-busy"):
        rtt = j.get("rtt_incl_responder_delay_us") or j["rtt_us"]
        runs[(kind, r)] = {"min": rtt["min"], "typ": rtt["p50"], "p99": rtt["p99"],
                           "lost": j.get("lost", 0)}
    elif kind == "msg-check":
        runs[(kind, r)] = {"verified": j["verified"], "of": j["of"], "error": j["error"]}
    elif kind == "msg-check-client":
        runs[(kind, r)] = j
med = statistics.median
def col(kind, fig):
    return [v[fig] for (k, r), v in sorted(runs.items()) if k == kind and fig in v]
def ratios(kind, ref, fig):
    return [runs[(kind, r)][fig] / runs[(ref, r)][fig] for (k, r) in sorted(runs)
            if k == kind and (ref, r) in runs and runs[(ref, r)][fig] > 0]
print("| figure | weft (median) | reference (median) | weft/reference (median of rounds, range) | rounds |")
print("|---|---|---|---|---|")
for kind, ref, unit in (("ping-busy", "pingpong", "RTT us"), ("msg-lat", "ib_send_lat", "RTT/2 us")):
    for fig in ("min", "typ"):
        w, p, q = col(kind, fig), col(ref, fig), ratios(kind, ref, fig)
        if w and p and q:
            name = {"min": "min", "typ": "median" if unit == "RTT us" else "t_typical"}[fig]
            print(f"| {kind} {name} {unit} | {med(w):.1f} | {ref} {med(p):.1f} | {med(q):.3f} "
                  f"({min(q):.2f}-{max(q):.2f}) | {len(q)} |")
lost = col("ping-busy", "lost")
if lost:
    print(f"| ping-busy probes lost | {sum(lost)} of {200 * len(lost)} | | | {len(lost)} |")
ver, of = col("msg-check", "verified"), col("msg-check", "of")
secs = col("msg-check-client", "seconds")
bad = [v for v in runs.values() if "error" in v and v["error"]]
if ver:
    print(f"| msg check send-recv, messages verified byte for byte (0..64 KiB) | {sum(ver)} of {sum(of)}"
          f"{', errors: ' + str(bad) if bad else ''} | | {med(secs):.1f} s per run (median) | {len(ver)} |")
EOF
