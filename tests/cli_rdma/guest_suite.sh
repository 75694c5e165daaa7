#!/bin/sh
# Runs inside the Soft-RoCE guest (see run_guest.sh): the rdma CLI fixes that need a device, and
# `weft rdma bench` for every operation, wait mode and QP type, with its parameter check.
# Every command runs under `timeout`, so a hang is a failure, not a stuck suite. Exit 0 if all passed.
set -u
ip=${WRD_IP:-10.9.0.1}
failed=""
# WCR_ONLY="name name": run only these steps (while working on one of them).
step() {
  name=$1; shift
  case " ${WCR_ONLY:-$name} " in *" $name "*) ;; *) return 0 ;; esac
  echo "=== $name"
  if "$@"; then echo "--- ok $name"; else echo "--- FAILED $name"; failed="$failed $name"; fi
}
W="weft --log-level warn"

# A UD message above the MTU is refused at once (exit 2, names the MTU); it used to time out.
ud_above_mtu() {
  out=$(timeout 20 $W rdma pingpong --client "$ip" --qp ud --size 2000 2>&1); rc=$?
  echo "$out"
  [ $rc -eq 2 ] && echo "$out" | grep -q "active MTU" || return 1
  out=$(timeout 20 $W rdma bench --server --qp ud --size 2000 2>&1); rc=$?
  echo "$out"
  [ $rc -eq 2 ] && echo "$out" | grep -q "active MTU" || return 1
  out=$(timeout 20 $W rdma pingpong --server --qp ud --size 2000 2>&1); rc=$?
  echo "$out"
  [ $rc -eq 2 ] && echo "$out" | grep -q "active MTU"
}

# A target whose address handle cannot be made (rxe refuses a link-local GID: EINVAL): ping says
# so and ends (exit 1) instead of waiting for ever for -c probes that are never sent. With a
# second, reachable target the run ends after that one's -c probes.
ping_no_ah() {
  out=$(timeout 30 $W ping rdma -d rxe0 fe80::1 --qpn 17 -c 3 -i 0.05 2>&1); rc=$?
  echo "$out"
  [ $rc -eq 1 ] && echo "$out" | grep -q "fe80::1: cannot probe" || return 1
  out=$(timeout 30 $W ping rdma -d rxe0 fe80::1 "::ffff:$ip" --qpn 17 -c 3 -i 0.05 --timeout 0.5 2>&1); rc=$?
  echo "$out"
  [ $rc -ne 124 ] && echo "$out" | grep -q "cannot probe" && echo "$out" | grep -q "3 sent"
}

# Sizes are bounded like perftest's with a real device too: --size 4294967295 used to wrap the
# buffer maths and crash `pingpong --qp ud`; now a usage error (exit 2) before any verbs.
size_bound() {
  out=$(timeout 20 $W rdma pingpong --client "$ip" --qp ud --size 4294967295 2>&1); rc=$?
  echo "$out"
  [ $rc -eq 2 ] && echo "$out" | grep -q -- "--size" || return 1
  out=$(timeout 20 $W rdma bench --client "$ip" --size 4294967295 2>&1); rc=$?
  echo "$out"
  [ $rc -eq 2 ] && echo "$out" | grep -q -- "--size"
}

# The device is -d/--device in every command, and the older DEVICE:TARGET prefix still works:
# all three spellings reach a real responder (3 answers each).
device_spellings() {
  timeout 60 $W rdma responder -d rxe0 --address "$ip" --discovery "$ip:47190" --duration 40 >/tmp/wcr-resp.out 2>&1 &
  rpid=$!
  i=0; while [ $i -lt 50 ] && ! grep -q 'RDMA responder on' /tmp/wcr-resp.out; do sleep 0.1; i=$((i + 1)); done
  ok=0
  for t in "-d rxe0 $ip" "rxe0:$ip" "--device rxe0 rxe0:$ip"; do
    # shellcheck disable=SC2086
    out=$(timeout 30 $W ping rdma $t --discovery-port 47190 -c 3 -i 0.05 2>&1); rc=$?
    echo "$t: $out" | tail -n 4
    [ $rc -eq 0 ] && echo "$out" | grep -q "3 sent, 3 received" || ok=1
  done
  kill -INT $rpid; wait $rpid
  return $ok
}

