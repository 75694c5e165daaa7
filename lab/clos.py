"""A small routed Clos fabric in network namespaces, with ECMP and the faults issue 24 localises
(Python 3 stdlib only; needs root, `ip`, `nft`, `tc`).

    with Clos("wcl", racks=3, hosts_per_rack=3, spines=2) as c:
        c.run("h1", [weft, "agent", ...])        # a process in host h1's namespace (killed on exit)
        c.host_ip("h4")                         # "10.60.2.3"
        c.topology_yaml()                       # the controller's `topology:` section for this fabric
        c.link_loss("tor1", "spine1", 5)        # a fault ...
        c.repair()                              # ... and every fault undone

Layout (addresses in 10.60.0.0/16; one namespace per host, ToR, spine, plus a patch panel and a
controller namespace):

    host hN (rack r, j-th in its rack) --veth /31-- torR        10.60.r.(2j) ToR, 10.60.r.(2j+1) host
    torR --veth-- [patch: bridge] --veth-- spineS               10.60.(100+S).(2r-2) ToR, +1 spine
    host hN --veth /31 (mgmt0)-- ctl, controller on 10.60.250.1 (its lo): reports never cross the
                                                                 fabric, so faults hit probes only

Every ToR-spine cable runs through a bridge in the patch namespace, so a user-space relay can be
spliced into it (this kernel has no netem: latency comes from lab/l2_delay.py holding frames).
Routing is static and recomputed by `_converge()` the way a routing daemon would after a link
changes state: on every ToR, the route to each other rack is a multipath route over the spines that
still reach both racks (`ip route replace ... nexthop ... nexthop ...`); a rack no spine reaches
becomes `unreachable`. The kernel hashes flows over the nexthops with the 5-tuple
(fib_multipath_hash_policy=1). Routers answer TTL expiry without rate limits, from the address of
the interface the packet came in on (icmp_errors_use_inbound_ifaddr), so a traced hop names the
cable as well as the router.

Everything it creates is removed on exit, also when the caller fails (and leftovers of a killed run
are removed on entry).
"""
import os
import signal
import subprocess
import sys
import threading
import time

from netns import SKIP, require_root, sh  # noqa: F401  (re-exported for the tests)

LAB_DIR = os.path.dirname(os.path.abspath(__file__))
CONTROLLER_IP = "10.60.250.1"
BLACKHOLE = "10.60.254"  # a /24 the spines discard silently: the congestion load's sink

ROUTER_SYSCTLS = [
    "net.ipv4.ip_forward=1",
    "net.ipv4.fib_multipath_hash_policy=1",          # L4: the 5-tuple picks the nexthop
    "net.ipv4.icmp_ratelimit=0",                      # every expired probe is answered
    "net.ipv4.icmp_msgs_per_sec=1000000",
    "net.ipv4.icmp_msgs_burst=1000000",
    "net.ipv4.icmp_errors_use_inbound_ifaddr=1",      # the hop's address says which cable it came in on
    "net.ipv4.conf.all.rp_filter=0",
    "net.ipv4.conf.default.rp_filter=0",
    "net.ipv4.conf.all.ignore_routes_with_linkdown=1",
    "net.ipv4.conf.default.ignore_routes_with_linkdown=1",
]
HOST_SYSCTLS = ["net.ipv4.icmp_ratelimit=0", "net.ipv4.conf.all.rp_filter=0",
                "net.ipv4.conf.default.rp_filter=0"]


