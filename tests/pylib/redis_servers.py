"""Real redis-server processes for the controller's service tests, on 127.0.0.1: one server, or a Redis
Cluster of masters only (no replicas, so a killed master is a real shard outage). Every node keeps
an append-only file in the test's folder, so a node stopped (even with SIGKILL: Redis writes the AOF
before it answers) and started again comes back with its data and, in a cluster, its node id.
Loopback only. The caller stops the processes (mesh_harness.stop)."""
import shutil
import subprocess
import sys
import time

REDIS = shutil.which("redis-server")


def skip_without_redis():
    """Exit 77 (ctest's skip) when redis-server or redis-cli is not installed."""
    if not REDIS or not shutil.which("redis-cli"):
        print("SKIP: redis-server not installed")
        sys.exit(77)


def cli(port, *args):
    """redis-cli -p port args...: its stdout, stripped ('' when the node does not answer)."""
    r = subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True, text=True, timeout=10)
    return r.stdout.strip()


def _wait(pred, what, timeout=20):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.1)
    raise SystemExit(f"FAIL: {what}")


def start_redis(tmp, port, appendonly=True, extra=()):
    """One redis-server on 127.0.0.1:port (data and log in tmp; append-only when asked, so a restart
    keeps the data), waited for until it answers PING."""
    p = subprocess.Popen([REDIS, "--port", str(port), "--bind", "127.0.0.1", "--dir", tmp,
                          "--appendonly", "yes" if appendonly else "no", "--save", "", *extra],
                         stdout=open(f"{tmp}/redis-{port}.log", "a"), stderr=subprocess.STDOUT)
    _wait(lambda: cli(port, "ping") == "PONG", f"redis-server on port {port} up")
    return p


def start_cluster_node(tmp, port):
    """One cluster node (append-only, its nodes.conf in tmp, cluster-node-timeout 1 s so a lost
    master is noticed within about a second), waited for until it answers PING."""
    return start_redis(tmp, port, extra=["--cluster-enabled", "yes",
                                         "--cluster-config-file", f"{tmp}/nodes-{port}.conf",
                                         "--cluster-node-timeout", "1000", "--appendfilename",
                                         f"appendonly-{port}.aof", "--appenddirname", f"aof-{port}"])


def cluster_ok(ports):
    """True when every node of `ports` says cluster_state:ok."""
    return all("cluster_state:ok" in cli(p, "cluster", "info") for p in ports)


def wait_cluster_ok(ports, timeout=30):
    _wait(lambda: cluster_ok(ports), f"cluster {ports} reaches cluster_state:ok", timeout)


def start_cluster(tmp, ports):
    """A Redis Cluster of len(ports) masters and no replicas (redis-cli --cluster create), waited for
    until every node says cluster_state:ok. Returns {port: Popen}."""
    nodes = {p: start_cluster_node(tmp, p) for p in ports}
    r = subprocess.run(["redis-cli", "--cluster", "create", *[f"127.0.0.1:{p}" for p in ports],
                        "--cluster-replicas", "0", "--cluster-yes"], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise SystemExit(f"FAIL: redis-cli --cluster create: {r.stdout}{r.stderr}")
    wait_cluster_ok(ports)
    return nodes


def master_of(port, key):
    """The port of the master serving `key`'s slot, as node `port` sees the cluster."""
    slot = int(cli(port, "cluster", "keyslot", key))
    for line in cli(port, "cluster", "nodes").splitlines():
        f = line.split()
        if "master" not in f[2]:
            continue
        for rng in f[8:]:
            lo, _, hi = rng.partition("-")
            if lo.isdigit() and int(lo) <= slot <= int(hi or lo):
                return int(f[1].split(":")[1].split("@")[0])
    raise SystemExit(f"FAIL: no master serves the slot of {key}")
