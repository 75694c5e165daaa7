#!/usr/bin/env bash
# Lab test (root): programs nobody here wrote, unmodified, on weft's stack through `weft stack run`
# (LD_PRELOAD of libweft_preload.so, src/posix). The stack takes P's end of a veth to the router
# namespace R on AF_PACKET (lab/stack_netns.sh); the kernel peer is in K behind R. Checks:
#  - a device that cannot be opened stops `weft stack run` with the reason before the program runs;
#  - socat as a server and as a client, 8 MiB each way, SHA-256 exact against kernel socat; the
#    server's frames taken in mostly on socat's own thread blocked in select() with
#    --drive-in-waits (--verbose's counts);
#  - curl on weft downloading from a kernel HTTP server, SHA-256 exact;
#  - iperf3 on weft as server (both directions, -R) and as client against kernel iperf3, 2 s each:
#    every run must end with bytes received;
#  - redis-server on weft, redis-benchmark (SET/GET, 50 clients, pipelining 1 and 16) from K, and
#    a value written and read back through redis-cli; one client's lone requests answered with a
#    p50 under 0.5 ms (no ring timeout), the stack run mostly on redis's own thread (--verbose's
#    count at exit: run to completion, not through the stack thread);
#  - nginx on weft (epoll, sendfile, one worker): curl from K downloads 1 KiB and 1 MiB files,
#    alone and on one keep-alive connection, SHA-256 exact; under wrk with a new connection per
#    request, under 2.5 sendmmsg a request (the stack's answers leave with nginx's); a client
#    coming back on the port of its last connection while nginx's side still waits in TIME-WAIT
#    connects at once: no RST, no retransmission from the client (RFC 6191);
#  - epoll_wait on a weft socket never returns before its timeout (20 waits of 50 ms);
#  - a non-blocking connect asked again once writable answers 0, then EISCONN (hiredis); SO_RCVTIMEO
#    bounds recv and accept (EAGAIN); a connection read through a dup of a dup after the first two
#    closed; a UDP MSG_PEEK leaves the datagram for the read after it;
#  - connect errors as the kernel's: ECONNREFUSED at once, EHOSTUNREACH after ARP's 3 s for a host
#    on the link that is not there, ENETUNREACH at once for the router's "no route";
#  - SO_KEEPALIVE with TCP_KEEP*: the probes keep a connection while the peer answers and end it
#    (ETIMEDOUT) once the peer is gone;
#    redis-cli on weft talks to a kernel redis, socat UDP-RECVFROM answers through EXEC:cat;
#  - one stack per address: a second `weft stack run` with it is refused, naming the holder;
#  - nginx left in daemon mode: its parent's exit names `daemon off` and the listener it loses, and
#    its children do not keep the interface claimed;
#  - what the layer refuses says so: an AF_INET6 socket fails with EAFNOSUPPORT and one log line,
#    loopback still goes to the kernel.
set -euo pipefail
WEFT=${1:?usage: $0 path/to/weft}
[[ $(id -u) == 0 ]] || { echo "SKIP: needs root"; exit 77; }
for p in socat curl iperf3 redis-server redis-cli redis-benchmark nginx; do command -v "$p" >/dev/null || { echo "SKIP: $p not installed"; exit 77; }; done
PY=/usr/bin/python3  # not a pyenv shim: a shell wrapper would be the process that owns the stack
. "$(dirname "$0")/../../lab/stack_netns.sh"
stack_lab_init run
P=wst-run-p-$$
stack_lab_add_packet_link "$P"
RUN=("$WEFT" stack run --ifname "$PKT_IF" --ip "$STACK_IP/24" --gateway "$GW_IP" --)
px() { ip netns exec "$P" "$@"; }
work=$(mktemp -d)
trap 'stack_lab_cleanup; rm -rf "$work"' EXIT
head -c 8388608 /dev/urandom >"$work/in"
want=$(sha256sum <"$work/in" | cut -d' ' -f1)
fail=0
check() {  # LABEL FILE
  local got
  got=$(sha256sum <"$2" | cut -d' ' -f1)
  if [[ $got == "$want" ]]; then echo "$1: SHA-256 exact ($(stat -c %s "$2") bytes)"; else echo "FAIL $1: SHA-256 $got, want $want ($(stat -c %s "$2") bytes)"; fail=1; fi
}
wait_listen() {  # NSCMD PORT
  for _ in $(seq 100); do "$1" ss -ltn 2>/dev/null | grep -q ":$2 " && return 0; sleep 0.05; done
  return 1
}

