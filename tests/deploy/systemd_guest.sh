#!/bin/sh
# Runs inside lab/systemd-guest (systemd as PID 1, the host's root under a throw-away overlay), in
# the share that holds the three packages: follows docs/deploy.md as an operator would and checks
# what the units promise under a real systemd. Prints "ok ..." per step; the first failed step
# prints "FAIL: ..." and exits 1.
set -u
fail() {
  echo "FAIL: $*"
  for u in weft-controller weft-agent; do
    systemctl status --no-pager "$u" 2>&1 | head -n 12
    journalctl -u "$u" -n 20 --no-pager 2>&1
  done
  exit 1
}
ok() { echo "ok   [$(cut -d" " -f1 /proc/uptime) s] $*"; }
prop() { systemctl show -P "$2" "$1"; }  # UNIT PROPERTY
# wait_for SECONDS COMMAND...: until COMMAND succeeds, at most SECONDS (in steps of 0.5 s).
wait_for() {
  n=$(($1 * 2)); shift
  while [ "$n" -gt 0 ]; do "$@" >/dev/null 2>&1 && return 0; sleep 0.5; n=$((n - 1)); done
  return 1
}
API=https://127.0.0.1:8080
READ=guest-read-token

[ "$(ps -p 1 -o comm=)" = systemd ] || fail "PID 1 is $(ps -p 1 -o comm=), not systemd"

# 1. Install: the dedicated user, both units known, nothing enabled or started.
dpkg -i ./weft-common_*.deb ./weft_*.deb ./weft-controller_*.deb > dpkg-install.log 2>&1 ||
  { cat dpkg-install.log; fail "dpkg -i"; }
id weft > /dev/null 2>&1 || fail "no weft user after installing weft-common"
for u in weft-agent weft-controller; do
  [ "$(prop $u.service LoadState)" = loaded ] || fail "$u.service not loaded after install"
  [ "$(systemctl is-enabled $u.service 2>&1)" = disabled ] || fail "$u.service enabled by the install"
  [ "$(prop $u.service ActiveState)" = inactive ] || fail "$u.service started by the install"
done
ok "packages installed: weft user $(id -u weft), both units loaded, disabled and inactive"

# 2. The agent without its settings: skipped by its conditions, not restarted in a loop.
systemctl start weft-agent.service
sleep 8
[ "$(prop weft-agent.service ConditionResult)" = no ] || fail "agent started without /etc/default/weft-agent"
[ "$(prop weft-agent.service NRestarts)" = 0 ] || fail "agent without settings restarted $(prop weft-agent.service NRestarts) times"
[ "$(prop weft-agent.service ActiveState)" = inactive ] || fail "agent without settings is $(prop weft-agent.service ActiveState)"
ok "agent without settings: condition failed, 0 restarts in 8 s, inactive"

# 3. The controller as docs/deploy.md section 2 sets it up, on loopback, with TLS from a CA of ours.
mkdir -p tls && cd tls || fail "mkdir tls"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=guest-ca \
  -keyout ca.key -out ca.crt > /dev/null 2>&1 || fail "openssl: CA"
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=127.0.0.1 \
  -keyout controller.key -out controller.csr > /dev/null 2>&1 || fail "openssl: key"
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > san.ext
openssl x509 -req -in controller.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile san.ext \
  -out controller.crt > /dev/null 2>&1 || fail "openssl: certificate"
cd .. || fail "cd"
install -D -m 0640 -g weft /usr/share/weft/weft.yaml /etc/weft/weft.yaml
head -c 32 /dev/urandom | base64 | install -D -m 0640 -g weft /dev/stdin /etc/weft/agent-secret
sed -i -e 's/^listen:.*/listen: [127.0.0.1:8080]/' -e "s/change-me-read-token/$READ/" \
  -e 's/change-me-admin-token/guest-admin-token/' /etc/weft/weft.yaml
install -D -m 0644 tls/ca.crt /etc/weft/tls/ca.crt
install -D -m 0644 tls/controller.crt /etc/weft/tls/controller.crt
install -D -m 0640 -g weft tls/controller.key /etc/weft/tls/controller.key
systemctl enable --now weft-controller.service > /dev/null 2>&1 || fail "systemctl enable --now weft-controller"
wait_for 90 curl -sf --cacert /etc/weft/tls/ca.crt "$API/healthz" ||
  fail "controller's /healthz did not answer over HTTPS within 90 s"
[ "$(prop weft-controller.service User)" = weft ] || fail "controller not run as weft"
[ -f /var/lib/weft/history.db ] || fail "no SQLite store in /var/lib/weft (StateDirectory)"
ok "controller: active under the sandbox, /healthz over HTTPS verified against the CA, store in /var/lib/weft"
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert /etc/weft/tls/ca.crt "$API/api/v1/agents")
[ "$code" = 401 ] || fail "read API without the read token answered $code, not 401"
ok "read API without a read token: 401"

# 4. An agent with its own token, as docs/deploy.md section 3 says.
weft token agent guest-h1 --config /etc/weft/weft.yaml | install -D -m 0640 -g weft /dev/stdin /etc/weft/agent.token ||
  fail "weft token agent"
