# Shared lab shell for weft's user-space stack (sourced, root): the namespaces the stack's lab test
# (tests/stack/lab_stack_tap_test.sh) and interop grid (bench/stack_interop.sh) both build.
#
# The stack's TAP gets its kernel end in a router namespace R (forwarding on); kernel peers sit in
# namespaces behind veth pairs to R, so the stack reaches them through its gateway. Loss is nft
# `numgen random` in R's forward chain, silent to both senders (a drop in a sender's own output hook
# would be reported to it). Names and subnets are random per run so runs can overlap.
#
#   stack_lab_init TAG             R, K, TAP, N1, N2, STACK_IP, GW_IP, KERN_IP; EXIT trap cleans up
#   stack_lab_add_peer NS NET IP   another namespace NS behind its own veth to R, IP on NET.0/24
#   stack_lab_add_packet_link NS   instead of the TAP: namespace NS holding a veth end PKT_IF (up, no
#                                  kernel address) for `weft stack --device packet|dpdk`; R's end
#                                  PKT_PEER has GW_IP
#   stack_lab_set_loss PCT IP...   drop PCT % of forwarded frames from and to each IP (0: none)
#   stack_lab_drops                frames the loss rules dropped since the last set_loss
#   nsx CMD... / rx CMD...         run in K / in R
#   stack_lab_pids                 array: background processes to kill on exit
#   STACK_LAB_ECHO_SERVER          Python kernel echo server on port 7 (a thread per connection)
#   STACK_LAB_ECHO_CLIENT          lab/stack_echo_client.py (hash-checked echo client), absolute path
#   stack_lab_bg CMD...            CMD in the background, its pid in stack_lab_pids
#   stack_lab_stop_bg              stop (and forget) what stack_lab_bg started
#   stack_lab_start_echo_server    STACK_LAB_ECHO_SERVER in K (stack_lab_bg), back once it listens
#   stack_lab_wait_ping IP [TRIES] until IP answers (TRIES x 0.1 s, default 100), then 3 of 3 pings
#   stack_lab_check_echo LABEL IP BYTES [LIMIT]  a kernel client in K sends BYTES to IP's echo and
#                                  checks the SHA-256 of what comes back (timeout LIMIT s, default 150)
#   stack_lab_check_connect LABEL CMD...  CMD is a `weft stack connect --echo-check` run; passes when
#                                  its JSON says "match":true (timeout 150 s)
# The check functions print "LABEL: result" or "FAIL LABEL: ..." and return 1 on failure.

stack_lab_pids=()
stack_lab_namespaces=()
STACK_LAB_ECHO_CLIENT=$(readlink -f "$(dirname "${BASH_SOURCE[0]}")/stack_echo_client.py")

stack_lab_cleanup() {
  local p ns
  for p in "${stack_lab_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  # Whatever still runs inside the namespaces (kernel echo servers started with ip netns exec).
  for ns in "${stack_lab_namespaces[@]}"; do
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill "$p" 2>/dev/null || true; done
  done
  wait 2>/dev/null || true
  for ns in "${stack_lab_namespaces[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
}

stack_lab_init() {  # TAG: a short word in the names, so a leftover namespace says who made it
  local tag=$1
  R=wst-$tag-r-$$ K=wst-$tag-k-$$
  TAP=wst$tag$((RANDOM % 1000))
  N1=10.$((90 + RANDOM % 60)).$((RANDOM % 250))   # stack <-> R over the TAP
  N2=10.$((150 + RANDOM % 60)).$((RANDOM % 250))  # R <-> K over a veth
  STACK_IP=$N1.2 GW_IP=$N1.1 KERN_IP=$N2.2
  trap stack_lab_cleanup EXIT
  ip netns add "$R"
  stack_lab_namespaces+=("$R")
  ip -n "$R" link set lo up
  ip netns exec "$R" sysctl -qw net.ipv4.ip_forward=1
  stack_lab_add_peer "$K" "$N2" "$KERN_IP"
}

stack_lab_add_peer() {  # NS NET IP
  local ns=$1 net=$2 ip=$3 vr=wstr$((RANDOM % 10000)) vp=wstp$((RANDOM % 10000))
  ip netns add "$ns"
  stack_lab_namespaces+=("$ns")
  ip -n "$ns" link set lo up
  ip link add "$vr" netns "$R" type veth peer name "$vp" netns "$ns"
  ip -n "$R" addr add "$net.1/24" dev "$vr"
  ip -n "$R" link set "$vr" up
  ip -n "$ns" addr add "$ip/24" dev "$vp"
  ip -n "$ns" link set "$vp" up
  ip -n "$ns" route add default via "$net.1"
  # A load generator's setting: a client that closes first (wrk reading a `Connection: close`
  # answer before its FIN) may connect again from a port its own TIME-WAIT holds (timestamps keep
  # that safe). Without it, 3 s of wrk at 10,000-20,000 connections a second leave about 14,000
  # TIME-WAITs here, and every later run in the next minute, whichever server it measures, waits
  # for a free port (about 1,000 requests/s).
  ip netns exec "$ns" sysctl -qw net.ipv4.tcp_tw_reuse=1
  # One segment per packet (no GSO super-packets), so the loss counts segments for kernel senders
  # as it does for the stack's frames (there is no ethtool on this host to turn TSO off).
  ip -n "$R" link set "$vr" gso_max_segs 1
  ip -n "$ns" link set "$vp" gso_max_segs 1
}

