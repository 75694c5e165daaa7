#!/usr/bin/env python3
"""Issue 24 end to end in a Clos of network namespaces (lab/clos.py): 3 racks of 3 hosts, a ToR per
rack, 2 spines, ECMP with L4 hashing.

  1. The lab itself (tests/lab_clos/clos_checks.py): ECMP spreads flows over both spines, routers
     answer TTL expiry, and each of the six faults drops or delays exactly the flows crossing it.
  2. With --faults: a controller given the fabric's topology, an agent in every host; each fault in
     turn is injected, /api/v1/suspects is polled every second, and the test measures the time until
     the right element is named (<= 30 s) and until it is no longer named after the repair
     (<= 30 s, and staying cleared for 10 s), and counts every poll naming an innocent element (must be 0). It prints a table.

Usage: lab_clos_test.py WEFT [--faults all|NAME,...] [--no-lab-checks] [--hold S] [--no-fail]
Needs root; exits 77 (skip) otherwise.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "lab"))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "pylib"))
from agent_tokens import agent_token  # noqa: E402  (tests/pylib)
from clos import CONTROLLER_IP, Clos, require_root  # noqa: E402
import clos_checks  # noqa: E402
from clos_checks import log  # noqa: E402

# Each agent reports with its own token under the controller's secret; the test reads the API with
# a read token (the controller listens beyond loopback, where reads need one).
AGENT_SECRET = "lab-clos-agent-secret-1"
READ_TOKEN = "lab-clos-read-token-1"
PORT = 18480
AGENT_UDP_PORT = 18481
WINDOW_S = 2
BLAME_S = 30   # the bound on time to blame and time to clear
QUIET_S = 60   # at most this long for the previous fault's blame to clear before the next one
SETTLE_S = 10  # and it must stay cleared this long

# name -> (inject(clos), the right elements, adjacent elements that are not counted as innocent)
# Elements are (type, name) as /api/v1/suspects' "elements" gives them.
FAULTS = {
    "link_loss": (lambda c: c.link_loss("tor1", "spine1", 5),
                  {("link", "tor1-spine1")}, {("tor", "tor1"), ("spine", "spine1")}),
    "spine_latency": (lambda c: c.spine_latency("spine2", 2),
                      {("spine", "spine2")}, {("link", f"tor{r}-spine2") for r in (1, 2, 3)}),
    "dead_spine": (lambda c: c.dead_spine("spine1"),
                   {("spine", "spine1")}, {("link", f"tor{r}-spine1") for r in (1, 2, 3)}),
    "flapping_link": (lambda c: c.flapping_link("tor3", "spine2", period_s=3, flaps=15),
                      {("link", "tor3-spine2")}, {("tor", "tor3"), ("spine", "spine2")}),
    # A NIC that loses frames both ways looks, end to end, exactly like its cable or the ToR's port:
    # the right answer is the host's link, whose detail names all three (docs/localisation.md).
    "bad_nic": (lambda c: c.bad_nic("h5", 5),
                {("link", "h5-tor2")}, {("host", "h5")}),
    # A fault of the host's own stack (its responder loses probes): the host, and naming its cable
    # is wrong.
    "host_stack": (lambda c: c.host_stack("h5", 5, AGENT_UDP_PORT),
                   {("host", "h5")}, set()),
    "congested_tor": (lambda c: c.congested_tor("tor3"),
                      {("tor", "tor3")},
                      {("link", f"h{n}-tor3") for n in (7, 8, 9)} | {("link", f"tor3-spine{s}") for s in (1, 2)}),
}


class Api:
    """GETs from inside the controller's namespace (the controller listens only there), through one
    long-lived helper process so a poll costs no process start."""
    CODE = ("import sys, json, urllib.request\n"
            "for line in sys.stdin:\n"
            "    try:\n"
            f"        req = urllib.request.Request(line.strip(), headers={{'Authorization': 'Bearer {READ_TOKEN}'}})\n"
            "        body = urllib.request.urlopen(req, timeout=5).read().decode()\n"
            "        print(json.dumps(json.loads(body)), flush=True)\n"
            "    except Exception as e:\n"
            "        print(json.dumps({'unavailable': type(e).__name__ + ': ' + str(e)}), flush=True)\n")

    def __init__(self, clos):
        self.p = clos.run("ctl", [sys.executable, "-c", self.CODE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          text=True)

    def get(self, path):
        self.p.stdin.write(f"http://{CONTROLLER_IP}:{PORT}{path}\n")
        self.p.stdin.flush()
        return json.loads(self.p.stdout.readline())


class NoTopology(Exception):
    """The controller refused the `topology:` section: a build without issue 24's localisation."""