printf 'WEFT_CONTROLLER=%s\nWEFT_AGENT_ARGS=--ca /etc/weft/tls/ca.crt --protocols udp tcp\n' "$API" > /etc/default/weft-agent
systemctl enable --now weft-agent.service > /dev/null 2>&1 || fail "systemctl enable --now weft-agent"
agent_listed() {
  curl -sf --cacert /etc/weft/tls/ca.crt -H "Authorization: Bearer $READ" "$API/api/v1/agents" | grep -q '"guest-h1"'
}
wait_for 90 agent_listed || fail "guest-h1 not in /api/v1/agents within 90 s"
journalctl -u weft-agent --no-pager | grep -q 'registered with' || fail "the agent's journal has no 'registered with'"
sleep 5
[ "$(prop weft-agent.service ActiveState)" = active ] || fail "agent is $(prop weft-agent.service ActiveState)"
[ "$(prop weft-agent.service NRestarts)" = 0 ] || fail "agent restarted $(prop weft-agent.service NRestarts) times"
ok "agent: registered over HTTPS with its own token, listed by the controller, active, 0 restarts"

# 5. The exposure systemd itself rates, on the running units.
for u in weft-agent weft-controller; do
  level=$(systemd-analyze security --no-pager $u.service 2>/dev/null | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
  [ -n "$level" ] || fail "systemd-analyze security printed no level for $u"
  awk -v l="$level" 'BEGIN { exit !(l <= 4.0) }' || fail "$u exposure $level > 4.0"
  ok "$u.service exposure $level (at most 4.0)"
done

# 6. A crash is restarted after RestartSec (5 s).
pid=$(prop weft-agent.service MainPID)
systemctl kill -s SEGV weft-agent.service
restarted() { [ "$(prop weft-agent.service NRestarts)" = 1 ] && [ "$(prop weft-agent.service ActiveState)" = active ]; }
wait_for 30 restarted || fail "crashed agent not restarted within 30 s (NRestarts $(prop weft-agent.service NRestarts))"
[ "$(prop weft-agent.service MainPID)" != "$pid" ] || fail "agent's MainPID unchanged after the crash"
ok "crashed agent restarted once (pid $pid -> $(prop weft-agent.service MainPID))"

# 7. A usage error (exit 2) waits for the operator instead of looping.
sed -i 's/^WEFT_AGENT_ARGS=.*/WEFT_AGENT_ARGS=--no-such-option/' /etc/default/weft-agent
systemctl restart weft-agent.service
# A process start takes tens of seconds in the emulated guest: wait for the exit, then for longer
# than RestartSec.
exited() { [ "$(prop weft-agent.service ExecMainStatus)" = 2 ]; }
wait_for 120 exited || fail "agent with a bad option did not exit 2 within 120 s (status $(prop weft-agent.service ExecMainStatus))"
sleep 12
[ "$(prop weft-agent.service NRestarts)" = 0 ] || fail "agent with a bad option restarted $(prop weft-agent.service NRestarts) times"
[ "$(prop weft-agent.service ActiveState)" = failed ] || fail "agent with a bad option is $(prop weft-agent.service ActiveState), not failed"
ok "agent with a bad option: exit 2, failed, 0 restarts 12 s later"

# 8. Reload keeps the controller's process.
pid=$(prop weft-controller.service MainPID)
systemctl reload weft-controller.service || fail "systemctl reload weft-controller"
sleep 2
[ "$(prop weft-controller.service MainPID)" = "$pid" ] && [ "$(prop weft-controller.service ActiveState)" = active ] ||
  fail "reload changed the controller (pid $pid -> $(prop weft-controller.service MainPID), $(prop weft-controller.service ActiveState))"
curl -sf --cacert /etc/weft/tls/ca.crt "$API/healthz" > /dev/null || fail "/healthz after reload"
ok "controller reloaded in place (pid $pid)"

# 9. Removal (one purge: dpkg runs prerm "remove", then postrm "remove" and "purge"; every dpkg run
# reads the host's whole package database over 9p) stops and disables the units; the purge deletes
# the agent's spool and keeps the controller's data.
dpkg --purge weft weft-controller > dpkg-purge.log 2>&1 || { cat dpkg-purge.log; fail "dpkg --purge"; }
for u in weft-agent weft-controller; do
  state=$(prop $u.service ActiveState)
  [ "$state" = inactive ] || [ "$state" = failed ] || fail "$u.service is $state after removal"
  [ ! -e /lib/systemd/system/$u.service ] || fail "$u.service file left after removal"
  [ ! -e /etc/systemd/system/multi-user.target.wants/$u.service ] || fail "$u.service still enabled after removal"
done
pgrep -x weft > /dev/null && fail "a weft process is left after removal"
pgrep -x weft-controller > /dev/null && fail "a weft-controller process is left after removal"
[ ! -e /var/lib/weft-agent ] || fail "purging weft left /var/lib/weft-agent"
[ -f /var/lib/weft/history.db ] || fail "purging weft-controller deleted /var/lib/weft (the operator's history)"
ok "purged: both units stopped, disabled and gone, no process left, the agent's spool deleted, /var/lib/weft kept"
echo "systemd guest: all steps passed"
