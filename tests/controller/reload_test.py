#!/usr/bin/env python3
"""Config reload: on file change and on SIGHUP; a bad file keeps the old config and says why.
Usage: reload_test.py WEFT"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

WEFT = sys.argv[1]
PORT = 18092
TOKEN = "reload-test-token"


def req(path, body=None):
    r = urllib.request.Request(f"http://127.0.0.1:{PORT}{path}", data=body and json.dumps(body).encode(),
                               headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})
    with urllib.request.urlopen(r, timeout=5) as f:
        return json.loads(f.read())


def protocols_of(agent):
    return sorted(p["protocol"] for p in req(f"/api/v1/pinglists/{agent}")["protocols"] if p["targets"])


def wait(pred, what, timeout=10):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.2)
    raise SystemExit(f"FAIL: {what}")


tmp = tempfile.mkdtemp(prefix="wms-reload-")
cfg = os.path.join(tmp, "weft.yaml")
logf = os.path.join(tmp, "controller.log")


def write(groups):
    with open(cfg + ".new", "w") as f:
        f.write(f"listen: 127.0.0.1:{PORT}\ntokens: [{TOKEN}]\nshared_tokens: true\nstore: sqlite:{tmp}/h.db\n{groups}")
    os.replace(cfg + ".new", cfg)


write("groups:\n  - {name: all, protocols: [udp], members: ['*']}\n")
proc = subprocess.Popen([WEFT, "controller", "-c", cfg], stdout=open(logf, "w"), stderr=subprocess.STDOUT)
try:
    wait(lambda: os.path.exists(logf) and "listening" in open(logf).read(), "controller start")
    for n in ("r1", "r2"):
        req("/api/v1/register", {"name": n, "addresses": ["127.0.0.1"], "protocols": ["udp", "tcp"],
                                 "udp_port": 18093, "tcp_port": 18094})
    assert protocols_of("r1") == ["udp"], protocols_of("r1")
    v1 = req("/api/v1/pinglist?agent=r1")["version"]
    assert req(f"/api/v1/pinglist?agent=r1&version={v1}") == {"version": v1, "unchanged": True}

    time.sleep(1.1)  # a different mtime
    write("groups:\n  - {name: all, protocols: [udp, tcp], members: ['*']}\n")
    wait(lambda: protocols_of("r1") == ["tcp", "udp"], "file change reload")
    print("ok   reloaded on file change")

    time.sleep(1.1)
    write("groups:\n  - {name: all, protocols: [udp, tcpp], members: ['*']}\n")
    wait(lambda: "keeping the old config" in open(logf).read(), "bad config reported")
    assert "tcpp" in open(logf).read()
    assert protocols_of("r1") == ["tcp", "udp"], "a bad reload changed the plan"
    assert proc.poll() is None
    print("ok   bad config refused, old one kept")

    # Same size and mtime as the file already seen, so only the signal can trigger this reload.
    st = os.stat(cfg)
    write("groups:\n  - {name: all, protocols: [tcp],       members: ['*']}\n")
    assert os.stat(cfg).st_size == st.st_size
    os.utime(cfg, ns=(st.st_atime_ns, st.st_mtime_ns))
    time.sleep(1.5)
    assert protocols_of("r1") == ["tcp", "udp"], "reloaded without a signal"
    os.kill(proc.pid, signal.SIGHUP)
    wait(lambda: protocols_of("r1") == ["tcp"], "SIGHUP reload")
    v2 = req("/api/v1/pinglist?agent=r1")["version"]
    assert v2 != v1
    print("ok   reloaded on SIGHUP")
    print("PASS")
finally:
    proc.terminate()
    proc.wait(10)
    subprocess.run(["rm", "-rf", tmp])