class Clos:
    def __init__(self, prefix="wcl", racks=3, hosts_per_rack=3, spines=2):
        assert len(prefix) <= 5 and racks <= 99 and spines <= 99 and hosts_per_rack <= 100
        self.prefix = prefix
        self.racks = racks
        self.per_rack = hosts_per_rack
        self.nspines = spines
        self.procs = []
        self.link_up = {}        # (r, s) -> bool, what _converge() routes around
        self.faults = []         # undo callables, newest last
        self.flappers = []       # (thread, stop event)
        self.lock = threading.Lock()

    # ---- names and addresses -----------------------------------------------------------------
    def hosts(self):
        return [f"h{n}" for n in range(1, self.racks * self.per_rack + 1)]

    def tors(self):
        return [f"tor{r}" for r in range(1, self.racks + 1)]

    def spines(self):
        return [f"spine{s}" for s in range(1, self.nspines + 1)]

    def rack_of(self, host):
        return (int(host[1:]) - 1) // self.per_rack + 1

    def _j(self, host):  # position in its rack, 1-based
        return (int(host[1:]) - 1) % self.per_rack + 1

    def ns(self, element):
        """Namespace of a host (h3), ToR (tor1), spine (spine2), 'patch' or 'ctl'."""
        return f"{self.prefix}-{element}"

    def host_ip(self, host):
        return f"10.60.{self.rack_of(host)}.{2 * self._j(host) + 1}"

    def tor_host_ip(self, host):  # the ToR's end of the host's cable
        return f"10.60.{self.rack_of(host)}.{2 * self._j(host)}"

    def tor_up_ip(self, r, s):
        return f"10.60.{100 + s}.{2 * r - 2}"

    def spine_ip(self, r, s):
        return f"10.60.{100 + s}.{2 * r - 1}"

    def mgmt_ip(self, host):
        return f"10.60.200.{2 * int(host[1:]) - 1}"

    def router_addresses(self):
        """Every router's interface addresses, as the topology's `routers:` section lists them."""
        out = {}
        for r in range(1, self.racks + 1):
            rack_hosts = self.hosts()[(r - 1) * self.per_rack:r * self.per_rack]
            out[f"tor{r}"] = [self.tor_host_ip(h) for h in rack_hosts] + \
                [self.tor_up_ip(r, s) for s in range(1, self.nspines + 1)]
        for s in range(1, self.nspines + 1):
            out[f"spine{s}"] = [self.spine_ip(r, s) for r in range(1, self.racks + 1)]
        return out

    def topology_yaml(self):
        """The controller config's `topology:` section (docs/api.md's format) for this fabric."""
        lines = ["topology:", f"  spines: [{', '.join(self.spines())}]", "  racks:"]
        for r in range(1, self.racks + 1):
            rack_hosts = self.hosts()[(r - 1) * self.per_rack:r * self.per_rack]
            lines += [f"    - name: rack{r}", f"      tor: tor{r}", f"      hosts: [{', '.join(rack_hosts)}]"]
        lines.append("  routers:")
        for name, addrs in self.router_addresses().items():
            lines.append(f"    {name}: [{', '.join(addrs)}]")
        return "\n".join(lines) + "\n"

    def _parse(self, element):
        """'tor2' -> ('tor', 2), 'spine1' -> ('spine', 1), 'h4' -> ('host', 4)."""
        for kind in ("tor", "spine"):
            if element.startswith(kind):
                return kind, int(element[len(kind):])
        if element.startswith("h"):
            return "host", int(element[1:])
        raise ValueError(f"unknown element {element!r}")

    # ---- building and removing ---------------------------------------------------------------
    def all_namespaces(self):
        return [self.ns(e) for e in self.hosts() + self.tors() + self.spines() + ["patch", "ctl"]]

    def __enter__(self):
        self.cleanup()
        try:
            self._build()
        except BaseException:
            self.cleanup()
            raise
        return self

    def __exit__(self, *exc):
        self.cleanup()
        return False

    def _veth(self, ns_a, if_a, ns_b, if_b):
        sh("ip", "link", "add", if_a, "netns", ns_a, "type", "veth", "peer", "name", if_b, "netns", ns_b)

    def _addr(self, ns, dev, cidr):
        sh("ip", "addr", "add", cidr, "dev", dev, ns=ns)
        sh("ip", "link", "set", dev, "up", ns=ns)

    def _build(self):
        for ns in self.all_namespaces():
            sh("ip", "netns", "add", ns)
            sh("ip", "link", "set", "lo", "up", ns=ns)
        for e in self.tors() + self.spines():
            sh("sysctl", "-qw", *ROUTER_SYSCTLS, ns=self.ns(e))
        for e in self.hosts():
            sh("sysctl", "-qw", *HOST_SYSCTLS, ns=self.ns(e))
        ctl, patch = self.ns("ctl"), self.ns("patch")
        sh("ip", "addr", "add", f"{CONTROLLER_IP}/32", "dev", "lo", ns=ctl)
        offloads = {}  # ns -> interfaces whose tx checksumming must be off (the relay copies frames)
        for h in self.hosts():
            n, r, hns, tns = int(h[1:]), self.rack_of(h), self.ns(h), self.ns(f"tor{self.rack_of(h)}")
            self._veth(hns, "eth0", tns, h)
            self._addr(hns, "eth0", f"{self.host_ip(h)}/31")
            self._addr(tns, h, f"{self.tor_host_ip(h)}/31")
            sh("ip", "route", "add", "10.60.0.0/16", "via", self.tor_host_ip(h), "dev", "eth0", ns=hns)
            self._veth(hns, "mgmt0", ctl, f"m{n}")
            mg = f"10.60.200.{2 * n - 2}"
            self._addr(ctl, f"m{n}", f"{mg}/31")
            self._addr(hns, "mgmt0", f"{self.mgmt_ip(h)}/31")
            sh("ip", "route", "add", f"{CONTROLLER_IP}/32", "via", mg, "dev", "mgmt0", ns=hns)
            offloads.setdefault(hns, []).append("eth0")
            offloads.setdefault(tns, []).append(h)
        for r in range(1, self.racks + 1):
            for s in range(1, self.nspines + 1):
                tns, sns, br = self.ns(f"tor{r}"), self.ns(f"spine{s}"), f"b{r}s{s}"
                self._veth(tns, f"s{s}", patch, f"t{r}s{s}t")
                self._veth(sns, f"t{r}", patch, f"t{r}s{s}s")
                sh("ip", "link", "add", br, "type", "bridge", ns=patch)
                for dev in (f"t{r}s{s}t", f"t{r}s{s}s"):
                    sh("ip", "link", "set", dev, "master", br, "up", ns=patch)
                sh("ip", "link", "set", br, "up", ns=patch)
                self._addr(tns, f"s{s}", f"{self.tor_up_ip(r, s)}/31")
                self._addr(sns, f"t{r}", f"{self.spine_ip(r, s)}/31")
                sh("ip", "route", "add", f"10.60.{r}.0/24", "via", self.tor_up_ip(r, s), "dev", f"t{r}", ns=sns)
                offloads.setdefault(tns, []).append(f"s{s}")
                offloads.setdefault(sns, []).append(f"t{r}")
                offloads.setdefault(patch, []).extend([f"t{r}s{s}t", f"t{r}s{s}s"])
                self.link_up[(r, s)] = True
        for s in range(1, self.nspines + 1):
            sh("ip", "route", "add", "blackhole", f"{BLACKHOLE}.0/24", ns=self.ns(f"spine{s}"))
        for ns, devs in offloads.items():
            self._offloads_off(ns, devs)
        self._converge()

    def _offloads_off(self, ns, devs):
        """tx checksumming off (and with it tso/sg), gso/gro off: a frame copied by the delay relay
        must carry a complete checksum, and must not be a 64 KB super-frame."""
        code = ("import sys; sys.path.insert(0, sys.argv[1]); import offloads, socket\n"
                "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                "for dev in sys.argv[2:]:\n"
                "    for name, _, cmd in reversed(offloads.FEATURES):\n"
                "        offloads.call(s, dev, cmd, 0)\n")
        sh("python3", "-c", code, LAB_DIR, *devs, ns=ns)

    def cleanup(self):
        self._stop_flappers()
        for p in self.procs:
            _stop(p)
        self.procs = []
        self.faults = []
        for ns in self.all_namespaces():
            sh("ip", "netns", "del", ns, check=False)

    # ---- routing -----------------------------------------------------------------------------
    def _converge(self):
        """What a routing daemon would install for the current link states (see the module doc)."""
        with self.lock:
            for r in range(1, self.racks + 1):
                tns = self.ns(f"tor{r}")
                for q in range(1, self.racks + 1):
                    if q == r:
                        continue
                    via = [s for s in range(1, self.nspines + 1) if self.link_up[(r, s)] and self.link_up[(q, s)]]
                    if not via:
                        sh("ip", "route", "replace", "unreachable", f"10.60.{q}.0/24", ns=tns)
                    elif len(via) == 1:
                        s = via[0]
                        sh("ip", "route", "replace", f"10.60.{q}.0/24", "via", self.spine_ip(r, s), "dev", f"s{s}",
                           ns=tns)
                    else:
                        hops = [w for s in via for w in ("nexthop", "via", self.spine_ip(r, s), "dev", f"s{s}")]
                        sh("ip", "route", "replace", f"10.60.{q}.0/24", *hops, ns=tns)

    def _set_link(self, r, s, up):
        state = "up" if up else "down"
        sh("ip", "link", "set", f"s{s}", state, ns=self.ns(f"tor{r}"))
        sh("ip", "link", "set", f"t{r}", state, ns=self.ns(f"spine{s}"))
        if up:  # the spine's route to the rack went with the link
            sh("ip", "route", "replace", f"10.60.{r}.0/24", "via", self.tor_up_ip(r, s), "dev", f"t{r}",
               ns=self.ns(f"spine{s}"))
        self.link_up[(r, s)] = up
        self._converge()

    def routes(self, tor):
        return sh("ip", "route", "show", ns=self.ns(tor), capture=True)

    # ---- processes ---------------------------------------------------------------------------
    def run(self, element, argv, **popen_kwargs):
        """Starts argv in the element's namespace; stopped when the lab closes."""
        p = subprocess.Popen(["ip", "netns", "exec", self.ns(element)] + list(argv), start_new_session=True,
                             **popen_kwargs)
        self.procs.append(p)
        return p

    def exec(self, element, argv, timeout=120):
        return subprocess.run(["ip", "netns", "exec", self.ns(element)] + list(argv), text=True,
                              capture_output=True, timeout=timeout)

    def tool(self, element, *args, timeout=120):
        """Runs lab/clos_probe.py (trace, echo, udpping, blast) in the element's namespace."""
        return self.exec(element, [sys.executable, os.path.join(LAB_DIR, "clos_probe.py"), *args], timeout=timeout)

    # ---- faults ------------------------------------------------------------------------------
    def _nft_drop(self, ns, table, iifs, percent):
        """Random loss of `percent` % of what arrives on the interfaces, before routing (the receiving
        end drops: a drop at the sender would be reported back to its socket)."""
        sh("nft", "add", "table", "inet", table, ns=ns)
        sh("nft", "add", "chain", "inet", table, "pre",
           "{ type filter hook prerouting priority -300; policy accept; }", ns=ns)
        for dev in iifs:
            sh("nft", "add", "rule", "inet", table, "pre", "iifname", dev,
               "numgen", "random", "mod", "1000", "<", str(int(round(percent * 10))), "counter", "drop", ns=ns)
        self.faults.append(lambda: sh("nft", "delete", "table", "inet", table, ns=ns, check=False))

    def drops(self, element, table):
        """Packets the fault's nft rules in that namespace dropped so far (0 when there are none)."""
        out = sh("nft", "list", "table", "inet", table, ns=self.ns(element), check=False, capture=True) or ""
        return sum(int(w.split()[1]) for w in out.split("counter")[1:] if w.split()[0] == "packets")

    def link_loss(self, tor, spine, percent):
        """Loss on one ToR-spine cable, both directions (each end drops what it receives)."""
        r, s = self._parse(tor)[1], self._parse(spine)[1]
        self._nft_drop(self.ns(tor), "wclf_link", [f"s{s}"], percent)
        self._nft_drop(self.ns(spine), "wclf_link", [f"t{r}"], percent)

    def bad_nic(self, host, percent):
        """A host's NIC loses frames both ways: what the host receives (dropped in its namespace) and
        what it sends (dropped where it is received, at its ToR port, as a switch drops bad frames)."""
        self._nft_drop(self.ns(host), "wclf_nic", ["eth0"], percent)
        self._nft_drop(self.ns(f"tor{self.rack_of(host)}"), "wclf_nic", [host], percent)

    def host_stack(self, host, percent, port):
        """The host's own stack loses `percent` % of the UDP datagrams arriving for `port` (a
        firewall rule, an overflowing socket buffer, a responder that cannot keep up): a fault of the
        host, not of its NIC or cable, so everything else it sends and receives passes."""
        ns = self.ns(host)
        sh("nft", "add", "table", "inet", "wclf_stack", ns=ns)
        sh("nft", "add", "chain", "inet", "wclf_stack", "in",
           "{ type filter hook input priority 0; policy accept; }", ns=ns)
        sh("nft", "add", "rule", "inet", "wclf_stack", "in", "udp", "dport", str(port),
           "numgen", "random", "mod", "1000", "<", str(int(round(percent * 10))), "counter", "drop", ns=ns)
        self.faults.append(lambda: sh("nft", "delete", "table", "inet", "wclf_stack", ns=ns, check=False))

    def spine_latency(self, spine, delay_ms):
        """Every packet crossing the spine is held delay_ms (a flow through it both ways: 2 x delay_ms
        more RTT). The patch panel's bridges for the spine's cables are undone and lab/l2_delay.py
        relays the frames between each cable's two ends, holding each for delay_ms / 2 (a packet
        crosses two of the spine's cables: in and out)."""
        s = self._parse(spine)[1]
        patch = self.ns("patch")
        pairs = []
        for r in range(1, self.racks + 1):
            for dev in (f"t{r}s{s}t", f"t{r}s{s}s"):
                sh("ip", "link", "set", dev, "nomaster", ns=patch)
                sh("ip", "link", "set", dev, "up", ns=patch)
            pairs.append(f"t{r}s{s}t:t{r}s{s}s")
        relay = self.run("patch", [sys.executable, os.path.join(LAB_DIR, "l2_delay.py"), str(delay_ms / 2), *pairs],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(0.3)
        if relay.poll() is not None:
            raise RuntimeError(f"l2_delay.py exited: {relay.stderr.read().decode(errors='replace')}")

        def undo():
            _stop(relay)
            for r in range(1, self.racks + 1):
                for dev in (f"t{r}s{s}t", f"t{r}s{s}s"):
                    sh("ip", "link", "set", dev, "master", f"b{r}s{s}", ns=patch, check=False)
        self.faults.append(undo)

    def dead_spine(self, spine, detect_s=1.0):
        """The spine stops: its ports go dark at once; the ToRs (whose cables run through the patch
        panel and keep their carrier) route around it detect_s later, as a routing daemon's hold or
        BFD timer would, so what was hashed onto the spine is lost in between."""
        s = self._parse(spine)[1]
        for r in range(1, self.racks + 1):
            sh("ip", "link", "set", f"t{r}", "down", ns=self.ns(spine))
        time.sleep(detect_s)
        for r in range(1, self.racks + 1):
            self.link_up[(r, s)] = False
        self._converge()

        def undo():
            for r in range(1, self.racks + 1):
                self._set_link(r, s, True)
        self.faults.append(undo)

    def flapping_link(self, tor, spine, period_s=3.0, flaps=20):
        """The cable goes down and up every period_s seconds (routes follow each time), at most
        `flaps` times; repair() stops it and leaves the cable up."""
        r, s = self._parse(tor)[1], self._parse(spine)[1]
        stop = threading.Event()

        def loop():
            for _ in range(flaps):
                self._set_link(r, s, False)
                if stop.wait(period_s):
                    break
                self._set_link(r, s, True)
                if stop.wait(period_s):
                    break
            self._set_link(r, s, True)
        t = threading.Thread(target=loop, daemon=True)
        t.start()
        self.flappers.append((t, stop))
        self.faults.append(self._stop_flappers)

    def _stop_flappers(self):
        for t, stop in self.flappers:
            stop.set()
            t.join(30)
        self.flappers = []

    def congested_tor(self, tor, rate_mbit=2, overload=1.5, loss_pct=2):
        """The ToR's ports are rate limited (tbf, 30 ms of queue) and loaded past that rate by a
        sender in the ToR itself (to an address the next hop discards), so everything crossing the
        ToR waits in a full queue; and the ToR drops loss_pct % of what it receives (a congested
        switch's buffer drops: tail drops alone come and go with how well the load sender keeps
        its rate on a busy machine)."""
        r = self._parse(tor)[1]
        tns = self.ns(tor)
        rack_hosts = self.hosts()[(r - 1) * self.per_rack:r * self.per_rack]
        ports = [(h, self.host_ip(h)) for h in rack_hosts] + \
                [(f"s{s}", self.spine_ip(r, s)) for s in range(1, self.nspines + 1)]
        targets = []
        for k, (dev, peer) in enumerate(ports):
            sh("tc", "qdisc", "replace", "dev", dev, "root", "tbf", "rate", f"{rate_mbit}mbit", "burst", "4kb",
               "latency", "30ms", ns=tns)
            sink = f"{BLACKHOLE}.{10 + k}"
            sh("ip", "route", "replace", f"{sink}/32", "via", peer, "dev", dev, ns=tns)
            targets.append(sink)
        if loss_pct:
            self._nft_drop(tns, "wclf_cong", [dev for dev, _ in ports], loss_pct)
        load = self.run(tor, [sys.executable, os.path.join(LAB_DIR, "clos_probe.py"), "blast",
                              str(rate_mbit * overload), *targets],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        def undo():
            _stop(load)
            for k, (dev, _) in enumerate(ports):
                sh("tc", "qdisc", "del", "dev", dev, "root", ns=tns, check=False)
                sh("ip", "route", "del", f"{BLACKHOLE}.{10 + k}/32", ns=tns, check=False)
        self.faults.append(undo)

    def repair(self):
        """Undoes every fault, newest first."""
        while self.faults:
            self.faults.pop()()


def _stop(proc, timeout=5):
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout)
    except ProcessLookupError:
        return
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
