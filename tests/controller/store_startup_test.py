#!/usr/bin/env python3
"""Issue 25, "the store when it fails": a controller started while its Redis store cannot be reached
used to exit with rc 1 at once. Now it retries with back-off (1 s doubling to 30 s) and says why,
until the store answers or SIGTERM/SIGINT arrives; a wrong password or URL still fails at once.
Checks, with a real redis-server (requirepass) started on a loopback port by this test:
  - store port closed: after 4 s the controller still runs, and its log names the store, the
    refusal and the next wait for each attempt (the waits double: 1 s, then 2 s);
  - redis-server started on that port: /healthz answers 200 within the next back-off step, and the
    log says the store was reached;
  - a wrong password, or a malformed URL: exit 1 within 3 s with a clear message, no retry;
  - store_startup_timeout: 2s with the port closed: exit 1 within 6 s, saying it gave up;
  - store port closed, SIGTERM during the retries: exits within 2 s, rc 0, never listened.
Usage: store_startup_test.py WEFT"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

WEFT = os.path.abspath(sys.argv[1])
PORT = 18236        # the controller
REDIS_PORT = 18393  # the store (closed at first)
PASSWORD = "s3cret"

if not shutil.which("redis-server"):
    print("SKIP: redis-server not installed")
    sys.exit(77)

tmp = tempfile.mkdtemp(prefix="wms-store-startup-")
failed = []
procs = []


def start_controller(name, store, extra=""):
    cfg = os.path.join(tmp, f"{name}.yaml")
    with open(cfg, "w") as f:
        f.write(f"listen: 127.0.0.1:{PORT}\nstore: {store}\n{extra}"
                "groups:\n  - {name: all, protocols: [udp], members: ['*']}\n")
    logf = os.path.join(tmp, f"{name}.log")
    proc = subprocess.Popen([WEFT, "controller", "-c", cfg], cwd=tmp, stdout=open(logf, "w"),
                            stderr=subprocess.STDOUT)
    procs.append(proc)
    return proc, logf


def read(path):
    with open(path) as f:
        return f.read()


def healthz():
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{PORT}/healthz", timeout=1) as r:
            return r.status
    except OSError:
        return None


def start_redis():
    subprocess.run(["redis-server", "--port", str(REDIS_PORT), "--bind", "127.0.0.1", "--save", "",
                    "--appendonly", "no", "--dir", tmp, "--requirepass", PASSWORD, "--daemonize", "yes",
                    "--pidfile", os.path.join(tmp, "redis.pid"), "--logfile", os.path.join(tmp, "redis.log")],
                   check=True, stdout=subprocess.DEVNULL)
    for _ in range(50):
        r = subprocess.run(["redis-cli", "-p", str(REDIS_PORT), "-a", PASSWORD, "--no-auth-warning", "ping"],
                           capture_output=True, text=True)
        if "PONG" in r.stdout:
            return
        time.sleep(0.1)
    raise SystemExit("redis-server did not start")


def stop_redis():
    pidf = os.path.join(tmp, "redis.pid")
    if os.path.exists(pidf):
        pid = int(read(pidf).strip())
        os.kill(pid, signal.SIGTERM)
        for _ in range(50):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)


store = f"redis://:{PASSWORD}@127.0.0.1:{REDIS_PORT}"
try:
    # 1. The store's port is closed: the controller waits, saying why.
    proc, logf = start_controller("waits", store)
    time.sleep(4)
    log = read(logf)
    retries = [l for l in log.splitlines() if "store not reachable" in l]
    if proc.poll() is not None:
        failed.append(f"store down: the controller exited (rc {proc.returncode}) instead of retrying:\n{log}")
    elif len(retries) < 2:
        failed.append(f"store down: expected >= 2 retry lines within 4 s, got {len(retries)}:\n{log}")
    else:
        if not all(f"127.0.0.1:{REDIS_PORT}" in l and "refused" in l for l in retries):
            failed.append(f"a retry line does not name the store and the refusal:\n{log}")
        if PASSWORD in log:
            failed.append(f"the log shows the store's password:\n{log}")
        if "trying again in 1 s" not in retries[0] or "trying again in 2 s" not in retries[1]:
            failed.append(f"the waits do not start at 1 s and double:\n{log}")
        if healthz() is not None:
            failed.append("store down: /healthz answered before the store was reached")

        # 2. The store comes up: the controller follows within the next back-off step (<= 4 s now).
        start_redis()
        up_at = time.monotonic()
        status = None
        while time.monotonic() < up_at + 10 and proc.poll() is None:
            status = healthz()
            if status == 200:
                break
            time.sleep(0.2)
        log = read(logf)
        if status != 200:
            failed.append(f"store up: /healthz not 200 within 10 s (got {status}):\n{log}")
        else:
            print(f"ok: /healthz 200 {time.monotonic() - up_at:.1f} s after redis-server started")
            if "store reached at attempt" not in log:
                failed.append(f"store up: the log does not say the store was reached:\n{log}")
    proc.terminate()
    try:
        rc = proc.wait(timeout=10)
        if rc != 0:
            failed.append(f"SIGTERM after start-up: rc {rc}")
    except subprocess.TimeoutExpired:
        failed.append("SIGTERM after start-up: still running after 10 s")

    # 3. Errors no waiting cures fail at once (redis-server is up here).
    for name, bad, expect in [("wrong-password", f"redis://:wrong@127.0.0.1:{REDIS_PORT}", "AUTH"),
                              ("bad-url", "redis://127.0.0.1:99999", "99999")]:
        proc, logf = start_controller(name, bad)
        try:
            rc = proc.wait(timeout=3)
            log = read(logf)
            if rc != 1 or expect not in log or "store not reachable" in log:
                failed.append(f"{name}: expected rc 1 at once naming '{expect}', no retry; rc {rc}:\n{log}")
            else:
                print(f"ok: {name} fails at once: {log.strip()}")
        except subprocess.TimeoutExpired:
            failed.append(f"{name}: still running after 3 s (retrying a config error?):\n{read(logf)}")

    stop_redis()
    # 4. store_startup_timeout: gives up after it (exit 1, saying so).
    proc, logf = start_controller("timeout", store, "store_startup_timeout: 2s\n")
    try:
        rc = proc.wait(timeout=6)
        log = read(logf)
        if rc != 1 or "gave up after store_startup_timeout" not in log:
            failed.append(f"store_startup_timeout 2s: expected rc 1 saying it gave up; rc {rc}:\n{log}")
        else:
            print("ok: store_startup_timeout 2s gives up with exit 1")
    except subprocess.TimeoutExpired:
        failed.append(f"store_startup_timeout 2s: still running after 6 s:\n{read(logf)}")

    # 5. SIGTERM while retrying: a prompt, clean exit.
    proc, logf = start_controller("sigterm", store)
    time.sleep(2.5)
    if proc.poll() is not None:
        failed.append(f"sigterm case: exited before the signal (rc {proc.returncode}):\n{read(logf)}")
    else:
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(timeout=2)
            took = time.monotonic() - t0
            log = read(logf)
            if rc != 0 or "listening" in log:
                failed.append(f"SIGTERM during retries: rc {rc} (expected 0, never listening):\n{log}")
            else:
                print(f"ok: SIGTERM during the retries: exit 0 after {took:.2f} s")
        except subprocess.TimeoutExpired:
            failed.append(f"SIGTERM during retries: still running after 2 s:\n{read(logf)}")
finally:
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()
    stop_redis()
    shutil.rmtree(tmp, ignore_errors=True)

if failed:
    for f in failed:
        print("FAIL:", f)
    sys.exit(1)
print("ok: start-up waits for an unreachable store, says why, follows it up, and stops on SIGTERM")
