#!/usr/bin/env python3
"""A stand-in for `weft controller`'s HTTP API, for developing the dashboard and for the 500 x 500
render benchmark. It serves web/ from disk and a synthetic mesh in exactly the shapes docs/api.md
documents (mesh, pair history, agents, groups). It is NOT a substitute for the real controller:
tests/dashboard/dashboard_test.py runs against `weft controller` itself.

    fake_controller.py --port 19080 --hosts 500 [--web DIR]

The synthetic mesh is deterministic (seeded): RTTs around 40-400 us, one lossy pair (h1 -> h2,
30 % loss), one down agent (the last host), one stale pair (h2 -> h3) and one pair with no data
(h3 -> h1) so every cell state shows up.
"""
import argparse
import json
import math
import random
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

WINDOW_S = 10
PROTOCOLS = ["udp", "tcp"]

CONTENT_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
                 ".css": "text/css; charset=utf-8"}


def host_name(i, width):
    return f"h{i + 1:0{width}d}"


class Mesh:
    def __init__(self, n, seed=1):
        width = len(str(n))
        self.hosts = [host_name(i, width) for i in range(n)]
        self.index = {h: i for i, h in enumerate(self.hosts)}
        self.rng = random.Random(seed)
        # Per-host base latency so rows/columns have structure, like real racks.
        self.base = [30 + 10 * (i % 7) + self.rng.random() * 20 for i in range(n)]
        self.lossy = (self.hosts[0], self.hosts[1])
        self.stale = (self.hosts[1], self.hosts[2])
        self.missing = (self.hosts[2], self.hosts[0])
        self.down = self.hosts[-1] if n > 3 else None

    def window(self, src, dst, end_ns, protocol, rng):
        i, j = self.index[src], self.index[dst]
        p50 = self.base[i] + self.base[j] + rng.random() * 5 + (15 if protocol == "tcp" else 0)
        sent = 100
        lost = 30 if (src, dst) == self.lossy else (1 if rng.random() < 0.01 else 0)
        late = 1 if rng.random() < 0.005 else 0
        p99 = p50 * (2 + rng.random() * 3)
        return {
            "src": src, "dst": dst,
            "window_start": (end_ns - WINDOW_S * 10**9) / 1e9, "window_end": end_ns / 1e9,
            "target_address": f"10.77.0.{j + 1}:7000",
            "sent": sent, "received": sent - lost, "lost": lost, "late": late, "duplicate": 0,
            "malformed": 0, "weird": 0, "loss_ratio": lost / sent, "timestamp_source": "kernel",
            "network_rtt_us": {"count": sent - lost, "p50": round(p50, 1), "p90": round(p50 * 1.3, 1),
                               "p99": round(p99, 1), "max": round(p99 * (1 + rng.random() * 2), 1)},
        }

    def pairs(self, protocol, members):
        now_ns = time.time_ns()
        end_ns = now_ns - now_ns % (WINDOW_S * 10**9)
        rng = random.Random(end_ns // 10**9)
        out = []
        for s in members:
            if s == self.down:
                continue
            for d in members:
                if s == d or d == self.down or (s, d) == self.missing:
                    continue
                e = end_ns - (5 * WINDOW_S * 10**9 if (s, d) == self.stale else 0)
                w = self.window(s, d, e, protocol, rng)
                w["age_s"] = (now_ns - e) / 1e9
                out.append(w)
        return out

    def history(self, protocol, src, dst, since_ns):
        now_ns = time.time_ns()
        end = now_ns - now_ns % (WINDOW_S * 10**9)
        start = max(since_ns, end - 6 * 3600 * 10**9)
        out = []
        t = end
        while t > start:
            rng = random.Random(t // 10**9)
            w = self.window(src, dst, t, protocol, rng)
            del w["src"], w["dst"]  # history windows carry neither (the URL names the pair)
            # A daily-ish wave so the chart has a shape.
            k = 1 + 0.3 * math.sin(t / 10**9 / 900)
            for q in w["network_rtt_us"]:
                w["network_rtt_us"][q] = round(w["network_rtt_us"][q] * k, 1)
            out.append(w)
            t -= WINDOW_S * 10**9
        out.reverse()
        return out

    def agents(self):
        now_ns = time.time_ns()
        res = []
        for i, h in enumerate(self.hosts):
            down = h == self.down
            res.append({
                "name": h, "state": "down" if down else "up", "version": "0.1.0",
                "addresses": [f"10.77.{i // 250}.{i % 250 + 1}"], "protocols": PROTOCOLS,
                "registered": now_ns / 1e9 - 3600, "last_seen": now_ns / 1e9 - (300 if down else 3),
                "last_seen_age_s": 300 if down else 3, "pinglist_version": 1,
                "pinglist_targets": 2 * (len(self.hosts) - 1),
                "health": {"cpu_percent": 1.5 + (i % 5) * 0.3, "rss_kb": 18000 + i * 7,
                           "probes_per_s": 10.0 * (len(self.hosts) - 1), "dropped_windows": 0,
                           "spooled_windows": 0, "prober_restarts": 0},
                "alarms": [{"kind": "agent_down", "message": "no report for 300 s", "since": now_ns / 1e9}] if down else [],
            })
        return res


def topology(hosts, racks, spines=2):
    """/api/v1/topology for the hosts split into `racks` racks under `spines` spines, and the
    suspects' `elements` naming one ToR-spine link (tor1-spine1: 3 % loss), as docs/api.md shapes
    them. racks=0: no topology configured."""
    if not racks:
        return {"configured": False, "elements": []}, []
    el = [{"type": "spine", "name": f"spine{s + 1}"} for s in range(spines)]
    per = math.ceil(len(hosts) / racks)
    for r in range(racks):
        tor = f"tor{r + 1}"
        el.append({"type": "tor", "name": tor, "rack": f"rack{r + 1}"})
        for h in hosts[r * per:(r + 1) * per]:
            el.append({"type": "host", "name": h, "rack": f"rack{r + 1}"})
            el.append({"type": "link", "name": f"{h}-{tor}", "ends": [h, tor]})
        el += [{"type": "link", "name": f"{tor}-spine{s + 1}", "ends": [tor, f"spine{s + 1}"]} for s in range(spines)]
    suspects = [{"type": "link", "name": "tor1-spine1", "reason": "loss", "confidence": 0.9, "loss_ratio": 0.03,
                 "extra_latency_ns": 0, "since_unix_ns": time.time_ns() - 60 * 10**9,
                 "evidence": {"flows": 48, "bad_flows": 17, "pairs": 24,
                              "examples": [f"{hosts[0]} -> {hosts[-1]} sport 40003: 9/100 lost"]}}]
    return {"configured": True, "source": "fake_controller.py", "elements": el,
            "state": {"tor1-spine1": "suspect"}}, suspects


class Handler(BaseHTTPRequestHandler):
    mesh: Mesh = None
    racks = 0
    web: Path = None

    def log_message(self, *args):
        pass

    def send(self, code, body, ctype="application/json"):
        data = body if isinstance(body, bytes) else json.dumps(body, separators=(",", ":")).encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        u = urllib.parse.urlparse(self.path)
        q = {k: v[0] for k, v in urllib.parse.parse_qs(u.query).items()}
        m = self.mesh
        parts = u.path.strip("/").split("/")
        if u.path in ("/", "/index.html") or u.path.startswith("/assets/"):
            rel = "index.html" if u.path == "/" else u.path.lstrip("/")
            f = (self.web / rel).resolve()
            if self.web.resolve() not in f.parents or not f.is_file():
                return self.send(404, {"error": "not found"})
            return self.send(200, f.read_bytes(), CONTENT_TYPES.get(f.suffix, "application/octet-stream"))
        if u.path == "/healthz":
            return self.send(200, {"status": "ok"})
        if u.path == "/api/v1/groups":
            return self.send(200, {"protocols": PROTOCOLS,
                                   "groups": [{"name": "all", "protocols": PROTOCOLS, "members": m.hosts}]})
        if u.path == "/api/v1/agents":
            return self.send(200, {"agents": m.agents()})
        if u.path == "/api/v1/mesh":
            proto = q.get("protocol")
            if proto not in PROTOCOLS:
                return self.send(400, {"error": f"unknown protocol {proto!r}"})
            group = q.get("group") or None
            if group not in (None, "all"):
                return self.send(404, {"error": f"no group named '{group}'"})
            return self.send(200, {"protocol": proto, "group": group, "window_s": WINDOW_S,
                                   "hosts": m.hosts, "pairs": m.pairs(proto, m.hosts)})
        if u.path == "/api/v1/topology":
            return self.send(200, topology(m.hosts, self.racks)[0])
        if u.path == "/api/v1/suspects":  # a synthetic mesh: only the topology's one suspect link
            return self.send(200, {"protocol": q.get("protocol"), "loss_threshold": 0.05, "measured_pairs": 0,
                                   "bad_pairs": 0, "hosts": [], "links": [], "down": [],
                                   "elements": topology(m.hosts, self.racks)[1]})
        if len(parts) == 6 and parts[:3] == ["api", "v1", "pairs"] and parts[5] == "history":
            src, dst = urllib.parse.unquote(parts[3]), urllib.parse.unquote(parts[4])
            since = int(float(q.get("since", time.time() - 3600)) * 10**9)
            return self.send(200, {"protocol": q.get("protocol"), "src": src, "dst": dst, "since": since / 1e9,
                                   "windows": m.history(q.get("protocol"), src, dst, since)})
        self.send(404, {"error": "not found"})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=19080)
    ap.add_argument("--hosts", type=int, default=8)
    ap.add_argument("--racks", type=int, default=0, help="serve a topology of this many racks (0: none)")
    ap.add_argument("--web", default=str(Path(__file__).resolve().parents[2] / "web"))
    a = ap.parse_args()
    Handler.mesh = Mesh(a.hosts)
    Handler.web = Path(a.web)
    Handler.racks = a.racks
    srv = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    print(f"fake controller on http://127.0.0.1:{a.port}/ ({a.hosts} hosts)", flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