port=47110
# bench_pair NAME SERVER_EXTRA -- CLIENT_ARGS...: server and client with the same args; the
# client's output must have a result line.
bench() {
  port=$((port + 1))
  timeout 120 $W rdma bench --server --bind "$ip" --port $port "$@" >/tmp/wcr-srv.out 2>&1 &
  spid=$!
  out=$(timeout 120 $W rdma bench --client "$ip" --port $port --json "$@" 2>&1); crc=$?
  wait $spid; src=$?
  echo "$out"
  [ $crc -eq 0 ] && [ $src -eq 0 ] || { cat /tmp/wcr-srv.out; return 1; }
  # Every line has a positive figure: the message rate (bw) or the median (lat).
  case " $* " in
    *" bw "*) key=msg_rate_mpps ;;
    *) key=t_typical ;;
  esac
  echo "$out" | awk -v k="\"$key\":" 'index($0, k) { n++; v = substr($0, index($0, k) + length(k)) + 0; if (v <= 0) bad++ }
    END { exit !(n > 0 && bad == 0) }'

}

# bench_text PATTERN ARGS...: like bench, the client's perftest-like text must contain PATTERN
# (a grep -E pattern) and a result line.
bench_text() {
  pat=$1; shift
  port=$((port + 1))
  timeout 120 $W rdma bench --server --bind "$ip" --port $port "$@" >/tmp/wcr-srv.out 2>&1 &
  spid=$!
  out=$(timeout 120 $W rdma bench --client "$ip" --port $port "$@" 2>&1); crc=$?
  wait $spid; src=$?
  echo "$out" | head -n 20
  [ $crc -eq 0 ] && [ $src -eq 0 ] || { cat /tmp/wcr-srv.out; return 1; }
  echo "$out" | grep -Eq -- "$pat" || { echo "no '$pat' in the output"; return 1; }
  echo "$out" | grep -Eq '^ [0-9]+ +[0-9]+ +[0-9.]+' || { echo "no result line"; return 1; }
}

# -U: one line per sample in the order taken (n - 1 of them, none dropped), then the summary.
bench_unsorted() {
  port=$((port + 1))
  timeout 120 $W rdma bench --server --bind "$ip" --port $port --op send -n 200 -U >/tmp/wcr-srv.out 2>&1 &
  spid=$!
  out=$(timeout 120 $W rdma bench --client "$ip" --port $port --op send -n 200 -U 2>&1); crc=$?
  wait $spid; src=$?
  [ $crc -eq 0 ] && [ $src -eq 0 ] || { echo "$out"; cat /tmp/wcr-srv.out; return 1; }
  n=$(echo "$out" | grep -Ec '^[0-9]+, [0-9.e+-]+$')
  echo "$out" | tail -n 3
  echo "$n unsorted samples"
  [ "$n" -eq 199 ]
}

# -b: both sides stream; the client reports the sum, so both sides' streams must have run.
bench_bidir() {
  port=$((port + 1))
  timeout 120 $W rdma bench --server --bind "$ip" --port $port "$@" -b >/tmp/wcr-srv.out 2>&1 &
  spid=$!
  out=$(timeout 120 $W rdma bench --client "$ip" --port $port --json "$@" -b 2>&1); crc=$?
  wait $spid; src=$?
  echo "$out"
  [ $crc -eq 0 ] && [ $src -eq 0 ] || { cat /tmp/wcr-srv.out; return 1; }
  echo "$out" | grep -q '"bidirectional":true' && echo "$out" | grep -q '"msg_rate_mpps":0.0*[1-9]'
}

