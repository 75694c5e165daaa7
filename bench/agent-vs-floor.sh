#!/usr/bin/env bash
# Issue 14: the agent's CPU at R UDP probes/s against the kernel's own price for the same datagrams
# (bench/udp_floor_batched.c), interleaved, as bench/probe-vs-floor.sh does for the bare engine.
# For each round and rate in RATES (default 1000 10000 probes/s), back to back:
#   agent  a controller on loopback (embedded store, not counted: it is the controller's host's),
#          100 registered targets on 127.3.0.1-100 answered by one `weft responder` (as the floor's
#          one echo process answers its 100 addresses), and one real `weft agent` ("meas", on
#          127.4.0.1) probing them at RATE/100 per target (the controller's udp interval); after a
#          warm-up, CPU of the agent process (prober, its own responder, windows, reports, health)
#          + the targets' responder over DUR seconds, from their CPU-time clocks (ns)
#   floor  udp_floor_batched RATE DUR 5000 2 100 (client + server: 5 ms wake-ups, kernel rx + tx
#          stamps, 100 addresses)
# One line per round and rate, then per rate the medians and the median of the per-round ratios
# (the floor, the rows and the summary are bench/lib/floor.sh's, as in bench/probe-vs-floor.sh).
# ROUNDS (default 5), DUR seconds (default 10), WARM seconds (default 4). Needs loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
WEFT=$(readlink -f "${WEFT:-build/weft}")
ROUNDS=${ROUNDS:-5}
DUR=${DUR:-10}
WARM=${WARM:-4}
RATES=${RATES:-1000 10000}
TARGETS=100
TOKEN=agent-vs-floor-token
source bench/lib/scratch.sh
source bench/lib/floor.sh
floor_build

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# cpu_over SECONDS PID1 PID2 -> "% of a core of both, of PID1": CPU time from the processes'
# CPU-time clocks (Linux: ((~pid) << 3) | 2, CPUCLOCK_SCHED of the whole process; /proc/PID/stat's
# 10 ms clock ticks are too coarse, issue 17), over the monotonic time really elapsed, read in one
# process so that both windows are the same.
cpu_over() {
  python3 - "$@" <<'PY'
import sys, time
secs, a, r = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
clk = lambda pid: ((~pid) << 3) | 2
t0, a0, r0 = time.monotonic_ns(), time.clock_gettime_ns(clk(a)), time.clock_gettime_ns(clk(r))
time.sleep(secs)
a1, r1, t1 = time.clock_gettime_ns(clk(a)), time.clock_gettime_ns(clk(r)), time.monotonic_ns()
print(round(100 * ((a1 - a0) + (r1 - r0)) / (t1 - t0), 3), round(100 * (a1 - a0) / (t1 - t0), 3))
PY
}

agent_run() {  # agent_run RATE -> "cpu_percent agent_cpu_percent pairs sent lost"
  local rate=$1 port udp tcp rport interval_ms
  port=$(free_port) udp=$(free_port) tcp=$(free_port) rport=$(free_port)
  interval_ms=$((1000 * TARGETS / rate))
  mkdir -p "$tmp/c"
  cat >"$tmp/c/weft.yaml" <<EOF
listen: ["127.0.0.1:$port"]
tokens: ["$TOKEN"]
shared_tokens: true
store: "sqlite:$tmp/c/history.db"
window: 10s
agent_down_after: 3600s
protocols:
  udp: {interval: ${interval_ms}ms, timeout: 1s}
arrows:
  - name: meas-to-targets
    protocols: [udp]
    from: ["meas"]
    to: ["tgt-*"]
EOF
  rm -f "$tmp/c/history.db"*
  "$WEFT" --log-level warn controller --config "$tmp/c/weft.yaml" >"$tmp/c/controller.log" 2>&1 &
  local cpid=$!
  pids+=("$cpid")
  "$WEFT" --log-level warn responder --listen 0.0.0.0 --udp-port "$rport" --tcp-port "$(free_port)" >"$tmp/c/responder.log" 2>&1 &
  local rpid=$!
  pids+=("$rpid")
  python3 - "$port" "$rport" "$TARGETS" "$TOKEN" <<'PY'
import json, sys, time, urllib.request
port, rport, n, token = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
for _ in range(100):  # the controller is starting
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1); break
    except Exception:
        time.sleep(0.1)
for i in range(1, n + 1):
    body = json.dumps({"name": f"tgt-{i:03d}", "addresses": [f"127.3.0.{i}"], "version": "bench",
                       "udp_port": rport, "tcp_port": 0, "protocols": ["udp"]}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/api/v1/register", body,
                                 {"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    urllib.request.urlopen(req, timeout=5).read()
PY
  "$WEFT" --log-level warn agent --controller "http://127.0.0.1:$port" --token "$TOKEN" --name meas \
    --address 127.4.0.1 --udp-port "$udp" --tcp-port "$tcp" --protocols udp >"$tmp/c/agent.log" 2>&1 &
  local apid=$!
  pids+=("$apid")
  sleep "$WARM"
  local cpu
  cpu=$(cpu_over "$DUR" "$apid" "$rpid")
  # Loss in the agent's windows so far (from the controller), to show the probes really flowed.
  local seen
  seen=$(python3 - "$port" <<'PY'
import json, sys, urllib.request
d = json.load(urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/api/v1/mesh?protocol=udp", timeout=10))
sent = lost = pairs = 0
for p in d.get("pairs", []):
    w = p.get("window") or p
    if w.get("sent"):
        pairs += 1; sent += w["sent"]; lost += w.get("lost", 0)
print(f"{pairs} {sent} {lost}")
PY
  ) || seen="? ? ?"
  kill "$apid" "$rpid" "$cpid" 2>/dev/null || true
  wait "$apid" "$rpid" "$cpid" 2>/dev/null || true
  echo "$cpu $seen"
}
echo "start $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)"
floor_header agent+resp "agent pairs/sent/lost"
for _ in $(seq "$ROUNDS"); do
  for r in $RATES; do
    read -r e a pairs sent lost < <(agent_run "$r")
    f=$(floor "$r")
    floor_row "$r" "$e" "$lost" "$f" - agent "$a $pairs/$sent/$lost"
  done
done
echo "end $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)"
floor_summary agent+resp
