#!/usr/bin/env bash
# Paris traceroute through a real router (issue 24): hosts A and B in namespaces of their own, a
# router namespace R forwarding between two subnets (10.24.1.0/24, 10.24.2.0/24). A probes B over
# four flows and traces each; every trace must show R's address on A's side, then B, reached.
# Then a second router R2 (10.24.3.0/24 from A, 10.24.4.0/24 to B) and A's route to B moved onto it
# mid-run: the prober must notice the changed path and follow the flow (traces 300 ms apart for
# 2 s instead of one a second), then go back to one a second.
# Needs root (skips with 77). Namespaces are prefixed wftr24- and removed on any exit.
set -euo pipefail
TOOL=$1
[[ $(id -u) -eq 0 ]] || { echo "skip: needs root"; exit 77; }
P=wftr24-$$
A=$P-a R=$P-r B=$P-b R2=$P-r2
cleanup() { for n in $A $R $B $R2; do ip netns del "$n" 2>/dev/null || true; done; }
trap cleanup EXIT
for n in $A $R $B $R2; do ip netns add "$n"; ip -n "$n" link set lo up; done
# router ROUTER A_DEV R_DEV A_SUBNET B_DEV R_DEV B_SUBNET: a forwarding namespace between A (.2 on
# A_SUBNET) and B (.2 on B_SUBNET), itself .1 on both.
router() {
  local r=$1
  ip link add "$2" netns "$A" type veth peer name "$3" netns "$r"
  ip link add "$5" netns "$B" type veth peer name "$6" netns "$r"
  ip -n "$A" addr add "$4.2/24" dev "$2"; ip -n "$A" link set "$2" up
  ip -n "$B" addr add "$7.2/24" dev "$5"; ip -n "$B" link set "$5" up
  ip -n "$r" addr add "$4.1/24" dev "$3"; ip -n "$r" link set "$3" up
  ip -n "$r" addr add "$7.1/24" dev "$6"; ip -n "$r" link set "$6" up
  ip netns exec "$r" sysctl -qw net.ipv4.ip_forward=1
}
router "$R" wa$$ ra$$ 10.24.1 wb$$ rb$$ 10.24.2
ip -n "$A" route add default via 10.24.1.1
ip -n "$B" route add default via 10.24.2.1
ip netns exec "$B" "$TOOL" respond 7777 30 &
RESP=$!
sleep 0.5
out=$(ip netns exec "$A" "$TOOL" trace 10.24.2.2 7777 4 20)
kill "$RESP" 2>/dev/null || true
wait "$RESP" 2>/dev/null || true
echo "$out"
python3 - "$out" <<'PY'
import json, sys
lines = [json.loads(l) for l in sys.argv[1].splitlines() if l.strip()]
assert len(lines) == 4, f"expected 4 traces, got {len(lines)}"
assert len({l["src_port"] for l in lines}) == 4, "each flow traced on its own source port"
for l in lines:
    assert l["dst_port"] == 7777, l
    assert l["reached"], l
    assert l["hops"] == ["10.24.1.1", "10.24.2.2"], f"router then target, got {l['hops']}"
print("paris_trace_lab: 4 flows traced through the router: OK")
PY

# The second router and the route change.
router "$R2" xa$$ sa$$ 10.24.3 xb$$ sb$$ 10.24.4
ip -n "$R2" route add 10.24.2.2/32 via 10.24.4.2
ip -n "$B" route add 10.24.3.0/24 via 10.24.4.1
ip netns exec "$B" sysctl -qw net.ipv4.conf.all.rp_filter=0
ip netns exec "$B" "$TOOL" respond 7777 12 &
RESP=$!
sleep 0.5
ip netns exec "$A" "$TOOL" follow 10.24.2.2 7777 9 > "/tmp/$P-follow.jsonl" &
TRACER=$!
sleep 3.5
ip -n "$A" route add 10.24.2.0/24 via 10.24.3.1
wait "$TRACER"
kill "$RESP" 2>/dev/null || true
wait "$RESP" 2>/dev/null || true
out=$(cat "/tmp/$P-follow.jsonl"); rm -f "/tmp/$P-follow.jsonl"
echo "$out"
python3 - "$out" <<'PY'
import json, sys
t = [json.loads(l) for l in sys.argv[1].splitlines() if l.strip()]
via = lambda x: x["hops"][0] if x["hops"] else ""
before = [x for x in t if via(x) == "10.24.1.1"]
moved = [x for x in t if via(x) == "10.24.3.1"]
assert len(before) >= 2 and len(moved) >= 2, f"traces over R {len(before)}, over R2 {len(moved)}: {t}"
tc = moved[0]["ms"]
assert all(x["ms"] < tc for x in before), "a trace over R after the route moved to R2"
assert all(x["reached"] and x["hops"][-1] == "10.24.2.2" for x in t), t
# Followed: traces 300 ms apart for 2 s after the change (one a second would give at most 2).
following = [x for x in moved if tc < x["ms"] <= tc + 1900]
assert len(following) >= 4, f"{len(following)} traces in the 1.9 s after the change (at {tc} ms): {t}"
# Then one a second again: the path held for 2 s, the flow is no longer followed.
later = [x for x in moved if tc + 2800 < x["ms"] <= tc + 4800]
assert len(later) <= 3, f"{len(later)} traces 2.8-4.8 s after the change: still followed? {t}"
print(f"paris_trace_lab: a changed path (R -> R2 at {tc} ms) followed with {len(following)} traces in 1.9 s, "
      f"then {len(later)} in 2 s: OK")
PY
