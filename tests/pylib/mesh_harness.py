"""What weft's loopback mesh tests (tests/agent/*_test.py) share: a controller config, agents started
on loopback addresses, JSON reads of the controller's HTTP API, a bounded wait for a condition, and a
stop that ends every process even when the test failed. Loopback only."""
import json
import subprocess
import sys
import time
import urllib.request

import agent_tokens  # tests/pylib, on the path of every test that imports this module


def get(port, path, token=None):
    """GET http://127.0.0.1:port/path and decode the JSON answer (Bearer token when given)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers=headers)
    with urllib.request.urlopen(req, timeout=5) as r:
        return json.loads(r.read())


def wait(pred, what, timeout=30):
    """Polls pred until it returns something true (returned) or timeout seconds pass (the test fails
    with `what`). Connection errors count as not yet: the server may still be starting."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            v = pred()
            if v:
                return v
        except OSError:
            pass
        time.sleep(0.3)
    raise SystemExit(f"FAIL: {what}")


def agent_secret(token):
    """The controller's agent secret for a test's `token` (at least 16 characters)."""
    return f"{token}-agent-secret"


def agent_token(token, name):
    """Agent `name`'s own token under agent_secret(token) (tests/pylib/agent_tokens.py)."""
    return agent_tokens.agent_token(agent_secret(token), name)


def controller_config(port, token, store, interval="50ms", agent_down_after="60s"):
    """A controller probing every agent with every other over UDP, 1 s windows, fast reports; each agent
    has its own token (agent_token). agent_down_after=None leaves the controller's default."""
    down = f"agent_down_after: {agent_down_after}\n" if agent_down_after else ""
    return (f"listen: 127.0.0.1:{port}\nagent_secret: {agent_secret(token)}\nstore: {store}\nwindow: 1s\n"
            f"report_interval: 300ms\npinglist_sync: 1s\n{down}"
            f"protocols:\n  udp: {{interval: {interval}, timeout: 300ms}}\n"
            "groups:\n  - {name: all, protocols: [udp], members: ['*']}\n")


def start_agent(weft, tmp, controllers, token, name, addr, udp, tcp, log_level="info"):
    """Starts agent `name` on loopback address addr (UDP probes only) with its own token under the
    test's `token` (agent_token), its log in tmp/agent-NAME.log.
    controllers: the --controller value (one URL or a comma-separated list)."""
    return subprocess.Popen([weft, "--log-level", log_level, "agent", "--controller", controllers,
                             "--token", agent_token(token, name), "--name", name, "--address", addr, "--protocols", "udp",
                             "--udp-port", str(udp), "--tcp-port", str(tcp)],
                            stdout=subprocess.DEVNULL, stderr=open(f"{tmp}/agent-{name}.log", "w"))


def stop(procs):
    """Terminates the processes still running, newest first, and kills any that ignore it for 10 s."""
    for p in reversed(procs):
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()


def finish(failed, ok):
    """Ends the test: one FAIL line per entry of failed and exit code 1, or the `ok` line."""
    if failed:
        for f in failed:
            print("FAIL:", f)
        sys.exit(1)
    print(ok)