# `weft stack run ... -- touch MARKER` must fail before the program runs, with output matching PATTERN.
expect_refused() {  # LABEL PATTERN WEFT-ARGS... (the program, `touch $work/started`, is added)
  local label=$1 pattern=$2 out
  shift 2
  rm -f "$work/started"
  if out=$(px timeout 10 "$WEFT" stack run "$@" -- touch "$work/started" 2>&1); then
    echo "FAIL $label: weft stack run succeeded: $out"; fail=1
  elif [[ -e $work/started ]]; then
    echo "FAIL $label: the program ran although weft stack run refused"; fail=1
  elif grep -q "$pattern" <<<"$out"; then
    echo "$label: $out"
  else
    echo "FAIL $label: unclear message: $out"; fail=1
  fi
}

echo "== a device that cannot be opened: weft stack run says why and never starts the program"
expect_refused "missing device" "cannot open nosuchif0" --ifname nosuchif0 --ip "$STACK_IP/24"

echo "== socat on weft as a server (P), kernel socat client in $K"
rm -f "$work/out"
RUNV=("${RUN[@]:0:3}" --verbose "${RUN[@]:3}")
RUND=("${RUN[@]:0:3}" --verbose --drive-in-waits "${RUN[@]:3}")
stack_lab_bg ip netns exec "$P" timeout 60 "${RUND[@]}" socat -u TCP-LISTEN:9000,reuseaddr "CREATE:$work/out" 2>"$work/socat.err"
stack_lab_wait_ping "$STACK_IP" 100 || fail=1
for _ in $(seq 50); do nsx socat -u "FILE:$work/in" "TCP:$STACK_IP:9000" 2>/dev/null && break; sleep 0.1; done
# The client is done when its last bytes are sent; the server still writes what it holds: wait for
# the whole file (or the server's own exit) before stopping it, as the client case does below.
for _ in $(seq 200); do
  [[ $(stat -c %s "$work/out" 2>/dev/null || echo 0) -ge 8388608 ]] && break
  kill -0 "${stack_lab_pids[0]}" 2>/dev/null || break
  sleep 0.05