# A mismatch is a message on both sides (exit 2), not a timeout.
bench_mismatch() {
  port=$((port + 1))
  timeout 30 $W rdma bench --server --bind "$ip" --port $port --op write >/tmp/wcr-srv.out 2>&1 &
  spid=$!
  out=$(timeout 30 $W rdma bench --client "$ip" --port $port --op send -n 100 2>&1); crc=$?
  wait $spid; src=$?
  echo "$out"; cat /tmp/wcr-srv.out
  [ $crc -eq 2 ] && [ $src -eq 2 ] && echo "$out" | grep -q "op: here send, peer write" &&
    grep -q "op: here write, peer send" /tmp/wcr-srv.out
}

# pingpong's two ends agree on size, count and QP type before any verbs: a mismatch is said on both
# sides (exit 2), naming both values; it used to show as raw completion errors or a timeout.
pingpong_mismatch() {
  port=$((port + 1))
  timeout 30 $W rdma pingpong --server --bind "$ip" --port $port --size 64 --iters 50 >/tmp/wcr-srv.out 2>&1 &
  spid=$!
  out=$(timeout 30 $W rdma pingpong --client "$ip" --port $port --size 4096 --iters 50 2>&1); crc=$?
  wait $spid; src=$?
  echo "$out"; cat /tmp/wcr-srv.out
  [ $crc -eq 2 ] && [ $src -eq 2 ] && echo "$out" | grep -q "size: here 4096, peer 64" &&
    grep -q "size: here 64, peer 4096" /tmp/wcr-srv.out || return 1
  port=$((port + 1))
  timeout 30 $W rdma pingpong --server --bind "$ip" --port $port --iters 50 --qp ud >/tmp/wcr-srv.out 2>&1 &
  spid=$!
  out=$(timeout 30 $W rdma pingpong --client "$ip" --port $port --iters 60 2>&1); crc=$?
  wait $spid; src=$?
  echo "$out"; cat /tmp/wcr-srv.out
  [ $crc -eq 2 ] && echo "$out" | grep -q "iters: here 60, peer 50; qp: here rc, peer ud" || return 1
  # Agreeing ends still run.
  port=$((port + 1))
  timeout 60 $W rdma pingpong --server --bind "$ip" --port $port --size 256 --iters 50 >/dev/null 2>&1 &
  spid=$!
  out=$(timeout 60 $W rdma pingpong --client "$ip" --port $port --size 256 --iters 50 2>&1); crc=$?
  wait $spid; src=$?
  echo "$out"
  [ $crc -eq 0 ] && [ $src -eq 0 ] && echo "$out" | grep -q '"rtt_us"'
}

# A server killed during a bandwidth run is reported as gone (its side channel closed), not only
# as the completion status its death caused (IBV_WC_REM_OP_ERR, retries exceeded).
bench_killed_server() {
  for op in "$@"; do
    port=$((port + 1))
    timeout 120 $W rdma bench --server --bind "$ip" --port $port --op $op --test bw -s 4096 -n 100000000 \
      >/dev/null 2>&1 &
    spid=$!
    timeout 120 $W rdma bench --client "$ip" --port $port --op $op --test bw -s 4096 -n 100000000 \
      >/tmp/wcr-cli.out 2>&1 &
    cpid=$!
    i=0; while [ $i -lt 60 ] && ! grep -q '^#' /tmp/wcr-cli.out; do sleep 1; i=$((i + 1)); done
    sleep 1
    kill -9 $spid
    wait $cpid; crc=$?
    wait $spid 2>/dev/null
    echo "$op: rc $crc:"; cat /tmp/wcr-cli.out
    [ $crc -eq 1 ] && grep -q "the peer is gone" /tmp/wcr-cli.out || return 1
  done
}

# -R: the QP comes from rdma_cm (CmConnection); the run must say so and give a positive figure.
bench_cm() {
  out=$(bench -R "$@") || { echo "$out"; return 1; }
  echo "$out"
  echo "$out" | grep -q '"rdma_cm":true'
}

