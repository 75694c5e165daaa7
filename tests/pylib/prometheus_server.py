"""A real Prometheus (Debian's) for the remote-write tests and bench, on 127.0.0.1: its remote-write
receiver on and an out_of_order_time_window of 1 h (a late or spooled window is older than its
series' newest sample), its TSDB in the caller's folder so a restart keeps what it took in.
Loopback only. The caller stops the process (mesh_harness.stop)."""
import shutil
import subprocess
import sys

from mesh_harness import get, wait

PROMETHEUS = shutil.which("prometheus")


def skip_without_prometheus():
    """Exit 77 (ctest's skip) when prometheus is not installed."""
    if not PROMETHEUS:
        print("SKIP: prometheus not installed")
        sys.exit(77)


def start_prometheus(tmp, port):
    """Prometheus on 127.0.0.1:port (config, TSDB and log in tmp), waited for until it answers;
    started again on the same tmp it keeps its data."""
    with open(f"{tmp}/prometheus.yml", "w") as f:
        f.write("global: {}\nstorage:\n  tsdb:\n    out_of_order_time_window: 1h\n")
    p = subprocess.Popen([PROMETHEUS, f"--config.file={tmp}/prometheus.yml", f"--storage.tsdb.path={tmp}/tsdb",
                          f"--web.listen-address=127.0.0.1:{port}", "--web.enable-remote-write-receiver"],
                         stdout=subprocess.DEVNULL, stderr=open(f"{tmp}/prometheus.log", "a"))
    wait(lambda: get(port, "/api/v1/status/buildinfo")["status"] == "success", f"prometheus on port {port} up")
    return p
