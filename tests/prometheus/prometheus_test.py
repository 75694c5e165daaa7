#!/usr/bin/env python3
"""Service test: a real Prometheus (Debian's) scrapes a real `weft controller`.

The test starts the controller on loopback with a generated config, feeds it a 4-host mesh over
the agent API (one pair with 25 % loss, known RTTs), starts Prometheus with a generated config and
its own temporary TSDB, waits for scrapes, then asks Prometheus's HTTP API for our series and
checks their values against what was fed. It also runs `promtool check metrics` on the live
/metrics text.

    prometheus_test.py WEFT_BINARY
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "dashboard"))
from controller_fixture import Controller, base_us  # noqa: E402
from webdriver import stop, wait_port  # noqa: E402

CONTROLLER_PORT, PROMETHEUS_PORT = 19110, 19111
HOSTS = [f"wdb-p{i}" for i in range(1, 5)]
LOSSY = (HOSTS[0], HOSTS[1])
LOSS = 0.25


class Prometheus:
    def __init__(self, target_port):
        self.target_port = target_port
        self.dir = None
        self.proc = None

    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="wdb-prometheus-")
        cfg = os.path.join(self.dir, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write(f"""global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: weft
    static_configs:
      - targets: ["127.0.0.1:{self.target_port}"]
  - job_name: weft-pairs
    params: {{pairs: ["1"]}}
    static_configs:
      - targets: ["127.0.0.1:{self.target_port}"]