done
for _ in $(seq 100); do grep -q "runs on the program's threads" "$work/socat.err" && break; sleep 0.1; done
stack_lab_stop_bg
check "socat server on weft" "$work/out"
# socat blocks in select(): with --drive-in-waits the thread blocked there drives the device (run
# to completion without an event loop), so most of the frames are taken in on socat's thread, by
# a run in its wait or by the catch-up before its read. (Counted in frames, not runs: a socat that
# a busy machine keeps from blocking finds the data ready and takes whole rings in a catch-up;
# without --drive-in-waits the stack thread takes in 58-89 % of the frames.)
frames=$(sed -n "s/.* \([0-9]*\) frames taken in on the program's threads, \([0-9]*\) on the stack thread.*/\1 \2/p" "$work/socat.err")
runs=$(sed -n "s/.*stack: \([0-9]*\) runs on the program's threads, .* \([0-9]*\) by the stack thread in all.*/\1 \2/p" "$work/socat.err")
if [[ -n $frames ]] && ((${frames% *} >= 100 && ${frames#* } * 3 < ${frames% *})); then
  echo "socat: ${frames% *} frames taken in on socat's thread, ${frames#* } on the stack thread (runs: '$runs')"
else
  echo "FAIL socat: want most frames taken in on socat's thread (blocked in select), got '$frames' (runs: '$runs'): $(tail -3 "$work/socat.err")"; fail=1
fi

echo "== socat on weft as a client (P), kernel socat server in $K"
rm -f "$work/out"
stack_lab_bg nsx timeout 60 socat -u TCP-LISTEN:9001,reuseaddr "CREATE:$work/out"
wait_listen nsx 9001 || { echo "FAIL: kernel socat never listened"; fail=1; }
px timeout 60 "${RUN[@]}" socat -u "FILE:$work/in" "TCP:$KERN_IP:9001" || { echo "FAIL: socat client exited $?"; fail=1; }
for _ in $(seq 100); do [[ $(stat -c %s "$work/out" 2>/dev/null || echo 0) -ge 8388608 ]] && break; sleep 0.05; done
sleep 0.2
stack_lab_stop_bg
check "socat client on weft" "$work/out"

echo "== curl on weft (P) from a kernel HTTP server in $K"
stack_lab_bg nsx "$PY" -m http.server --bind "$KERN_IP" --directory "$work" 8080
wait_listen nsx 8080 || { echo "FAIL: the kernel HTTP server never listened"; fail=1; }
rm -f "$work/got"
px timeout 60 "${RUN[@]}" curl -sS -o "$work/got" "http://$KERN_IP:8080/in" || { echo "FAIL: curl exited $?"; fail=1; }
check "curl on weft" "$work/got"
stack_lab_stop_bg

echo "== iperf3 on weft (P) against kernel iperf3 in $K"
iperf_bytes() { "$PY" -c 'import json,sys
try: print(int(json.load(sys.stdin)["end"]["sum_received"]["bytes"]))
except Exception: print(0)'; }
for rev in "" -R; do
  stack_lab_bg ip netns exec "$P" "${RUN[@]}" iperf3 -s -4 -1 -p 5201 >/dev/null
  # A probe connection would be taken for a client by the one-off server: retry the real one.
  for _ in $(seq 30); do
    b=$(nsx timeout 30 iperf3 -c "$STACK_IP" -p 5201 -t 2 -J $rev 2>/dev/null | iperf_bytes) || true
    ((b > 0)) && break
    sleep 0.2
  done
  stack_lab_stop_bg
  if ((b > 1000000)); then echo "iperf3 server on weft ${rev:-(weft receives)}: $b bytes"; else echo "FAIL iperf3 server on weft $rev: $b bytes"; fail=1; fi
done
stack_lab_bg nsx iperf3 -s -4 -1 -p 5202 >/dev/null
wait_listen nsx 5202 || true
b=$(px timeout 30 "${RUN[@]}" iperf3 -c "$KERN_IP" -p 5202 -t 2 -J 2>/dev/null | iperf_bytes) || true
stack_lab_stop_bg
if ((b > 1000000)); then echo "iperf3 client on weft: $b bytes"; else echo "FAIL iperf3 client on weft: $b bytes"; fail=1; fi

echo "== redis-server on weft (P), redis-cli and redis-benchmark in $K"
stack_lab_bg ip netns exec "$P" "${RUNV[@]}" redis-server --bind "$STACK_IP" --port 6390 --save '' --appendonly no --protected-mode no --loglevel warning >/dev/null 2>"$work/redis.err"
for _ in $(seq 100); do [[ $(nsx redis-cli -h "$STACK_IP" -p 6390 ping 2>/dev/null) == PONG ]] && break; sleep 0.1; done
val=$(head -c 3000 /dev/urandom | base64 -w0)
nsx redis-cli -h "$STACK_IP" -p 6390 set k "$val" >/dev/null
if [[ $(nsx redis-cli -h "$STACK_IP" -p 6390 get k) == "$val" ]]; then echo "redis: a 4 KiB value written and read back"; else echo "FAIL redis get"; fail=1; fi
for pl in 1 16; do
  out=$(nsx timeout 60 redis-benchmark -h "$STACK_IP" -p 6390 -t set,get -n 4000 -c 50 -P "$pl" --csv 2>/dev/null || true)
  if [[ $(grep -cE '^"(SET|GET)"' <<<"$out") == 2 ]]; then
    echo "redis-benchmark -P $pl: $(grep -E '^"(SET|GET)"' <<<"$out" | cut -d, -f1,2 | tr '\n' ' ')"
  else
    echo "FAIL redis-benchmark -P $pl: $out"; fail=1
  fi
done
# One client, one request at a time: each lone request is answered on redis's own thread, woken in
# its epoll_wait by the frame (run to completion), not after a ring's block timeout (1 ms on
# TPACKET_V3) nor through the stack thread. The kernel's p50 here is ~0.03 ms.
out=$(nsx timeout 60 redis-benchmark -h "$STACK_IP" -p 6390 -t ping -n 2000 -c 1 --csv 2>/dev/null || true)
p50=$(awk -F, '/^"PING_MBULK"/ {gsub(/"/, "", $5); print $5}' <<<"$out")
if [[ -n $p50 ]] && awk -v p="$p50" 'BEGIN { exit !(p < 0.5) }'; then
  echo "redis: a lone request answered in $p50 ms (p50 of 2000, one client)"
else
  echo "FAIL redis: a lone request's p50 is '$p50' ms, want < 0.5 (no ring timeout): $out"; fail=1
fi
stack_lab_stop_bg
for _ in $(seq 100); do grep -q "runs on the program's threads" "$work/redis.err" && break; sleep 0.1; done
runs=$(sed -n "s/.*stack: \([0-9]*\) runs on the program's threads, \([0-9]*\) by the stack thread.*/\1 \2/p" "$work/redis.err")
if [[ -n $runs ]] && ((${runs% *} > 2000 && ${runs#* } < ${runs% *} / 10)); then
  echo "redis: the stack ran ${runs% *} times on redis's thread, ${runs#* } times on the stack thread"
else
  echo "FAIL redis: want most of the stack's runs on redis's own thread, got '$runs': $(tail -3 "$work/redis.err")"; fail=1
fi

echo "== nginx on weft (P), curl in $K"
mkdir -p "$work/www" "$work/ngtmp"
head -c 1024 /dev/urandom >"$work/www/1k"
head -c 1048576 /dev/urandom >"$work/www/1m"
cat >"$work/nginx.conf" <<EOC
daemon off; master_process off; worker_processes 1; pid $work/nginx.pid; error_log $work/nginx.err warn;
events { worker_connections 1024; }
http { access_log off; sendfile on;
  client_body_temp_path $work/ngtmp; proxy_temp_path $work/ngtmp; fastcgi_temp_path $work/ngtmp; uwsgi_temp_path $work/ngtmp; scgi_temp_path $work/ngtmp;
  server { listen $STACK_IP:8080; root $work/www; } }
EOC
stack_lab_bg ip netns exec "$P" "${RUN[@]}" nginx -c "$work/nginx.conf" -e "$work/nginx.err"
for _ in $(seq 100); do nsx bash -c "exec 3<>/dev/tcp/$STACK_IP/8080" 2>/dev/null && break; sleep 0.1; done
for f in 1k 1m; do
  want=$(sha256sum <"$work/www/$f" | cut -d' ' -f1)
  nsx timeout 30 curl -sS -o "$work/ng_$f" "http://$STACK_IP:8080/$f" || true
  check "nginx $f" "$work/ng_$f"
  rm -f "$work/ka1" "$work/ka2"
  nsx timeout 30 curl -sSv -o "$work/ka1" -o "$work/ka2" "http://$STACK_IP:8080/$f" "http://$STACK_IP:8080/$f" 2>"$work/curl.err" || true
  check "nginx $f, second request on the keep-alive connection" "$work/ka2"
  grep -q "Re-using existing connection" "$work/curl.err" || { echo "FAIL nginx $f: curl did not reuse the connection"; fail=1; }
done
stack_lab_stop_bg
# A new connection per request, 8 at a time: what the stack answers in a loop pass (SYN-ACKs, the
# ACKs of FINs) waits for the responses and FINs nginx sends in the same pass, and all leave in one
# sendmmsg when nginx waits again (3.0 sendmmsg a request when each run of the stack flushed its
# own; 1.1 under wrk -c 16 after).
if command -v wrk >/dev/null; then
  stack_lab_bg ip netns exec "$P" "${RUNV[@]}" nginx -c "$work/nginx.conf" -e "$work/nginx.err" 2>"$work/nginx.verbose"
  for _ in $(seq 100); do nsx bash -c "exec 3<>/dev/tcp/$STACK_IP/8080" 2>/dev/null && break; sleep 0.1; done
  reqs=$(nsx wrk -t 2 -c 8 -d 2s -H "Connection: close" "http://$STACK_IP:8080/1k" 2>/dev/null | awk '/requests in/ {print $1}')
  # A client that comes back from the same port while nginx's side of the last connection still
  # waits in TIME-WAIT (the kernel's ephemeral ports come round within seconds at this rate): each
  # SYN is newer, so it reopens the 4-tuple at once (RFC 6191). Before, it got the wait's ACK,
  # answered with an RST and sent its SYN again (Linux's SYN-SENT re-arms its timer at the 2-tick
  # minimum for such an ACK: 4-10 ms a connection; wrk's 16 connections at 2,700 requests/s).
  # The client's RSTs and retransmissions say which happened.
  client_counts() { nsx nstat -asz TcpOutRsts TcpRetransSegs | awk '/^Tcp/ {printf "%s ", $2}'; }
  before=$(client_counts)
  worst=$(nsx timeout 30 "$PY" -c '
import socket, sys, time
port, worst = 0, 0.0
for i in range(5):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port))
    port = s.getsockname()[1]
    t = time.monotonic()
    s.connect((sys.argv[1], 8080))
    worst = max(worst, time.monotonic() - t)
    s.sendall(b"GET /1k HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    n = 0
    while b := s.recv(65536):
        n += len(b)
    s.close()
    if n < 1024:
        sys.exit("short answer: %d bytes" % n)
    time.sleep(0.05)  # our FIN acknowledged: the port is free here, nginx waits
print("%.1f" % (worst * 1000))
' "$STACK_IP" 2>&1) || true
  after=$(client_counts)
  stack_lab_stop_bg
  read -r rst0 rtx0 <<<"$before"
  read -r rst1 rtx1 <<<"$after"
  reopened=$(sed -n 's/.* \([0-9]*\) TIME-WAITs reopened.*/\1/p' "$work/nginx.verbose" "$work/nginx.err" | tail -1)
  if [[ $worst =~ ^[0-9.]+$ && -n $rst1 ]] && ((rst1 == rst0 && rtx1 == rtx0)) && [[ -n $reopened ]] && ((reopened >= 4)); then
    echo "nginx TIME-WAIT: 5 connections from one port, no RST and no retransmission from the client, slowest connect $worst ms, $reopened waits reopened"
  else
    echo "FAIL nginx TIME-WAIT: a client back on its port: '$((rst1 - rst0))' RSTs and '$((rtx1 - rtx0))' retransmissions from the client (want 0, 0), slowest connect '$worst' ms, '$reopened' waits reopened (want >= 4)"; fail=1
  fi
  # (nginx puts its error log on descriptor 2: the exit line is in nginx.err)
  batches=$(cat "$work/nginx.verbose" "$work/nginx.err" | sed -n 's/.* \([0-9]*\) sendmmsg batches.*/\1/p' | tail -1)
  if [[ -n $reqs && -n $batches ]] && ((reqs > 100 && batches * 10 < reqs * 25)); then
    echo "nginx Connection: close: $reqs requests, $batches sendmmsg batches (want < 2.5 a request)"
  else
    echo "FAIL nginx Connection: close: '$reqs' requests, '$batches' sendmmsg batches, want < 2.5 a request: $(tail -3 "$work/nginx.err")"; fail=1
  fi
else
  echo "SKIP nginx Connection: close batching: wrk not installed"
fi

echo "== epoll_wait on a weft socket never returns before its timeout (as the kernel's)"
# An idle listener on weft in an epoll set (which then also watches the device): 20 waits of 50 ms
# that nothing ends early. Rounded down, a wait came back up to 1 ms before its timeout, and redis
# then spun in epoll_wait(0) until its timer came due.
out=$(px timeout 30 "${RUN[@]}" "$PY" -c '
import select, socket, time
ls = socket.socket(); ls.bind(("0.0.0.0", 9101)); ls.listen(1)
ep = select.epoll(); ep.register(ls.fileno(), select.EPOLLIN); short = []
for _ in range(20):
    t0 = time.monotonic_ns(); ev = ep.poll(0.05); ns = time.monotonic_ns() - t0
    if not ev and ns < 50_000_000: short.append(ns)
print("early", len(short), min(short, default=0))
' 2>&1) || true
if [[ $out == "early 0 0" ]]; then
  echo "epoll_wait timeout: none of 20 waits of 50 ms came back early"
else
  echo "FAIL epoll_wait timeout: want 'early 0 0' (waits that returned before 50 ms, the shortest in ns), got: $out"; fail=1
fi

# A kernel listener `ls` on PORT in K (python, in the background), then BODY; back once it listens.
kernel_listener() {  # PORT BODY
  stack_lab_bg ip netns exec "$K" "$PY" -c "import socket, time
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(('0.0.0.0', $1)); ls.listen(4)
$2"
  wait_listen nsx "$1" || { echo "FAIL: the kernel listener on $1 never listened"; fail=1; }
}

echo "== socket semantics programs lean on: connect() asked again, SO_RCVTIMEO, dup, UDP MSG_PEEK"
# hiredis (redis-cli, every hiredis client) polls a non-blocking connect for POLLOUT and then calls
# connect() again, wanting 0 (then EISCONN); weft said EALREADY for good and redis-cli on weft
# reached no server. socat's UDP-RECVFROM peeks at a datagram to learn its sender, then reads it;
# the peek took it. iperf3 and hiredis's command timeouts set SO_RCVTIMEO, which weft refused,
# and python's socket.dup() and socket(fileno=) got EOPNOTSUPP.
kernel_listener 9102 'conns = [ls.accept()[0] for _ in range(2)]
third = ls.accept()[0]; third.sendall(b"through-dups"); third.close()
time.sleep(30)'
out=$( (px timeout 30 "${RUN[@]}" "$PY" -c '
import errno, select, socket, struct, sys, time
kern, port = sys.argv[1], 9102
s = socket.socket(); s.setblocking(False)
print("first", errno.errorcode.get(s.connect_ex((kern, port)), "0"))
p = select.poll(); p.register(s, select.POLLOUT); p.poll(5000)
print("again", errno.errorcode.get(s.connect_ex((kern, port)), "0"))
print("third", errno.errorcode.get(s.connect_ex((kern, port)), "0"))
c = socket.create_connection((kern, port))
c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", 0, 200000))
print("rcvtimeo", struct.unpack("ll", c.getsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, 16)))
t0 = time.monotonic()
try:
    c.recv(10); print("recv returned")
except OSError as e:
    print("recv", errno.errorcode[e.errno], "%.1f" % (time.monotonic() - t0))
ls = socket.socket(); ls.bind(("0.0.0.0", 9103)); ls.listen(1)
ls.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", 0, 100000))
try:
    ls.accept(); print("accept returned")
except OSError as e:
    print("accept", errno.errorcode[e.errno])
c3 = socket.create_connection((kern, port)); d = c3.dup(); c3.close()  # dup(), then F_DUPFD
f = socket.socket(fileno=__import__("fcntl").fcntl(d.fileno(), __import__("fcntl").F_DUPFD, 50)); d.close()
got = b""
while len(got) < 12:
    x = f.recv(100)
    if not x: break
    got += x
print("dup", got.decode(), f.fileno() >= 50)
import ctypes, os
class TS(ctypes.Structure): _fields_ = [("s", ctypes.c_long), ("ns", ctypes.c_long)]
ep = select.epoll(); ep.register(c.fileno(), select.EPOLLIN); evs = ctypes.create_string_buffer(48)
t0 = time.monotonic_ns(); n = ctypes.CDLL(None).epoll_pwait2(ep.fileno(), evs, 4, ctypes.byref(TS(0, 30_000_000)), None)
print("pwait2", n if n <= 0 else "ready", time.monotonic_ns() - t0 >= 30_000_000)
try:
    os.splice(c.fileno(), os.pipe()[1], 10); print("spliced")
except OSError as e:
    print("splice", errno.errorcode[e.errno])
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("0.0.0.0", 9104)); u.settimeout(10)
print("ready", flush=True)
d1, a1 = u.recvfrom(100, socket.MSG_PEEK); d2, a2 = u.recvfrom(100)
print("peek", d1 == d2 == b"dgram", a1 == a2)
' "$KERN_IP" 2>&1 & sleep 3; echo -n dgram | nsx socat -u - "UDP:$STACK_IP:9104"; wait) ) || true
stack_lab_stop_bg
want_sem="first EINPROGRESS|again 0|third EISCONN|rcvtimeo (0, 200000)|recv EAGAIN 0.2|accept EAGAIN|dup through-dups True|pwait2 0 True|splice EINVAL|ready|peek True True"
got_sem=$(grep -v '^weft-preload\[' <<<"$out" | tr '\n' '|' | sed 's/|$//')
if [[ $got_sem == "$want_sem" ]] && [[ $(grep -c '^weft-preload\[[0-9]*\]: splice() with a weft socket' <<<"$out") == 1 ]]; then
  echo "socket semantics: $got_sem"
else
  echo "FAIL socket semantics: want [$want_sem] and one splice log line, got [$got_sem]: $out"; fail=1
fi

echo "== connect errors as the kernel gives them: refused, no host on the link, no route"
# A host on the link that never answers ARP: EHOSTUNREACH once ARP gives up (3 s; it waited out
# the SYN retries, over two minutes); R's "no route" ICMP: ENETUNREACH (it said EHOSTUNREACH).
out=$(px timeout 60 "${RUN[@]}" "$PY" -c '
import errno, socket, sys, time
for host, port in ((sys.argv[1], 9999), (sys.argv[2], 80), ("10.250.250.250", 80)):
    s = socket.socket(); t0 = time.monotonic()
    e = s.connect_ex((host, port))
    print(errno.errorcode.get(e, str(e)), round(time.monotonic() - t0))
' "$KERN_IP" "${STACK_IP%.*}.77" 2>&1 | tr '\n' ' ') || true
if [[ $out == "ECONNREFUSED 0 EHOSTUNREACH 3 ENETUNREACH 0 " ]]; then
  echo "connect errors: $out"
else
  echo "FAIL connect errors: want 'ECONNREFUSED 0 EHOSTUNREACH 3 ENETUNREACH 0' (error, seconds), got: $out"; fail=1
fi

echo "== SO_KEEPALIVE: an idle connection's probes keep it while the peer answers, and end it once the peer is gone"
# Before, SO_KEEPALIVE was recorded and nothing probed: a server on weft (redis's tcp-keepalive)
# never noticed a client that vanished.
kernel_listener 9106 'c = ls.accept()[0]; time.sleep(40)'
px timeout 40 "${RUN[@]}" "$PY" -c '
import errno, socket, sys, time
c = socket.create_connection((sys.argv[1], 9106))
c.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
for opt, v in ((socket.TCP_KEEPIDLE, 1), (socket.TCP_KEEPINTVL, 1), (socket.TCP_KEEPCNT, 2)):
    c.setsockopt(socket.IPPROTO_TCP, opt, v)
t0 = time.monotonic(); print("ready", flush=True)
try:
    print("recv returned", c.recv(10))
except OSError as e:
    print("recv", errno.errorcode[e.errno], round(time.monotonic() - t0))
' "$KERN_IP" >"$work/ka.out" 2>&1 &
ka=$!
for _ in $(seq 50); do grep -q ready "$work/ka.out" && break; sleep 0.1; done
sleep 3.5  # three probes answered (at 1, 2 and 3 s)
stack_lab_set_loss 100 "$STACK_IP"
wait "$ka" || true
stack_lab_set_loss 0
stack_lab_stop_bg
# Gone at 3.5 s: the probe at 4 s and 5 s unanswered, the end at 6 s.
ka_out=$(tr '\n' ' ' <"$work/ka.out")
if [[ $ka_out =~ recv\ ETIMEDOUT\ ([0-9]+) ]] && ((BASH_REMATCH[1] >= 5 && BASH_REMATCH[1] <= 8)); then
  echo "keepalive: $ka_out"
else
  echo "FAIL keepalive: want 'recv ETIMEDOUT' 5-8 s after the start, got: $ka_out"; fail=1
fi

echo "== redis-cli on weft against a kernel redis (hiredis's connect); socat answering UDP through EXEC"
stack_lab_bg ip netns exec "$K" redis-server --port 6390 --bind "$KERN_IP" --save "" --appendonly no --protected-mode no
for _ in $(seq 50); do nsx redis-cli -h "$KERN_IP" -p 6390 ping >/dev/null 2>&1 && break; sleep 0.1; done
set_out=$(px timeout 20 "${RUN[@]}" redis-cli -h "$KERN_IP" -p 6390 set weft-key from-weft 2>/dev/null) || true
get_out=$(nsx redis-cli -h "$KERN_IP" -p 6390 get weft-key 2>&1) || true
stack_lab_stop_bg
if [[ $set_out == OK && $get_out == from-weft ]]; then
  echo "redis-cli on weft: SET answered OK, the kernel's redis holds the value"
else
  echo "FAIL redis-cli on weft: set '$set_out', get '$get_out'"; fail=1
fi
stack_lab_bg ip netns exec "$P" timeout 30 "${RUN[@]}" socat UDP-RECVFROM:9105 EXEC:cat
stack_lab_wait_ping "$STACK_IP" 100 || fail=1
udp_out=$(echo udp-through-cat | nsx timeout 5 socat -t 3 - "UDP:$STACK_IP:9105") || true
stack_lab_stop_bg
if [[ $udp_out == udp-through-cat ]]; then
  echo "socat UDP-RECVFROM on weft: the datagram came back through cat"
else
  echo "FAIL socat UDP-RECVFROM on weft: got '$udp_out'"; fail=1
fi

echo "== one stack per address: a second program with it is refused before it starts"
# Two stacks on one interface with one address (and so one MAC) both take its frames and reset
# each other's connections (a server on weft and a client started on weft beside it: curl's
# download ended in a reset).
stack_lab_bg ip netns exec "$P" timeout 30 "${RUN[@]}" sleep 20 2>"$work/first.err"
for _ in $(seq 100); do px ss -xlp 2>/dev/null | grep -q "@weft-stack-$PKT_IF-02:77:.*\"sleep\"" && break; sleep 0.1; done
if ! px ss -xlp 2>/dev/null | grep -q "@weft-stack-$PKT_IF-02:77:.*\"sleep\""; then
  echo "FAIL one stack per interface: the first program never took $PKT_IF: $(cat "$work/first.err"); $(px ss -xlp | grep weft-stack)"; fail=1
else
  expect_refused "second stack on $PKT_IF" "already carries weft's stack with MAC 02:77:.* in this network namespace (pid [0-9]*, sleep)" \
    --ifname "$PKT_IF" --ip "$STACK_IP/24" --gateway "$GW_IP"
fi
stack_lab_stop_bg

echo "== nginx left in daemon mode: its parent's exit says why its listener went with it"
mkdir -p "$work/ngd"
printf '%s\n' "pid $work/ngd/pid; error_log stderr;" "events {}" \
  "http { access_log off; client_body_temp_path $work/ngd; proxy_temp_path $work/ngd; fastcgi_temp_path $work/ngd; uwsgi_temp_path $work/ngd; scgi_temp_path $work/ngd;" \
  "  server { listen $STACK_IP:8090; root $work; } }" >"$work/ngd.conf"
# (into a file: the daemon keeps the descriptor, and a $(...) would wait for it to exit)
timeout 20 ip netns exec "$P" "${RUN[@]}" nginx -c "$work/ngd.conf" >"$work/ngd.out" 2>&1 || true
for _ in $(seq 20); do [[ -s $work/ngd/pid ]] && break; sleep 0.1; done
# The daemon's children have no stack, and let go of the interface: another program may take it.
after=$(px timeout 10 "${RUN[@]}" echo free 2>&1) || true
[[ -s $work/ngd/pid ]] && kill "$(cat "$work/ngd/pid")" 2>/dev/null
ngd=$(cat "$work/ngd.out")
if grep -q "daemon off" <<<"$ngd" && grep -q "1 listening" <<<"$ngd"; then
  echo "nginx daemon: $(grep -m1 'exit:' <<<"$ngd")"
else
  echo "FAIL nginx daemon: no line saying why: $ngd"; fail=1
fi
if [[ $after == free ]]; then
  echo "nginx daemon: its children left $PKT_IF free for the next program"
else
  echo "FAIL nginx daemon: the interface stayed claimed after the parent's exit: $after"; fail=1
fi

echo "== what the layer does not do, it says: AF_INET6 refused with one log line; loopback to the kernel"
err=$(mktemp)
out=$(px timeout 30 "${RUN[@]}" "$PY" -c '
import errno, socket
try:
    socket.socket(socket.AF_INET6, socket.SOCK_STREAM); print("inet6 allowed")
except OSError as e:
    print("inet6", errno.errorcode[e.errno])
ls = socket.socket(); ls.bind(("127.0.0.1", 0)); ls.listen(1)
c = socket.create_connection(ls.getsockname()); a, _ = ls.accept(); c.sendall(b"x"); print("loopback", a.recv(1))
' 2>"$err") || true
if [[ $out == *"inet6 EAFNOSUPPORT"* && $out == *"loopback b'x'"* ]] && [[ $(grep -c "socket(AF_INET6)" "$err") == 1 ]]; then
  echo "refusals: $(tr '\n' ' ' <<<"$out"); log: $(cat "$err")"
else
  echo "FAIL refusals: out=[$out] log=[$(cat "$err")]"; fail=1
fi
rm -f "$err"
exit $fail