class Mesh:
    def __init__(self, weft, clos, extra_config=""):
        self.weft, self.c = weft, clos
        self.tmp = tempfile.mkdtemp(prefix="wcl-lab-")
        self.extra = extra_config
        self.api = None

    def start(self):
        cfg = os.path.join(self.tmp, "weft.yaml")
        with open(cfg, "w") as f:
            f.write(f"""listen: {CONTROLLER_IP}:{PORT}
plain_http: true  # the lab network is the test's own
agent_secret: {AGENT_SECRET}
read_tokens: [{READ_TOKEN}]
store: sqlite:{self.tmp}/history.db
window: {WINDOW_S}s
agent_down_after: 10s
report_interval: 500ms
pinglist_sync: 2s
protocols:
  udp: {{interval: 10ms, timeout: 500ms}}
groups:
  - name: fabric
    protocols: [udp]
    members: ["h*"]
{self.c.topology_yaml()}{self.extra}""")
        self.c.run("ctl", [self.weft, "--log-level", "info", "controller", "-c", cfg],
                   stdout=open(f"{self.tmp}/controller.log", "w"), stderr=subprocess.STDOUT)
        self.api = Api(self.c)
        end = time.monotonic() + 20
        while self.api.get("/healthz").get("status") != "ok":
            with open(f"{self.tmp}/controller.log", errors="replace") as f:
                text = f.read()
            if "unknown key" in text and "topology" in text:
                raise NoTopology(text.strip()[-300:])
            assert time.monotonic() < end, "timed out after 20 s waiting for controller /healthz"
            time.sleep(0.5)
        topo = self.api.get("/api/v1/topology")
        assert topo.get("configured") is True, f"the controller did not take the topology: {topo}"
        names = {e["name"] for e in topo["elements"]}
        assert {"spine1", "spine2", "tor1", "h9", "tor1-spine1", "h9-tor3"} <= names, sorted(names)
        for h in self.c.hosts():
            self.c.run(h, [self.weft, "--log-level", "info", "agent", "--controller", f"http://{CONTROLLER_IP}:{PORT}",
                           "--token", agent_token(AGENT_SECRET, h), "--name", h, "--address", self.c.host_ip(h),
                           "--protocols", "udp", "--udp-port", str(AGENT_UDP_PORT), "--tcp-port", "18482"],
                       stdout=open(f"{self.tmp}/agent-{h}.log", "w"), stderr=subprocess.STDOUT)
        n = len(self.c.hosts())

        def full():
            pairs = self.api.get("/api/v1/mesh?protocol=udp").get("pairs", [])
            return sum(1 for p in pairs if p["sent"] > 0) == n * (n - 1)
        t0 = time.monotonic()
        self.wait(full, 60, f"all {n * (n - 1)} pairs measured")
        log(f"mesh: {n} agents, {n * (n - 1)} pairs measured after {time.monotonic() - t0:.0f} s")

    @staticmethod
    def wait(pred, timeout, what):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if pred():
                return
            time.sleep(0.5)
        raise AssertionError(f"timed out after {timeout} s waiting for {what}")

    def suspects(self):
        v = self.api.get("/api/v1/suspects?protocol=udp")
        if "unavailable" in v:
            return None, v
        return {(e["type"], e["name"]) for e in v.get("elements", [])}, v

    def dump_logs(self):
        for name in sorted(os.listdir(self.tmp)):
            if name.endswith(".log"):
                with open(os.path.join(self.tmp, name), errors="replace") as f:
                    tail = f.readlines()[-12:]
                print(f"--- {name} (last lines) ---\n" + "".join(tail))