# perftest's own -R for the same test, the reference the side-by-side compares with: PROGRAM ARGS...
# (skipped when the program is not in the image).
# perftest's own -R mode on rxe is itself flaky under load (a latency row of "inf", or no result in
# a round): one retry, and "inf" counts as a finished run (it connected through rdma_cm and ran).
perftest_cm() {
  for attempt in 1 2; do
    perftest_cm_once "$@" && return 0
    echo "(perftest -R attempt $attempt gave no result)"
  done
  return 1
}
perftest_cm_once() {
  prog=$1; shift
  command -v "$prog" >/dev/null || { echo "skip: no $prog in the image"; return 0; }
  port=$((port + 1))
  timeout 120 "$prog" -d rxe0 -R -p $port "$@" >/tmp/wcr-pt-srv.out 2>&1 &
  spid=$!
  sleep 0.5
  out=$(timeout 120 "$prog" -d rxe0 -R -p $port "$@" "$ip" 2>&1); crc=$?
  wait $spid; src=$?
  echo "$out" | grep -E 'rdma_cm QPs|Data ex|^ *[0-9]+ +[0-9]+ '
  [ $crc -eq 0 ] && [ $src -eq 0 ] || { echo "$out"; cat /tmp/wcr-pt-srv.out; return 1; }
  echo "$out" | grep -q 'rdma_cm QPs.*ON' && echo "$out" | grep -Eq '^ *[0-9]+ +[0-9]+ +([0-9.]+|inf)'
}

# -R and a mismatch: a server without -R is told, not left waiting for a connect request.
bench_cm_mismatch() {
  port=$((port + 1))
  timeout 30 $W rdma bench --server --bind "$ip" --port $port >/tmp/wcr-srv.out 2>&1 &
  spid=$!
  out=$(timeout 30 $W rdma bench --client "$ip" --port $port -R 2>&1); crc=$?
  wait $spid; src=$?
  echo "$out"; cat /tmp/wcr-srv.out
  [ $crc -eq 2 ] && [ $src -eq 2 ] && echo "$out" | grep -q "rdma_cm (-R): here true, peer false"
}

step pingpong-mismatch pingpong_mismatch
step bench-killed-server bench_killed_server write send
step ud-above-mtu ud_above_mtu
step ping-no-address-handle ping_no_ah
step bench-mismatch bench_mismatch
step size-bound size_bound
step device-spellings device_spellings
for op in send write write_imm read faa cas; do
  step "bench-lat-$op" bench --op $op --test lat -n 300
  step "bench-bw-$op" bench --op $op --test bw -n 2000 -s $( [ $op = faa ] || [ $op = cas ] && echo 8 || echo 4096)
