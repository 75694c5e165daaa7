#!/usr/bin/env bash
# Paris traceroute through a real router (issue 24): hosts A and B in namespaces of their own, a
# router namespace R forwarding between two subnets (10.24.1.0/24, 10.24.2.0/24). A probes B over
# four flows and traces each; every trace must show R's address on A's side, then B, reached.
# Needs root (skips with 77). Namespaces are prefixed wftr24- and removed on any exit.
set -euo pipefail
TOOL=$1
[[ $(id -u) -eq 0 ]] || { echo "skip: needs root"; exit 77; }
P=wftr24-$$
A=$P-a R=$P-r B=$P-b
cleanup() { for n in $A $R $B; do ip netns del "$n" 2>/dev/null || true; done; }
trap cleanup EXIT
for n in $A $R $B; do ip netns add "$n"; ip -n "$n" link set lo up; done
ip link add wa$$ netns "$A" type veth peer name ra$$ netns "$R"
ip link add wb$$ netns "$B" type veth peer name rb$$ netns "$R"
ip -n "$A" addr add 10.24.1.2/24 dev wa$$; ip -n "$A" link set wa$$ up
ip -n "$B" addr add 10.24.2.2/24 dev wb$$; ip -n "$B" link set wb$$ up
ip -n "$R" addr add 10.24.1.1/24 dev ra$$; ip -n "$R" link set ra$$ up
ip -n "$R" addr add 10.24.2.1/24 dev rb$$; ip -n "$R" link set rb$$ up
ip netns exec "$R" sysctl -qw net.ipv4.ip_forward=1
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