stack_lab_add_packet_link() {  # NS: the stack runs in NS (ip netns exec NS weft stack --device packet)
  local ns=$1 vr=wstq$((RANDOM % 10000))
  PKT_IF=wstk$((RANDOM % 10000)) PKT_PEER=$vr
  ip netns add "$ns"
  stack_lab_namespaces+=("$ns")
  ip -n "$ns" link set lo up
  ip link add "$vr" netns "$R" type veth peer name "$PKT_IF" netns "$ns"
  ip -n "$R" addr add "$GW_IP/24" dev "$vr"
  ip -n "$R" link set "$vr" up
  # The kernel keeps out of the stack's way on PKT_IF: no IPv4 address, no IPv6 either.
  ip netns exec "$ns" sysctl -qw "net.ipv6.conf.$PKT_IF.disable_ipv6=1"
  ip -n "$ns" link set "$PKT_IF" up
  # As for the peers: one segment per packet from R's kernel (see stack_lab_add_peer).
  ip -n "$R" link set "$vr" gso_max_segs 1
}

# stack_lab_nginx_conf DIR: DIR/nginx.conf for the benches' nginx in the stack's namespace: one
# worker, no master, in the foreground, sendfile, keep-alive without a limit, serving DIR/www on
# STACK_IP:8080, its pid, log and temporary files in DIR (DIR/tmp must exist).
stack_lab_nginx_conf() {
  local W=$1
  cat >"$W/nginx.conf" <<EOC
daemon off; master_process off; worker_processes 1; pid $W/nginx.pid; error_log $W/nginx.err warn;
events { worker_connections 4096; }
http { access_log off; sendfile on; keepalive_requests 1000000;
  client_body_temp_path $W/tmp; proxy_temp_path $W/tmp; fastcgi_temp_path $W/tmp; uwsgi_temp_path $W/tmp; scgi_temp_path $W/tmp;
  server { listen $STACK_IP:8080; root $W/www; } }
EOC
}

nsx() { ip netns exec "$K" "$@"; }
rx() { ip netns exec "$R" "$@"; }

stack_lab_set_loss() {  # PCT IP...: each direction, for each address
  local pct=$1 per_mille ip
  shift
  rx nft delete table inet wstloss 2>/dev/null || true
  [[ $pct == 0 ]] && return 0
  per_mille=$(python3 -c "print(round($pct * 10))")  # numgen gives 0..999: 0.1 % -> 1 in 1000
  rx nft add table inet wstloss
  rx nft add chain inet wstloss passing '{ type filter hook forward priority 0; policy accept; }'
  local pick=(numgen random mod 1000 '<' "$per_mille")
  ((per_mille >= 1000)) && pick=()  # 100 %: the address is cut off
  for ip in "$@"; do
    rx nft add rule inet wstloss passing ip saddr "$ip" "${pick[@]}" counter drop
    rx nft add rule inet wstloss passing ip daddr "$ip" "${pick[@]}" counter drop
  done
}

stack_lab_drops() {
  rx nft list table inet wstloss 2>/dev/null | grep -o 'packets [0-9]*' | awk '{s+=$2} END {print s+0}'
}

STACK_LAB_ECHO_SERVER='
import socket, threading
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); ls.bind(("0.0.0.0", 7)); ls.listen(16)
def serve(c):
    while True:
        b = c.recv(1 << 20)
        if not b: break
        c.sendall(b)
    c.close()
while True:
    c, _ = ls.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()
'

stack_lab_bg() {
  "$@" &
  stack_lab_pids+=($!)
}

stack_lab_stop_bg() {
  local p
  for p in "${stack_lab_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${stack_lab_pids[@]}"; do wait "$p" 2>/dev/null || true; done
  stack_lab_pids=()
}

stack_lab_start_echo_server() {
  stack_lab_bg nsx python3 -c "$STACK_LAB_ECHO_SERVER"
  for _ in $(seq 50); do nsx ss -ltn 2>/dev/null | grep -q ':7 ' && return 0; sleep 0.1; done
  echo "FAIL: the kernel echo server in $K never listened"; return 1
}

stack_lab_wait_ping() {  # IP [TRIES]
  local ip=$1 tries=${2:-100}
  for _ in $(seq "$tries"); do nsx ping -c 1 -W 1 "$ip" >/dev/null 2>&1 && break; sleep 0.1; done
  if nsx ping -c 3 -i 0.2 -W 2 "$ip" >/dev/null; then echo "ping: 3 of 3 answered"; else echo "FAIL: ping $ip"; return 1; fi
}

stack_lab_check_echo() {  # LABEL IP BYTES [LIMIT]
  local label=$1 ip=$2 n=$3 limit=${4:-150} out start
  start=$(date +%s.%N)
  if out=$(timeout "$limit" ip netns exec "$K" python3 "$STACK_LAB_ECHO_CLIENT" "$ip" "$n"); then
    echo "$label: $out ($(python3 -c "print(f'{$(date +%s.%N) - $start:.1f}')") s)"
  else
    echo "FAIL $label: ${out:-timeout}"; return 1
  fi
}

stack_lab_check_connect() {  # LABEL CMD...
  local label=$1 out
  shift
  if out=$(timeout 150 "$@" 2>/dev/null) && grep -q '"match":true' <<<"$out"; then
    echo "$label: $out"
  else
    echo "FAIL $label: ${out:-timeout}"; return 1
  fi
}
