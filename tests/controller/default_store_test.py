#!/usr/bin/env python3
"""Issue 14, defect 6: without `store:` the history database landed in the working directory and
nothing said so. The controller keeps that default (docs/controller.md "Stores") but logs the
database's absolute path at start, marked as the default. Checks, with a config that has no store:
  - the log names <cwd>/weft-history.db as the SQLite database and says it is the default;
  - that file is where the history goes (it exists once the controller listens);
  - with `store:` given, the log names that path and does not call it the default.
Usage: default_store_test.py WEFT"""
import os
import subprocess
import sys
import tempfile
import time

WEFT = sys.argv[1]
PORT = 18214


def run_controller(cwd, store_line):
    cfg = os.path.join(cwd, "weft.yaml")
    with open(cfg, "w") as f:
        f.write(f"listen: 127.0.0.1:{PORT}\n{store_line}groups:\n  - {{name: all, protocols: [udp], members: ['*']}}\n")
    logf = os.path.join(cwd, "controller.log")
    proc = subprocess.Popen([WEFT, "controller", "-c", cfg], cwd=cwd, stdout=open(logf, "w"),
                            stderr=subprocess.STDOUT)
    try:
        end = time.monotonic() + 30
        while time.monotonic() < end and proc.poll() is None:
            if "listening" in open(logf).read():
                break
            time.sleep(0.2)
        return open(logf).read()
    finally:
        proc.terminate()
        proc.wait(timeout=20)


failed = []
tmp = os.path.realpath(tempfile.mkdtemp(prefix="wms-default-store-"))
log = run_controller(tmp, "")
default_db = os.path.join(tmp, "weft-history.db")
if f"store: SQLite database {default_db} (the default" not in log:
    failed.append(f"without store: the log does not name {default_db} as the default database:\n{log}")
if not os.path.exists(default_db):
    failed.append(f"without store: no database at {default_db} (the working directory)")

chosen = os.path.join(tmp, "chosen.db")
log = run_controller(tmp, f"store: sqlite:{chosen}\n")
if f"store: SQLite database {chosen}" not in log or f"{chosen} (the default" in log:
    failed.append(f"with store: sqlite:{chosen} the log does not name it (or calls it the default):\n{log}")

if failed:
    for f in failed:
        print("FAIL:", f)
    sys.exit(1)
print("ok: the default database is in the working directory and the log names its absolute path")