done
step bench-lat-send-ud bench --op send --qp ud --test lat -n 300
step bench-bw-send-ud bench --op send --qp ud --test bw -n 2000 -s 1024
step bench-lat-send-channel bench --op send --test lat -n 300 --wait channel
step bench-lat-read-epoll bench --op read --test lat -n 300 --wait epoll
step bench-bw-write-epoll bench --op write --test bw -n 2000 -s 4096 --wait epoll
step bench-bw-send-channel bench --op send --test bw -n 2000 -s 4096 --wait channel
step bench-lat-write-duration bench --op write --test lat -D 1
step bench-bw-write-sweep bench --op write --test bw -a -n 5
# perftest's flags (issue 29).
step bench-lat-send-unsorted bench_unsorted
step bench-bw-write-bidir bench_bidir --op write --test bw -n 2000 -s 4096
step bench-bw-read-bidir bench_bidir --op read --test bw -n 1000 -s 4096
step bench-bw-faa-bidir bench_bidir --op faa --test bw -n 1000
step bench-bw-send-bidir bench_bidir --op send --test bw -n 2000 -s 4096
step bench-bw-write-imm-bidir bench_bidir --op write_imm --test bw -n 2000 -s 4096 -r 64
step bench-bw-send-ud-bidir bench_bidir --op send --qp ud --test bw -n 2000 -s 1024
step bench-bw-send-bidir-duration bench_bidir --op send --test bw -D 1 -s 4096
step bench-bw-write-qps bench_text '4 QPs' --op write --test bw -n 500 -s 4096 -q 4
step bench-bw-send-qps bench --op send --test bw -n 500 -s 4096 -q 4 -r 64
step bench-bw-read-qps bench --op read --test bw -n 500 -s 4096 -q 2
step bench-bw-send-ud-qps bench --op send --qp ud --test bw -n 500 -s 1024 -q 3
step bench-bw-send-qps-bidir bench_bidir --op send --test bw -n 500 -s 4096 -q 2
step bench-lat-send-srq bench --op send --test lat -n 300 --use-srq
step bench-bw-send-srq-qps bench --op send --test bw -n 500 -s 4096 -q 3 --use-srq -r 64
step bench-bw-write-imm-srq-bidir bench_bidir --op write_imm --test bw -n 500 -s 4096 --use-srq
step bench-bw-write-post-list bench --op write --test bw -n 2000 -s 4096 -l 8
step bench-bw-send-post-list bench --op send --test bw -n 2000 -s 4096 -l 4 -Q 2 -r 256
step bench-bw-write-warm-up bench --op write --test bw -n 2000 -s 4096 --perform_warm_up
step bench-bw-read-outs bench --op read --test bw -n 1000 -s 4096 -o 2
step bench-lat-send-uc bench --op send -c UC --test lat -n 300
step bench-lat-write-uc bench --op write -c UC --test lat -n 300
step bench-bw-write-uc bench --op write -c UC --test bw -n 2000 -s 4096
step bench-bw-send-uc bench --op send -c UC --test bw -n 2000 -s 1024
step bench-lat-send-path bench --op send --test lat -n 300 -x 1 -i 1 -m 512 -S 3 -T 32 -r 16
step bench-bw-write-gbits bench_text 'BW average\[Gb/sec\]' --op write --test bw -n 2000 -s 4096 --report_gbits
step bench-bw-clamped bench_text 'adjusted like perftest: tx_depth 128 -> 10' --op write --test bw -n 10 -s 4096
step bench-lat-mtu-clamped bench_text 'adjusted like perftest: mtu 4096 -> 1024' --op send -n 100 -m 4096
step bench-bw-write-per-second bench_text '^# second 2: [0-9]+ messages' --op write --test bw -D 2.5 -s 4096 --per-second
# -R (rdma_cm set-up), weft and perftest, every op perftest's -R runs here.
for op in send write read; do
  step "bench-rdma-cm-lat-$op" bench_cm --op $op --test lat -n 300
  step "bench-rdma-cm-bw-$op" bench_cm --op $op --test bw -n 1000 -s 4096
  step "perftest-rdma-cm-lat-$op" perftest_cm "ib_${op}_lat" -n 300
  step "perftest-rdma-cm-bw-$op" perftest_cm "ib_${op}_bw" -n 1000 -s 4096
done
step bench-rdma-cm-lat-faa bench_cm --op faa --test lat -n 300 --wait epoll
step bench-rdma-cm-bw-write-imm-bidir bench_cm --op write_imm --test bw -n 1000 -s 4096 -b --wait channel
step bench-rdma-cm-lat-send-tos bench_cm --op send --test lat -n 300 -T 32
# -R -q: one rdma_cm connection per QP, all in the first one's PD and on its CQ; SEND (every QP's
# receives), WRITE both ways, and perftest's own -R -q beside them.
step bench-rdma-cm-bw-send-q3 bench_cm --op send --test bw -n 600 -s 4096 -q 3
step bench-rdma-cm-bw-write-q2-bidir bench_cm --op write --test bw -n 600 -s 4096 -q 2 -b
step perftest-rdma-cm-bw-send-q3 perftest_cm ib_send_bw -n 600 -s 4096 -q 3
# -R -c UD: rdma_cm's UDP port space (a SIDR exchange instead of a connection), latency and -q 2
# bandwidth, and perftest's own -R -c UD.
step bench-rdma-cm-lat-send-ud bench_cm --qp ud --op send --test lat -n 300
step bench-rdma-cm-bw-send-ud-q2 bench_cm -c UD --op send --test bw -n 600 -s 1024 -q 2
step perftest-rdma-cm-lat-send-ud perftest_cm ib_send_lat -c UD -n 300
step bench-rdma-cm-mismatch bench_cm_mismatch
if [ -n "$failed" ]; then echo "cli rdma guest suite FAILED:$failed"; exit 1; fi
echo "cli rdma guest suite passed"
