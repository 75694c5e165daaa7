#!/usr/bin/env bash
# The RDMA probe engine against a verbs pingpong, in one Soft-RoCE guest boot (docs/BENCHMARKS.md,
# "RDMA probes"). Needs root (qemu lab).
#   bench/rdma_probe_guest.sh WEFT [WEFT_REF] [ROUNDS]
# Each round, for WEFT and (if given) WEFT_REF in turn, on rxe0 in one guest:
#   pingpong  `weft rdma pingpong --qp ud --wait busy`, 500 round trips (the verbs floor)
#   ping-busy `weft ping rdma --busy-poll -c 300 -i 0.002` against `weft rdma responder --busy-poll`
#   ping      the same with both sides sleeping on their CQ channel (the default)
#   rss       VmRSS of `weft rdma responder` (one RDMA engine, default receive ring) after 1 s
#   agent-N   VmRSS of one of N agents (a controller on loopback, every agent on rxe0 probing all
#             others over RDMA every 100 ms, so each engine has 2(N-1) peers) after 12 s; N = 1, 8
# Prints one line per run and, at the end, per binary and kind the median over the rounds of the
# min and p50 RTT, and the ratio of ping-busy's min to pingpong's min. The guest CPU is emulated:
# compare the rows with each other, never with hardware.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
weft=$(readlink -f "${1:?usage: $0 WEFT [WEFT_REF] [ROUNDS]}")
ref=${2:-}
rounds=${3:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$weft" "$tmp/weft-new"
bins="weft-new"
args=(--bin "$tmp/weft-new")
if [[ -n $ref ]]; then
  cp "$(readlink -f "$ref")" "$tmp/weft-ref"
  bins="weft-new weft-ref"
  args+=(--bin "$tmp/weft-ref")
fi
out=$tmp/out.txt
"$here/../lab/rdma-guest" --timeout 1800 "${args[@]}" -- "
  ip=\$WRD_IP
  port=47200
  r=0
  while [ \$r -lt $rounds ]; do
    for b in $bins; do
      port=\$((port + 1))
      \$b --log-level warn rdma pingpong --server --bind \$ip --port \$port --qp ud --wait busy --iters 500 >/dev/null &
      sleep 0.2
      echo \"RUN \$b pingpong \$(\$b --log-level warn rdma pingpong --client \$ip --port \$port --qp ud --wait busy --iters 500)\"
      wait
      for mode in busy chan; do
        flag=''; [ \$mode = busy ] && flag=--busy-poll
        port=\$((port + 1))
        \$b --log-level warn rdma responder -d rxe0 --address \$ip --discovery \$ip:\$port \$flag --duration 60 >/tmp/resp.out 2>&1 &
        rp=\$!
        i=0; while [ \$i -lt 50 ] && ! grep -q 'RDMA responder on' /tmp/resp.out; do sleep 0.1; i=\$((i + 1)); done
        if [ \$mode = chan ]; then sleep 1; echo \"RUN \$b rss {\\\"rss_kb\\\":\$(awk '/VmRSS/ {print \$2}' /proc/\$rp/status)}\"; fi
        echo \"RUN \$b ping-\$mode \$(\$b --log-level warn ping rdma rxe0:\$ip --discovery-port \$port -c 300 -i 0.002 \$flag --json | tail -n 1)\"
        kill -INT \$rp; wait \$rp >/dev/null 2>&1
      done
      for n in 1 8; do
        port=\$((port + 1))
        printf '%s\\n' \"listen: [127.0.0.1:\$port]\" 'store: sqlite:/tmp/rss.db' 'window: 2s' 'report_interval: 1s' \\
          'protocols:' '  rdma: {interval: 100ms, timeout: 1s}' 'groups:' \\
          \"  - {name: all, protocols: [rdma], members: ['*']}\" >/tmp/rss.yaml
        rm -f /tmp/rss.db
        \$b --log-level warn controller -c /tmp/rss.yaml >/tmp/rss-ctl.out 2>&1 &
        cp=\$!
        sleep 1
        pids=''
        a=0
        while [ \$a -lt \$n ]; do
          \$b --log-level warn agent --controller http://127.0.0.1:\$port --name rss\$a --address \$ip --udp-port \$((20000 + a)) --tcp-port \$((21000 + a)) --protocols rdma --rdma rxe0:\$ip >/tmp/rss-a\$a.out 2>&1 &
          pids=\"\$pids \$!\"
          a=\$((a + 1))
        done
        sleep 12
        first=\$(echo \$pids | cut -d' ' -f1)
        echo \"RUN \$b agent-\$n {\\\"rss_kb\\\":\$(awk '/VmRSS/ {print \$2}' /proc/\$first/status)}\"
        kill -INT \$pids \$cp; wait \$pids \$cp >/dev/null 2>&1
      done
    done
    r=\$((r + 1))
  done" | tee "$out" || echo "rdma-guest exited non-zero: the summary covers the runs that finished"
python3 - "$out" <<'EOF'
import json, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    line = line.strip()
    if not line.startswith("RUN "):
        continue
    _, b, kind, js = line.split(" ", 3)
    try:
        j = json.loads(js)
    except json.JSONDecodeError:
        print("unparsed:", line)
        continue
    if kind == "rss" or kind.startswith("agent-"):
        runs.setdefault((b, kind), []).append((j["rss_kb"] / 1024.0, 0.0))
    else:
        r = j.get("rtt_incl_responder_delay_us") or j["rtt_us"]  # weft ping rdma, or rdma pingpong
        runs.setdefault((b, kind), []).append((r["min"], r["p50"]))
med = lambda xs: statistics.median(xs) if xs else float("nan")
for (b, kind), v in sorted(runs.items()):
    unit = "us" if kind.startswith("p") else "MB"
    print(f"{b:9} {kind:10} rounds {len(v)}  median min {med([x[0] for x in v]):8.1f} {unit}  "
          f"median p50 {med([x[1] for x in v]):8.1f} {unit}  mins {[round(x[0], 1) for x in v]}")
for b in sorted({k[0] for k in runs}):
    pp, pb = runs.get((b, "pingpong"), []), runs.get((b, "ping-busy"), [])
    if pp and pb:
        print(f"{b}: ping-busy min / pingpong min = {med([x[0] for x in pb]) / med([x[0] for x in pp]):.2f}")
EOF