class Tally:
    """Every poll of the whole run: which named elements were innocent at that moment."""
    def __init__(self, trace=None, trace_flows=False):
        self.trace = trace    # a file: every poll's answer, one JSON line each (--trace)
        self.trace_flows = trace_flows  # and every pair's flows with their traced paths (--trace-flows)
        self.phase = "baseline"
        self.polls = 0
        self.innocent_polls = 0
        self.innocents = {}   # (type, name) -> polls
        self.innocent_phases = {}  # (phase, type, name) -> polls: what a failure report names
        self.innocent_answers = []  # the first few such polls' whole answers, for the report
        self.unavailable = 0
        self.no_coverage = 0  # available answers without the "localisation" object
        self.stale = {}       # prober -> polls whose localisation left its windows out as stale

    def poll(self, m, allowed):
        named, raw = m.suspects()
        self.polls += 1
        if self.trace:
            line = {"t": time.time(), "phase": self.phase, "elements": raw.get("elements", raw)}
            if self.trace_flows:
                hosts = m.c.hosts()
                line["flows"] = {f"{a}>{b}": m.api.get(f"/api/v1/flows?protocol=udp&src={a}&dst={b}").get("flows")
                                 for a in hosts for b in hosts if a != b}
            self.trace.write(json.dumps(line) + "\n")
        if named is None:
            self.unavailable += 1
            return set(), raw
        cov = raw.get("localisation")
        if not isinstance(cov, dict) or not isinstance(cov.get("flows"), int) or \
                not isinstance(cov.get("stale_hosts"), list):
            self.no_coverage += 1
        else:
            for h in cov["stale_hosts"]:
                self.stale[h] = self.stale.get(h, 0) + 1
        bad = named - allowed
        if bad:
            self.innocent_polls += 1
            if len(self.innocent_answers) < 3:
                self.innocent_answers.append((self.phase, raw.get("elements")))
            for e in bad:
                self.innocents[e] = self.innocents.get(e, 0) + 1
                k = (self.phase,) + e
                self.innocent_phases[k] = self.innocent_phases.get(k, 0) + 1
        return named, raw


def every_second(fn, seconds):
    """Calls fn() once a second for `seconds` seconds or until it returns something true."""
    t0 = time.monotonic()
    k = 0
    while time.monotonic() - t0 < seconds:
        v = fn()
        if v:
            return v
        k += 1
        time.sleep(max(0.0, t0 + k - time.monotonic()))
    return None


def run_fault(m, tally, name, hold_s):
    inject, right, related = FAULTS[name]
    allowed = right | related
    row = {"fault": name, "right": sorted(f"{t} {n}" for t, n in right), "blame_s": None, "clear_s": None,
           "named": set()}
    t0 = time.monotonic()
    inject(m.c)
    tally.phase = f"{name} on"
    log(f"fault {name}: injected; the right answer is {row['right']}")

    def blamed():
        named, _ = tally.poll(m, allowed)
        row["named"] |= named
        return bool(named & right)
    if every_second(blamed, BLAME_S + 5):
        row["blame_s"] = time.monotonic() - t0
        _, raw = m.suspects()
        top = raw.get("elements", [])[:3]
        log(f"   named after {row['blame_s']:.1f} s: " +
            "; ".join(f"{e['type']} {e['name']} ({e.get('reason')}, conf {e.get('confidence')})" for e in top))
    else:
        log(f"   NOT named within {BLAME_S + 5} s; last answer named {sorted(row['named'])}")
    still = [0]

    def held():
        named, _ = tally.poll(m, allowed)
        row["named"] |= named
        still[0] += bool(named & right)
        return False
    every_second(held, hold_s)
    row["held"] = f"{still[0]}/{hold_s}"
    m.c.repair()
    tally.phase = f"{name} repaired"
    t1 = time.monotonic()

    # Cleared means no longer named and still not named SETTLE_S later: a blame that comes back
    # (a late window, a route settling) belongs to this fault's clearing, not to the next fault.
    clear_since = [None]

    def cleared():
        named, _ = tally.poll(m, allowed)
        if named & allowed:
            clear_since[0] = None
            return False
        clear_since[0] = clear_since[0] or time.monotonic()
        return time.monotonic() - clear_since[0] >= SETTLE_S
    if every_second(cleared, QUIET_S + SETTLE_S):
        row["clear_s"] = clear_since[0] - t1
        log(f"   cleared {row['clear_s']:.1f} s after the repair")
    else:
        log(f"   not cleared (for {SETTLE_S} s running) within {QUIET_S + SETTLE_S} s of the repair")
    return row


