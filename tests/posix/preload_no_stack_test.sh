#!/usr/bin/env bash
# libweft_preload.so in a process that has no stack (not started by `weft stack run`), no root
# needed: what must still work goes to the kernel, what needs the stack fails clearly.
#  - TCP and UDP over loopback (bind/connect to 127.0.0.1 swap the socket for a kernel one on the
#    same descriptor), with the options set before the swap kept, and poll/select/epoll over them;
#  - AF_INET6 fails with EAFNOSUPPORT, a raw socket with ESOCKTNOSUPPORT, each with one log line;
#  - connect() to an address off loopback fails with ENETUNREACH and one line saying why.
set -euo pipefail
LIB=${1:?usage: $0 path/to/libweft_preload.so}
PY=/usr/bin/python3
[[ -x $PY ]] || { echo "SKIP: no $PY"; exit 77; }
err=$(mktemp)
trap 'rm -f "$err"' EXIT
out=$(env -u WEFT_STACK_PID LD_PRELOAD="$LIB" "$PY" - 2>"$err" <<'EOP'
import errno, select, socket
def code(f):
    try:
        f(); return "ok"
    except OSError as e:
        return errno.errorcode[e.errno]
print("inet6", code(lambda: socket.socket(socket.AF_INET6, socket.SOCK_STREAM)))
print("inet6 again", code(lambda: socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)))
print("raw", code(lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)))
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", 0)); ls.listen(4)
print("reuseaddr kept", ls.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR) != 0)
c = socket.socket(); c.setblocking(False)
print("connect", code(lambda: c.connect(ls.getsockname())))
a, _ = ls.accept()
ep = select.epoll(); ep.register(a.fileno(), select.EPOLLIN)
c.setblocking(True); c.sendall(b"hello")
print("epoll", [(fd == a.fileno(), ev & select.EPOLLIN != 0) for fd, ev in ep.poll(2)])
print("recv", a.recv(5))
r, w, _ = select.select([a], [c], [], 2)
print("select", len(r), len(w))
u1 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u1.bind(("127.0.0.1", 0))
u2 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u2.sendto(b"dgram", u1.getsockname())
p = select.poll(); p.register(u1.fileno(), select.POLLIN)
print("poll", len(p.poll(2)), u1.recvfrom(100)[0])
off = socket.socket()
print("offstack", code(lambda: off.connect(("10.255.255.1", 9))))
EOP
) || true
expect=("inet6 EAFNOSUPPORT" "inet6 again EAFNOSUPPORT" "raw ESOCKTNOSUPPORT" "reuseaddr kept True"
  "connect EINPROGRESS" "epoll [(True, True)]" "recv b'hello'" "select 0 1" "poll 1 b'dgram'" "offstack ENETUNREACH")
fail=0
for e in "${expect[@]}"; do
  grep -qxF "$e" <<<"$out" || { echo "FAIL: expected '$e'"; fail=1; }
done
[[ $(grep -c "socket(AF_INET6)" "$err") == 1 ]] || { echo "FAIL: want one AF_INET6 log line"; fail=1; }
grep -q "SOCK_RAW" "$err" || { echo "FAIL: no log line for the raw socket"; fail=1; }
grep -q "connect: .*WEFT_STACK_PID is not set" "$err" || { echo "FAIL: the refused connect did not say why"; fail=1; }
echo "$out"
echo "log:"; cat "$err"
exit $fail
