"""Starts a real `weft controller` on loopback with a generated config and feeds it like agents do
(register, then report windows over the JSON ingest API documented in docs/api.md), so the
dashboard and Prometheus tests see exactly what the controller serves. Python stdlib only.

The fed mesh is deterministic: every ordered pair of `hosts` gets one window per window length,
with network RTT p50 = base_us(src, dst) and the loss the test asks for on chosen pairs."""
import json
import os
import sys
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request

from webdriver import stop, wait_port

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from agent_tokens import agent_token  # noqa: E402  (tests/pylib)

# Each fed host reports with its own token under this secret, as real agents do; reads need none
# (the controller listens on loopback, where the read API is open).
AGENT_SECRET = "wdb-test-agent-secret-0123"


def base_us(src_i, dst_i):
    """The fed network RTT p50 of a pair, in microseconds (different per pair so a mix-up shows)."""
    return 100 + 10 * src_i + dst_i


class Controller:
    def __init__(self, weft, port, hosts, group="wdb", window_s=2, lossy=None, protocols=("udp",),
                 never=(), backfill_only=(), silent=(), down_after_s=30, groups=None, extra_config=""):
        """never: pairs never reported (no data); backfill_only: pairs reported only by backfill()
        (they go stale); silent: hosts that report only in backfill() (marked down after
        down_after_s); groups: [(name, [members])] instead of the one group of all hosts;
        extra_config: YAML appended to the config (e.g. a topology section)."""
        self.weft = weft
        self.port = port
        self.hosts = list(hosts)
        self.group = group
        self.window_s = window_s
        self.lossy = dict(lossy or {})  # (src, dst) -> loss ratio
        self.protocols = list(protocols)
        self.never = set(never)
        self.backfill_only = set(backfill_only)
        self.silent = set(silent)
        self.down_after_s = down_after_s
        self.groups = groups or [(group, ["wdb-*"])]
        self.extra_config = extra_config
        self.dir = None
        self.proc = None
        self.feeder = None
        self.stop_feeding = threading.Event()
        self.reported = 0
        self.feed_error = None
        self.failed_log = ""

    # -- process -------------------------------------------------------------------------------
    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="wdb-controller-")
        cfg = os.path.join(self.dir, "weft.yaml")
        protos = "\n".join(f"  {p}: {{interval: 100ms, timeout: 1s}}" for p in self.protocols)
        with open(cfg, "w") as f:
            f.write(f"""listen: ["127.0.0.1:{self.port}"]
agent_secret: "{AGENT_SECRET}"
store: "sqlite:{self.dir}/history.db"
window: {self.window_s}s
agent_down_after: {self.down_after_s}s
retention: 1h
protocols:
{protos}
groups:
""")
            for name, members in self.groups:
                f.write(f"""  - name: {name}
    protocols: [{", ".join(self.protocols)}]
    members: [{", ".join(f'"{m}"' for m in members)}]
""")
            f.write(self.extra_config)
        self.log = open(os.path.join(self.dir, "controller.log"), "wb")
        self.proc = subprocess.Popen([self.weft, "controller", "--config", cfg], stdout=self.log, stderr=subprocess.STDOUT)
        try:
            wait_port(self.port, proc=self.proc)
        except BaseException as e:
            self.__exit__(type(e), e, None)
            raise
        return self

    def __exit__(self, *exc):
        self.stop_feeding.set()
        if self.feeder:
            self.feeder.join(10)
        stop(self.proc)
        if self.proc and exc[0] is not None:
            self.log.flush()
            with open(self.log.name, "rb") as f:
                self.failed_log = f.read()[-4000:].decode(errors="replace")  # for the test to read
                print("---- controller log (tail) ----\n" + self.failed_log)
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
        return False

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    # -- HTTP ----------------------------------------------------------------------------------
    def request(self, method, path, body=None, token=None, agent=None):
        """`agent`: send as that fed host, with its own token; `token`: this bearer token."""
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"}
        if agent:
            token = agent_token(AGENT_SECRET, agent)
        if token:
            headers["Authorization"] = f"Bearer {token}"
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, r.headers, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers, e.read()

    def get_json(self, path):
        status, _, body = self.request("GET", path)
        assert status == 200, f"GET {path}: {status} {body[:300]!r}"
        return json.loads(body)

    # -- feeding -------------------------------------------------------------------------------
    def register_all(self):
        for i, h in enumerate(self.hosts):
            status, _, body = self.request("POST", "/api/v1/register", agent=h, body={
                "name": h, "version": "0.1.0-test", "addresses": [f"127.0.{(i + 10) // 250}.{(i + 10) % 250 + 1}"],
                "protocols": self.protocols, "udp_port": 7000 + i % 50000, "tcp_port": 7000 + i % 50000})
            assert status == 200, f"register {h}: {status} {body[:300]!r}"

    def window(self, proto, src_i, dst_i, end_ns, sent=200):
        src, dst = self.hosts[src_i], self.hosts[dst_i]
        lost = round(sent * self.lossy.get((src, dst), 0.0))
        received = sent - lost
        p50 = base_us(src_i, dst_i) * 1000
        rtt = {"count": received, "min_ns": p50 // 2, "mean_ns": p50, "p50_ns": p50, "p90_ns": p50 * 12 // 10,
               "p95_ns": p50 * 13 // 10, "p99_ns": p50 * 2, "p999_ns": p50 * 3, "max_ns": p50 * 4}
        if received == 0:
            rtt = {"count": 0}
        return {"protocol": proto, "target": dst, "target_address": f"127.0.0.{dst_i + 10}:{7000 + dst_i}",
                "start_unix_ns": end_ns - self.window_s * 10**9, "end_unix_ns": end_ns,
                "sent": sent, "received": received, "lost": lost, "late": 0, "duplicate": 0,
                "timestamp_source": "kernel", "rtt": rtt, "network_rtt": rtt}

    def report(self, end_ns, seq, live=False):
        for si, src in enumerate(self.hosts):
            if live and src in self.silent:
                continue
            windows = [self.window(p, si, di, end_ns) for p in self.protocols
                       for di, dst in enumerate(self.hosts)
                       if di != si and (src, dst) not in self.never
                       and not (live and (src, dst) in self.backfill_only)]
            status, _, body = self.request("POST", "/api/v1/report", agent=src, body={
                "agent": src, "seq": seq,
                "health": {"cpu_percent": 1.0 + si, "rss_kb": 20000 + 1000 * si, "probes_per_s": 10.0 * (len(self.hosts) - 1),
                           "dropped_windows": 0, "spooled_windows": 0, "prober_restarts": 0},
                "alarms": [], "windows": windows})
            assert status == 200, f"report {src}: {status} {body[:300]!r}"
        self.reported += 1

    def backfill(self, windows):
        """Reports `windows` past windows per pair (oldest first) so pair history has a shape."""
        w = self.window_s * 10**9
        last = time.time_ns() // w * w
        for k in range(windows, 0, -1):
            self.report(last - k * w, seq=windows - k)

    def feed_forever(self):
        """Reports the current window of every pair once per window length, in a thread, until exit."""
        def run():
            w = self.window_s * 10**9
            seq = 10**6
            last_end = 0
            try:
                while not self.stop_feeding.is_set():
                    end = time.time_ns() // w * w
                    if end != last_end:
                        self.report(end, seq, live=True)
                        seq += 1
                        last_end = end
                    self.stop_feeding.wait(0.2)
            except Exception as e:  # surfaced by the test through feed_error
                self.feed_error = e
        self.feeder = threading.Thread(target=run, daemon=True)
        self.feeder.start()