def print_table(rows, tally):
    print("\n| fault | right element | time to blame | named in polls while held | time to clear |")
    print("|---|---|---|---|---|")
    for r in rows:
        b = f"{r['blame_s']:.1f} s" if r["blame_s"] is not None else "not named"
        cl = f"{r['clear_s']:.1f} s" if r["clear_s"] is not None else "not cleared"
        print(f"| {r['fault']} | {', '.join(r['right'])} | {b} | {r.get('held', '-')} | {cl} |")
    inn = ", ".join(f"{t} {n} x{k}" for (t, n), k in sorted(tally.innocents.items())) or "none"
    print(f"\npolls: {tally.polls}, polls naming an innocent element: {tally.innocent_polls} ({inn}), "
          f"polls the controller did not answer: {tally.unavailable}\n", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("weft")
    ap.add_argument("--faults", default="", help="all, or comma-separated: " + ",".join(FAULTS))
    ap.add_argument("--no-lab-checks", action="store_true", help="skip step 1 (the lab's own checks)")
    ap.add_argument("--hold", type=int, default=10, help="seconds each fault stays on after it is named")
    ap.add_argument("--baseline", type=int, default=20, help="seconds of polling with no fault first")
    ap.add_argument("--config", default="", help="YAML appended to the controller's config")
    ap.add_argument("--trace", help="write every poll's elements to this file (JSON lines)")
    ap.add_argument("--trace-flows", action="store_true",
                    help="with --trace: also every pair's flows and traced paths at each poll (slows polls)")
    ap.add_argument("--no-fail", action="store_true", help="print the table, exit 0 (the benchmark)")
    ap.add_argument("--prefix", default="wcl", help="namespace name prefix (another lab may hold wcl-*)")
    args = ap.parse_args()
    require_root()
    # ctest's timeout and Ctrl-C end the run through the `with` below, which removes the lab.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("FAIL: terminated"))
    faults = list(FAULTS) if args.faults == "all" else [f for f in args.faults.split(",") if f]
    for f in faults:
        if f not in FAULTS:
            sys.exit(f"unknown fault {f!r}; known: {', '.join(FAULTS)}")
    t_start = time.monotonic()
    with Clos(args.prefix) as c:
        log(f"lab: {len(c.hosts())} hosts in {c.racks} racks, {c.nspines} spines, built")
        if not args.no_lab_checks:
            clos_checks.verify_lab(c)
        if not faults:
            log(f"PASS (lab checks, {time.monotonic() - t_start:.0f} s)")
            return 0
        m = Mesh(os.path.abspath(args.weft), c, args.config)
        ok = False
        try:
            try:
                m.start()
            except NoTopology as e:
                print(f"controller: {e}")
                log("FAIL: the controller refused the topology section")
                return 1
            tally = Tally(open(args.trace, "w") if args.trace else None, args.trace_flows)
            every_second(lambda: tally.poll(m, set()) and False, args.baseline)
            log(f"baseline: {args.baseline} polls with no fault, {tally.innocent_polls} named something")
            rows = [run_fault(m, tally, f, args.hold) for f in faults]
            print_table(rows, tally)
            if tally.stale:
                log("left out of localisation as stale (prober: polls): " +
                    ", ".join(f"{h}: {k}" for h, k in sorted(tally.stale.items())))
            failed = [f"{r['fault']}: not named within {BLAME_S} s" for r in rows
                      if r["blame_s"] is None or r["blame_s"] > BLAME_S]
            failed += [f"{r['fault']}: not cleared within {BLAME_S} s of the repair" for r in rows
                       if r["clear_s"] is None or r["clear_s"] > BLAME_S]
            if tally.no_coverage:
                failed.append(f"{tally.no_coverage} answers without their localisation coverage")
            if tally.innocent_polls:
                where = "; ".join(f"{t} {n} x{k} during {ph}"
                                  for (ph, t, n), k in sorted(tally.innocent_phases.items()))
                failed.append(f"{tally.innocent_polls} of {tally.polls} polls named an innocent element ({where})")
            for f in failed:
                print("FAIL:", f)
            for phase, elements in tally.innocent_answers:
                print(f"FAIL: during {phase} the controller answered: {json.dumps(elements)[:1500]}")
            ok = not failed or args.no_fail
        finally:
            if not ok:
                m.dump_logs()
            shutil.rmtree(m.tmp, ignore_errors=True)
    log(f"{'PASS' if ok else 'FAIL'} ({time.monotonic() - t_start:.0f} s)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
