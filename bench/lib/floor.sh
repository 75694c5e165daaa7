# The kernel floor and the summary shared by bench/probe-vs-floor.sh (the bare engine) and
# bench/agent-vs-floor.sh (a real agent): sourced, not run. The floor is bench/udp_floor_batched.c
# (5 ms wake-ups on both sides, kernel rx + tx stamps read back, TARGETS loopback addresses);
# both it and the weft side read CPU from the processes' CPU-time clocks, in nanoseconds, and print
# it to 0.001 % of a core (bench/cpu_time.h, base/proc_stats.cpp).
# Needs: $tmp (a scratch directory), $DUR (seconds), $TARGETS; run from the repository's top.

floor_build() { cc -O2 -o "$tmp/floor" bench/udp_floor_batched.c; }

floor() {  # floor RATE -> CPU % of a core, client + echo side
  "$tmp/floor" "$1" "$DUR" 5000 2 "$TARGETS" |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print(round(d["cpu_percent_client"]+d["cpu_percent_server"],3))'
}

ratio() { python3 -c "print(round($1 / $2, 3) if $2 > 0 else 'inf')"; }  # ratio A B -> A/B

# One row per round, rate and build: time load rate weft lost floor ratio achieved build [extra].
# "achieved" is the probes/s weft sent ("-" where not known); "build" names what ran.
floor_header() {
  printf '%-8s %-6s %-6s %-8s %-6s %-7s %-6s %-8s %-6s %s\n' time load rate "${1:-engine}" lost floor ratio achieved build "${2:-}"
}
floor_row() {  # floor_row RATE WEFT LOST FLOOR ACHIEVED BUILD [EXTRA] (appended to $tmp/rows)
  printf '%-8s %-6s %-6s %-8s %-6s %-7s %-6s %-8s %-6s %s\n' "$(date +%T)" "$(cut -d' ' -f1 /proc/loadavg)" "$1" "$2" "$3" \
    "$4" "$(ratio "$2" "$4")" "$5" "$6" "${7:-}" | tee -a "$tmp/rows"
}

# Per rate and build: the medians, the median of the per-round ratios weft/floor (min, max), the
# CPU per probe (us of CPU per probe: % of a core is 10,000 us of CPU per second), lost, the load.
floor_summary() {
  python3 - "$tmp/rows" "${1:-engine}" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
label = sys.argv[2]
for rate, build in dict.fromkeys((r[2], r[8]) for r in rows):
    rs = [r for r in rows if r[2] == rate and r[8] == build]
    e = [float(r[3]) for r in rs]
    f = [float(r[5]) for r in rs]
    ratio = [a / b for a, b in zip(e, f) if b > 0]
    per = [float(r[3]) * 1e4 / float(r[7]) for r in rs if r[7] != "-" and float(r[7]) > 0]
    per_f = [float(r[5]) * 1e4 / float(rate) for r in rs]
    loads = [float(r[1]) for r in rs]
    per_e = f"{statistics.median(per):.2f}" if per else "-"
    print(f"median rate {rate:>6} {build:>5}: {label} {statistics.median(e):.3f}%  floor {statistics.median(f):.3f}%  "
          f"{label}/floor {statistics.median(ratio):.3f} (min {min(ratio):.3f}, max {max(ratio):.3f})  "
          f"us/probe {label} {per_e} floor {statistics.median(per_f):.2f}  "
          f"lost {sum(int(r[4]) for r in rs if r[4].isdigit())}  rounds {len(rs)}  load {min(loads):.2f}-{max(loads):.2f}")
# With a reference build (WEFT_REF), new against ref round by round: the two ran within the same
# minute, so this pairing cancels most of a shared machine's drift between rounds.
for rate in dict.fromkeys(r[2] for r in rows):
    ref = [float(r[3]) for r in rows if r[2] == rate and r[8] == "ref"]
    new = [float(r[3]) for r in rows if r[2] == rate and r[8] == "new"]
    if ref and len(ref) == len(new):
        d = [n / f for n, f in zip(new, ref) if f > 0]
        print(f"new/ref rate {rate:>6}: median {statistics.median(d):.3f} (min {min(d):.3f}, max {max(d):.3f}), "
              f"new below ref in {sum(x < 1 for x in d)} of {len(d)} rounds")
PY
}