""")
        self.log = open(os.path.join(self.dir, "prometheus.log"), "wb")
        self.proc = subprocess.Popen(
            ["prometheus", f"--config.file={cfg}", f"--storage.tsdb.path={self.dir}/data",
             f"--web.listen-address=127.0.0.1:{PROMETHEUS_PORT}", "--storage.tsdb.retention.time=1h"],
            stdout=self.log, stderr=subprocess.STDOUT)
        try:
            wait_port(PROMETHEUS_PORT, timeout=30, proc=self.proc)
            self.wait_ready()
        except BaseException:
            self.__exit__(RuntimeError, None, None)
            raise
        return self

    def __exit__(self, *exc):
        stop(self.proc, timeout=10)
        if exc[0] is not None and self.dir:
            self.log.flush()
            with open(self.log.name, "rb") as f:
                print("---- prometheus log (tail) ----\n" + f.read()[-3000:].decode(errors="replace"))
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
        return False

    def wait_ready(self, timeout=60):
        # The port opens before the TSDB is loaded; queries answer 503 until /-/ready says 200.
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{PROMETHEUS_PORT}/-/ready", timeout=5) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"Prometheus not ready after {timeout} s")

    def query(self, q):
        url = f"http://127.0.0.1:{PROMETHEUS_PORT}/api/v1/query?" + urllib.parse.urlencode({"query": q})
        with urllib.request.urlopen(url, timeout=10) as r:
            out = json.load(r)
        assert out["status"] == "success", out
        return out["data"]["result"]

    def value(self, q):
        """The single sample `q` returns, as a float, or None if there is none yet."""
        res = self.query(q)
        assert len(res) <= 1, f"{q}: {len(res)} series, expected one: {res}"
        return float(res[0]["value"][1]) if res else None


def wait_value(prom, q, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = prom.value(q)
        if v is not None:
            return v
        time.sleep(0.5)
    raise AssertionError(f"Prometheus has no sample for {q} after {timeout} s")


def close(a, b, rel=1e-9):
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-12)


def main():
    weft = sys.argv[1]
    for tool in ("prometheus", "promtool"):
        if not shutil.which(tool):
            print(f"{tool} not installed: skipped")
            return 77
    failures = []

    def expect(cond, msg):
        print(("ok   " if cond else "FAIL ") + msg)
        if not cond:
            failures.append(msg)

    with Controller(weft, CONTROLLER_PORT, HOSTS, lossy={LOSSY: LOSS}) as ctl:
        ctl.register_all()
        ctl.backfill(3)
        ctl.feed_forever()

        status, headers, body = ctl.request("GET", "/metrics", token=False)
        expect(status == 200, f"GET /metrics -> {status}")
        expect(headers.get("Content-Type", "").startswith("text/plain; version=0.0.4"), f"content type {headers.get('Content-Type')}")
        lint = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True)
        expect(lint.returncode == 0, f"promtool check metrics on live /metrics: rc {lint.returncode} {lint.stdout.decode()}{lint.stderr.decode()}")

        with Prometheus(CONTROLLER_PORT) as prom:
            expect(wait_value(prom, 'up{job="weft"}') == 1, 'up{job="weft"} == 1')
            n = len(HOSTS)
            expect(wait_value(prom, 'up{job="weft-pairs"}') == 1, 'up{job="weft-pairs"} == 1')
            sel = lambda h, d: f'job="weft",host="{h}",protocol="udp",direction="{d}"'  # noqa: E731

            # Loss: wdb-p1 probes 3 peers, 200 probes each, 25 % lost towards wdb-p2.
            v = wait_value(prom, f"weft_host_loss_ratio{{{sel(LOSSY[0], 'src')}}}")
            expect(close(v, LOSS / (n - 1)), f"{LOSSY[0]} loss ratio as prober {v} == {LOSS / (n - 1)}")
            v = prom.value(f"weft_host_loss_ratio{{{sel(LOSSY[1], 'dst')}}}")
            expect(v is not None and close(v, LOSS / (n - 1)), f"{LOSSY[1]} loss ratio as target {v} == {LOSS / (n - 1)}")
            v = prom.value(f"weft_host_loss_ratio{{{sel(HOSTS[2], 'src')}}}")
            expect(v == 0, f"{HOSTS[2]} loss ratio {v} == 0")

            # RTT: pair (i, j) was fed p50 = base_us(i, j) and p99 = 2 * p50.
            for i, h in enumerate(HOSTS):
                p50s = sorted(base_us(i, j) for j in range(n) if j != i)
                want_median = p50s[len(p50s) // 2] * 1e-6  # 3 peers: the middle one
                want_worst = 2 * max(p50s) * 1e-6
                v = prom.value(f"weft_host_peer_rtt_median_seconds{{{sel(h, 'src')}}}")
                expect(v is not None and close(v, want_median), f"{h} median peer RTT {v} == {want_median}")
                v = prom.value(f"weft_host_peer_rtt_worst_seconds{{{sel(h, 'src')}}}")
                expect(v is not None and close(v, want_worst), f"{h} worst peer RTT {v} == {want_worst}")
                v = prom.value(f"weft_host_peers{{{sel(h, 'src')}}}")
                expect(v == n - 1, f"{h} peers {v} == {n - 1}")
                v = prom.value(f"weft_host_peers_unreachable{{{sel(h, 'src')}}}")
                expect(v == 0, f"{h} unreachable peers {v} == 0")
                v = prom.value(f'weft_agent_up{{job="weft",host="{h}"}}')
                expect(v == 1, f"{h} agent up {v}")
                v = prom.value(f'weft_agent_resident_memory_bytes{{job="weft",host="{h}"}}')
                expect(v == (20000 + 1000 * i) * 1024, f"{h} agent RSS {v} bytes")
                v = prom.value(f'weft_agent_cpu_ratio{{job="weft",host="{h}"}}')
                expect(v is not None and close(v, (1.0 + i) / 100), f"{h} agent CPU ratio {v}")

            # Per-pair series only where asked for (?pairs=1), with the fed values.
            pairs = prom.query('count by (job) (weft_pair_loss_ratio)')
            expect([(r["metric"]["job"], r["value"][1]) for r in pairs] == [("weft-pairs", str(n * (n - 1)))],
                   f"per-pair series: only job weft-pairs, one per ordered pair: {pairs}")
            v = prom.value(f'weft_pair_loss_ratio{{src="{LOSSY[0]}",dst="{LOSSY[1]}"}}')
            expect(v == LOSS, f"pair {LOSSY} loss ratio {v} == {LOSS}")
            v = prom.value(f'weft_pair_network_rtt_seconds{{src="{HOSTS[2]}",dst="{HOSTS[3]}",stat="p50"}}')
            expect(v is not None and close(v, base_us(2, 3) * 1e-6), f"pair p3->p4 RTT p50 {v} == {base_us(2, 3) * 1e-6}")
            v = prom.value('weft_controller_metrics_pairs_omitted{job="weft-pairs"}')
            expect(v == 0, f"no pair omitted under the default cap ({v})")

            # The controller's own health.
            expect(prom.value('weft_controller_agents{job="weft",state="up"}') == n, "controller sees all agents up")
            expect(prom.value('weft_controller_agents{job="weft",state="down"}') == 0, "controller sees no agent down")
            v = prom.value('weft_controller_store_pairs{job="weft",protocol="udp",freshness="current"}')
            expect(v == n * (n - 1), f"store holds {v} current pairs == {n * (n - 1)}")
            # The feeder reports n*(n-1) windows per 2 s window, i.e. 6 windows/s.
            time.sleep(12)
            v = prom.value('rate(weft_controller_ingest_windows_total{job="weft",result="accepted"}[10s])')
            want = n * (n - 1) / ctl.window_s
            expect(v is not None and want / 2 <= v <= want * 2, f"ingest rate {v} windows/s, fed {want}")
            v = prom.value('weft_controller_ingest_rejected_requests_total{job="weft"}')
            expect(v == 0, f"no ingest request rejected ({v})")
            names = {r["metric"]["__name__"] for r in prom.query('{__name__=~"weft_.+",job="weft"}')}
            print(f"{len(names)} weft_* metric names in Prometheus")
        expect(ctl.feed_error is None, f"feeding the controller: {ctl.feed_error}")

    if failures:
        print(f"prometheus test: {len(failures)} FAILED")
        return 1
    print("prometheus test: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
