#!/usr/bin/env bash
# Host test (label unit): the rdma commands' arguments, checked before any verbs, so this runs
# with or without an RDMA device. Bad arguments are usage errors (exit 2) in every rdma command,
# sizes are bounded like perftest's (no wrap-around crash), the device is -d/--device everywhere,
# and help texts only name options the command has.
#   args_test.sh WEFT
set -u
WEFT=${1:?usage: args_test.sh WEFT}
fail=0
# expect NAME RC PATTERN ARGS...: exit status RC and PATTERN somewhere in stderr+stdout.
expect() {
  local name=$1 want=$2 pat=$3; shift 3
  local out rc
  out=$(timeout 20 "$WEFT" "$@" 2>&1); rc=$?
  if [[ $rc -ne $want ]]; then echo "FAIL $name: exit $rc, want $want: $out"; fail=1; return; fi
  if [[ -n $pat && $out != *"$pat"* ]]; then echo "FAIL $name: no '$pat' in: $out"; fail=1; return; fi
  echo "ok $name"
}
# Sizes: 4294967295 used to wrap the buffer maths and crash.
expect pingpong-size-max 2 "--size" rdma pingpong --client 127.0.0.1 --qp ud --size 4294967295
expect pingpong-size-zero 2 "--size" rdma pingpong --client 127.0.0.1 --size 0
expect pingpong-size-8mib+1 2 "--size" rdma pingpong --client 127.0.0.1 --size 8388609
expect mesh-size 2 "--size" rdma mesh --nodes 2 --size 4294967295
# Timeouts and GID indexes.
for t in 0 -5; do
  expect "pingpong-timeout$t" 2 "--timeout-ms" rdma pingpong --client 127.0.0.1 --timeout-ms=$t
  expect "mesh-timeout$t" 2 "--timeout-ms" rdma mesh --nodes 2 --timeout-ms=$t
done
expect ping-gid-index 2 "--gid-index" ping rdma rxe0:127.0.0.1 --gid-index=-2 -c 1
expect responder-gid-index 2 "--gid-index" rdma responder --gid-index=-2 --duration 1
expect responder-gid-index-big 2 "--gid-index" rdma responder --gid-index 256 --duration 1
# Unknown choices and out-of-range counts are usage errors everywhere (they exited 1 in some).
expect pingpong-qp 2 "--qp" rdma pingpong --client 127.0.0.1 --qp uc
expect pingpong-wait 2 "--wait" rdma pingpong --client 127.0.0.1 --wait sleep
expect pingpong-iters 2 "--iters" rdma pingpong --client 127.0.0.1 --iters 0
expect pingpong-no-role 2 "--server or --client" rdma pingpong
expect mesh-nodes 2 "--nodes" rdma mesh --nodes 1
expect mesh-hosts 2 "one address per rank" rdma mesh --nodes 2 --hosts 10.0.0.1
expect mesh-rank 2 "--rank must be below --nodes" rdma mesh --nodes 2 --rank 3 --hosts 10.0.0.1,10.0.0.2
expect mesh-wait 2 "--wait" rdma mesh --nodes 2 --wait sleep
expect ping-lid-needs-qpn 2 "needs --qpn" ping rdma rxe0:lid:5 -c 1
expect ping-gid-needs-qpn 2 "give --qpn" ping rdma rxe0:fe80::1 -c 1
# Probe counts: a negative count wrapped to 2^64 - 1 (a ping for ever); 2^64 itself was accepted.
for c in -1 0 18446744073709551616 1099511627777; do
  expect "ping-count$c" 2 "--count" ping udp 127.0.0.1 -c "$c"
  expect "ping-rdma-count$c" 2 "--count" ping rdma rxe0:127.0.0.1 --qpn 17 -c "$c"
