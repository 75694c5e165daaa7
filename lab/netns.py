"""A throw-away lab of network namespaces on one Linux bridge, for tests (Python 3 stdlib only).

    with Lab("wpr", hosts=3) as lab:          # namespaces wpr-h1..h3, bridge wpr-br, 10.77.<net>.1..3/24
        lab.run(1, ["weft", "responder"])     # run in host 1 (returns a Popen); killed on exit
        lab.ip(2)                             # "10.77.<net>.2"
        lab.drop(src=1, dst=2, percent=20)    # random loss on the bridge for frames h1 -> h2
        lab.clear_drops()

Everything it creates (namespaces, links, nftables tables, processes) is removed on exit, also when the
test fails. Each lab gets its own prefix and /24 so labs of different tests can run at the same time.
Traffic stays inside these namespaces: the bridge has no uplink and no address of the root namespace.
"""
import os
import shutil
import signal
import subprocess
import time

SKIP = 77  # ctest SKIP_RETURN_CODE


def require_root():
    """Exit with the ctest skip code when the lab cannot be built here."""
    if os.geteuid() != 0:
        print("SKIP: lab tests need root (network namespaces)")
        raise SystemExit(SKIP)
    for tool in ("ip", "nft"):
        if shutil.which(tool) is None:
            print(f"SKIP: {tool} not installed")
            raise SystemExit(SKIP)


def sh(*args, check=True, ns=None, capture=False):
    cmd = list(args)
    if ns is not None:
        cmd = ["ip", "netns", "exec", ns] + cmd
    r = subprocess.run(cmd, check=False, text=True, capture_output=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()}")
    return r.stdout if capture else r.returncode


class Lab:
    def __init__(self, prefix, hosts=3, net=None):
        assert len(prefix) <= 6, "interface names must stay under 16 characters"
        self.prefix = prefix
        self.n = hosts
        # A /24 per prefix so concurrent labs never share addresses.
        self.net = net if net is not None else 100 + (sum(map(ord, prefix)) % 100)
        self.bridge = f"{prefix}-br"
        self.table = f"{prefix}_loss"
        self.procs = []

    def ns(self, i):
        return f"{self.prefix}-h{i}"

    def ip(self, i):
        return f"10.77.{self.net}.{i}"

    def veth_host_side(self, i):
        return f"{self.prefix}-v{i}"

    def __enter__(self):
        self.cleanup()  # leftovers of a killed run
        try:
            sh("ip", "link", "add", self.bridge, "type", "bridge")
            sh("ip", "link", "set", self.bridge, "up")
            for i in range(1, self.n + 1):
                ns, v = self.ns(i), self.veth_host_side(i)
                sh("ip", "netns", "add", ns)
                sh("ip", "link", "add", v, "type", "veth", "peer", "name", "eth0", "netns", ns)
                sh("ip", "link", "set", v, "master", self.bridge)
                sh("ip", "link", "set", v, "up")
                sh("ip", "addr", "add", f"{self.ip(i)}/24", "dev", "eth0", ns=ns)
                sh("ip", "link", "set", "eth0", "up", ns=ns)
                sh("ip", "link", "set", "lo", "up", ns=ns)
        except Exception:
            self.cleanup()
            raise
        return self

    def __exit__(self, *exc):
        self.cleanup()
        return False

    def run(self, i, argv, **popen_kwargs):
        """Start argv inside host i; the process is killed when the lab closes."""
        p = subprocess.Popen(["ip", "netns", "exec", self.ns(i)] + list(argv), start_new_session=True,
                             **popen_kwargs)
        self.procs.append(p)
        return p

    def exec(self, i, argv, timeout=120):
        """Run argv inside host i to completion; returns CompletedProcess (text)."""
        return subprocess.run(["ip", "netns", "exec", self.ns(i)] + list(argv), text=True,
                              capture_output=True, timeout=timeout)

    def drop(self, src, dst, percent):
        """Drop `percent`% of frames going from host src to host dst, on the bridge (not at the sender,
        whose own qdisc drops would be reported back to the socket)."""
        if sh("nft", "list", "table", "bridge", self.table, check=False) != 0:
            sh("nft", "add", "table", "bridge", self.table)
            sh("nft", "add", "chain", "bridge", self.table, "f",
               "{ type filter hook forward priority 0; policy accept; }")
        sample = [] if percent >= 100 else ["numgen", "random", "mod", "100", "<", str(int(percent))]
        sh("nft", "add", "rule", "bridge", self.table, "f", "iifname", self.veth_host_side(src),
           "oifname", self.veth_host_side(dst), *sample, "counter", "drop")

    def clear_drops(self):
        sh("nft", "delete", "table", "bridge", self.table, check=False)

    def stop(self, proc, timeout=5):
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                return
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()

    def cleanup(self):
        for p in self.procs:
            self.stop(p, timeout=2)
        self.procs = []
        self.clear_drops()
        for i in range(1, self.n + 1):
            sh("ip", "netns", "del", self.ns(i), check=False)
            sh("ip", "link", "del", self.veth_host_side(i), check=False)
        sh("ip", "link", "del", self.bridge, check=False)


def wait_for(predicate, timeout, interval=0.2, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = predicate()
        if v:
            return v
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