done
# weft msg bench: its argument errors are usage errors (exit 2), said before any device or peer.
expect msg-type 2 "--type" msg bench --client 127.0.0.1 --type nope
expect msg-sizes 2 "--sizes" msg bench --client 127.0.0.1 --sizes 64,x
expect msg-sizes-big 2 "--sizes" msg bench --client 127.0.0.1 --sizes 16777217
expect msg-senders 2 "needs --type shared-ring" msg bench --client 127.0.0.1 --senders 2
expect msg-max-message 2 "--max-message" msg bench --client 127.0.0.1 --sizes 4096 --max-message 64
# 64 slots of 16 MiB are 1 GiB per end: refused up front on a host with less than 2 GiB free
# (it used to pass validation and fail in mmap); 4096 slots of 16 MiB (64 GiB) anywhere here.
expect msg-memory 2 "MiB available" msg bench --client 127.0.0.1 --sizes 16777216 --slots 4096
expect msg-no-role 2 "--server or --client" msg bench
# weft rdma bench: perftest's flags, their ranges and the combinations perftest refuses are usage
# errors (exit 2) naming the flag, said before any device or peer (issue 29).
expect bench-mtu 2 "--mtu" rdma bench --client 127.0.0.1 -m 1500
expect bench-sl 2 "--sl" rdma bench --client 127.0.0.1 -S 16
expect bench-tos 2 "--tos" rdma bench --client 127.0.0.1 -T 256
expect bench-gid 2 "--gid-index" rdma bench --client 127.0.0.1 -x 256
expect bench-port 2 "--ib-port" rdma bench --client 127.0.0.1 -i 0
expect bench-rx-depth 2 "--rx-depth" rdma bench --client 127.0.0.1 -r 0
expect bench-connection 2 "--connection" rdma bench --client 127.0.0.1 -c XRC
expect bench-bidir-lat 2 "-b" rdma bench --client 127.0.0.1 -b
expect bench-unsorted-bw 2 "-U" rdma bench --client 127.0.0.1 --test bw -U
expect bench-post-list-lat 2 "-l" rdma bench --client 127.0.0.1 -l 2
expect bench-post-list-iters 2 "multiple of -l" rdma bench --client 127.0.0.1 --op write --test bw -l 3 -n 100
expect bench-outs-write 2 "-o" rdma bench --client 127.0.0.1 --op write -o 2
expect bench-rx-depth-read 2 "-r" rdma bench --client 127.0.0.1 --op read -r 8
expect bench-uc-read 2 "UC" rdma bench --client 127.0.0.1 --op read -c UC
expect bench-warm-up-send 2 "--perform_warm_up" rdma bench --client 127.0.0.1 --test bw --perform_warm_up
expect bench-per-second 2 "-D" rdma bench --client 127.0.0.1 --op write --test bw --per-second
expect bench-rdma-cm-uc 2 "UC is not supported in librdmacm" rdma bench --client 127.0.0.1 -R -c UC
expect bench-rdma-cm-gid 2 "-x" rdma bench --client 127.0.0.1 -R -x 1
expect bench-rdma-cm-srq 2 "--use-srq" rdma bench --client 127.0.0.1 -R --use-srq
# Help texts: the responder has --address, not --bind; every command spells the device -d/--device.
out=$("$WEFT" rdma responder --help 2>&1)
if [[ $out == *"--bind"* ]]; then echo "FAIL responder-help names --bind: $out"; fail=1; else echo "ok responder-help"; fi
for cmd in "rdma pingpong" "rdma mesh" "rdma responder" "ping" "msg bench"; do
  # shellcheck disable=SC2086
  out=$("$WEFT" $cmd --help 2>&1)
  if [[ $out != *"-d,--device"* ]]; then echo "FAIL $cmd --help lacks -d,--device"; fail=1; else echo "ok $cmd -d,--device"; fi
done
# Without a device, -d and the DEVICE: prefix reach the same "no RDMA device" error (exit 1), not a
# parse error. Skipped on hosts that have RDMA devices.
if ! compgen -G "/sys/class/infiniband/*" >/dev/null; then
  expect ping-d 1 "no RDMA device" ping rdma -d rxe0 ::ffff:10.9.0.1 --qpn 17 -c 1
  expect ping-no-prefix 1 "no RDMA device" ping rdma 10.9.0.1 --qpn 17 -c 1
  expect ping-prefix 1 "no RDMA device" ping rdma rxe0:10.9.0.1 --qpn 17 -c 1
  # weft msg bench fails at once without a device (it tried the side channel for 20 s per size),
  # as a server too (it failed only when a client came; the client saw "Broken pipe").
  start=$(date +%s)
  expect msg-client-no-device 1 "no RDMA device" msg bench --client 127.0.0.1 --port 47931 --sizes 64,4096
  expect msg-server-no-device 1 "no RDMA device" msg bench --server --port 47932 -d nope0
  if (($(date +%s) - start > 5)); then echo "FAIL msg-no-device: took $(($(date +%s) - start)) s"; fail=1; fi
fi
exit $fail
