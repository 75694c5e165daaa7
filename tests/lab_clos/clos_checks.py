"""Checks that the Clos lab (lab/clos.py) does what it claims, with real packets: ECMP spreads flows
over the spines by their 5-tuple, routers answer TTL expiry, and each fault drops or delays exactly
the flows that cross the faulty element. Used by lab_clos_test.py before it trusts the lab to judge
weft's localisation."""
import json
import math
import os
import time

from clos import LAB_DIR

ECHO_PORT = 7000
SPORTS = list(range(41000, 41016))
SRC, DST = "h1", "h4"  # rack1 -> rack2


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def trace(c, host, dst_ip, dport, sports, max_ttl=4):
    r = c.tool(host, "trace", dst_ip, str(dport), ",".join(map(str, sports)), str(max_ttl))
    assert r.returncode == 0, r.stderr
    return {int(k): v for k, v in json.loads(r.stdout).items()}


def spine_of(c, hop):
    for s in range(1, c.nspines + 1):
        if hop and hop.startswith(f"10.60.{100 + s}."):
            return s
    return None


def paths(c):
    """sport -> (spine of the request h1 -> h4, spine of the echo h4 -> h1) for every test flow."""
    fwd = trace(c, SRC, c.host_ip(DST), ECHO_PORT, SPORTS)
    out = {}
    for sp in SPORTS:
        rev = trace(c, DST, c.host_ip(SRC), sp, [ECHO_PORT], max_ttl=2)[ECHO_PORT]
        out[sp] = (spine_of(c, fwd[sp][1]), spine_of(c, rev[1]))
    return out


def ping(c, sports, count=200, interval=0.004, src=SRC, dst=DST):
    r = c.tool(src, "udpping", c.host_ip(dst), str(ECHO_PORT), ",".join(map(str, sports)), str(count), str(interval))
    assert r.returncode == 0, r.stderr
    res = {int(k): v for k, v in json.loads(r.stdout).items()}
    for v in res.values():
        v["loss"] = 1 - v["received"] / v["sent"]
    return res


def binomial_ok(loss, p, n, sigmas=4.5):
    return abs(loss - p) <= sigmas * math.sqrt(max(p * (1 - p), 1e-4) / n) + 0.005


def check_ecmp(c):
    closed = 33434  # nothing listens: the destination answers "port unreachable" as the last hop
    fwd = trace(c, SRC, c.host_ip(DST), closed, SPORTS)
    again = trace(c, SRC, c.host_ip(DST), closed, SPORTS)
    for sp in SPORTS:
        hops = fwd[sp]
        assert hops[0] == c.tor_host_ip(SRC), f"sport {sp}: hop 1 {hops[0]} is not tor1's port"
        assert spine_of(c, hops[1]) is not None, f"sport {sp}: hop 2 {hops[1]} is not a spine"
        assert hops[2] and spine_of(c, hops[2]) == spine_of(c, hops[1]) and hops[2].endswith(".2"), \
            f"sport {sp}: hop 3 {hops[2]} is not tor2's port on the same spine"
        assert hops[3] == c.host_ip(DST), f"sport {sp}: the last hop {hops[3]} is not {DST}"
        assert again[sp] == hops, f"sport {sp}: path changed between two traces: {hops} / {again[sp]}"
    per_spine = {s: sum(1 for sp in SPORTS if spine_of(c, fwd[sp][1]) == s) for s in range(1, c.nspines + 1)}
    # 16 flows over 2 equal nexthops: fewer than 2 on one spine happens by chance 1 in 3,800.
    assert min(per_spine.values()) >= 2, f"ECMP does not spread: flows per spine {per_spine}"
    log(f"lab: ECMP spreads {len(SPORTS)} UDP flows h1 -> h4 over the spines {per_spine}; "
        "every router answered TTL expiry; paths stable per flow")
    return per_spine


def crossings(path, spine):
    return (path[0] == spine) + (path[1] == spine)


def check_link_loss(c, p):
    c.link_loss("tor1", "spine1", 30)
    res = ping(c, SPORTS)
    c.repair()
    for sp, v in res.items():
        k = crossings(p[sp], 1)  # the cable tor1-spine1 is crossed when spine1 carries a direction
        want = 1 - 0.7 ** k
        assert binomial_ok(v["loss"], want, v["sent"]), f"sport {sp} path {p[sp]}: loss {v['loss']:.3f}, want {want:.2f}"
    log(f"lab: 30 % loss on tor1-spine1: loss of flows crossing it {by_crossings(res, p, 1, 'loss', '{:.3f}')}")


def by_crossings(res, p, spine, field, fmt):
    """'crossing it 2x: 0.52, 0x: 0.000' over the groups of flows that exist (Linux's L4 hash is
    symmetric, so a flow's request and reply usually take the same spine: 1x is rare)."""
    out = []
    for k in (2, 1, 0):
        vals = [res[sp][field] for sp in res if crossings(p[sp], spine) == k and res[sp][field] is not None]
        if vals:
            out.append(f"{k}x: {fmt.format(sum(vals) / len(vals))}")
    return ", ".join(out)


def check_spine_latency(c, p):
    d = 10  # ms held per crossing of the spine: far above this shared machine's scheduling noise
    c.spine_latency("spine1", d)
    res = ping(c, SPORTS, count=60, interval=0.01)
    c.repair()
    for sp, v in res.items():
        k = crossings(p[sp], 1)
        assert v["loss"] <= 0.05, f"sport {sp}: {v['loss']:.2f} loss through the delay relay"
        rtt = v["rtt_p50_ms"]
        if k:
            # Never less than asked; late wake-ups of the relay (real-time priority) on a busy
            # shared machine add a little.
            assert d * k <= rtt <= d * k + 15, f"sport {sp} path {p[sp]}: RTT p50 {rtt:.2f} ms, want {d * k} ms more"
        else:
            assert rtt < d / 2, f"sport {sp} avoids spine1 but its RTT p50 is {rtt:.2f} ms"
    log(f"lab: +{d} ms each way on spine1: RTT p50 of flows crossing it "
        f"{by_crossings(res, p, 1, 'rtt_p50_ms', '{:.1f} ms')}")


def check_dead_spine(c, p):
    c.dead_spine("spine1")
    res = ping(c, SPORTS, count=100)
    hops = trace(c, SRC, c.host_ip(DST), ECHO_PORT, SPORTS)
    c.repair()
    for sp, v in res.items():
        assert v["loss"] <= 0.02, f"sport {sp}: loss {v['loss']:.2f} after the fabric routed around spine1"
        assert spine_of(c, hops[sp][1]) == 2, f"sport {sp} still crosses spine1: {hops[sp]}"
    after = ping(c, SPORTS, count=50)
    assert all(v["loss"] <= 0.02 for v in after.values()), f"loss after spine1 came back: {after}"
    back = trace(c, SRC, c.host_ip(DST), ECHO_PORT, SPORTS)
    assert {spine_of(c, back[sp][1]) for sp in SPORTS} == {1, 2}, "spine1 carries nothing after its repair"
    log("lab: dead spine1: every flow rerouted over spine2 without loss; back on both spines after repair")


def check_flapping(c, p):
    c.flapping_link("tor1", "spine1", period_s=0.5, flaps=6)
    seen = set()
    end = time.monotonic() + 3
    while time.monotonic() < end:
        seen.add(c.routes("tor1").count("nexthop"))
        time.sleep(0.1)
    c.repair()
    assert seen >= {0, 4}, f"tor1's routes did not follow the flapping cable (nexthop counts {seen})"
    assert c.routes("tor1").count("nexthop") == 4, "tor1 does not use both spines after the flapping stopped"
    log(f"lab: flapping tor1-spine1: tor1's routes switched between one and two spines ({sorted(seen)} nexthops)")


def check_bad_nic(c, p):
    c.bad_nic("h1", 20)
    res = ping(c, SPORTS[:4])
    other = ping(c, SPORTS[:4], src="h2", dst="h5")
    c.repair()
    for sp, v in res.items():
        assert binomial_ok(v["loss"], 1 - 0.8 ** 2, v["sent"]), f"h1 sport {sp}: loss {v['loss']:.3f}, want 0.36"
    assert all(v["loss"] <= 0.02 for v in other.values()), f"h2 -> h5 lost packets: {other}"
    log(f"lab: 20 % bad NIC on h1: h1's flows lose {sum(v['loss'] for v in res.values()) / len(res):.2f} (both ways), h2 -> h5 none")


def check_host_stack(c, p):
    c.host_stack(DST, 20, ECHO_PORT)
    to_it = ping(c, SPORTS[:4], src="h2", dst=DST)
    from_it = ping(c, SPORTS[:4], src=DST, dst="h7")
    c.repair()
    for sp, v in to_it.items():
        assert binomial_ok(v["loss"], 0.2, v["sent"]), f"h2 -> {DST} sport {sp}: loss {v['loss']:.3f}, want 0.2"
    assert all(v["loss"] <= 0.02 for v in from_it.values()), f"{DST}'s own flows lost packets: {from_it}"
    log(f"lab: {DST}'s stack drops 20 % for its responder: flows to it lose "
        f"{sum(v['loss'] for v in to_it.values()) / len(to_it):.2f}, its own flows none")


def check_congested_tor(c, p):
    c.congested_tor("tor1")
    time.sleep(1)
    res = ping(c, SPORTS[:4], count=100, interval=0.01)
    other = ping(c, SPORTS[:4], src="h4", dst="h7", count=100, interval=0.01)
    c.repair()
    loss = sum(v["loss"] for v in res.values()) / len(res)
    rtt = sorted(v["rtt_p50_ms"] for v in res.values())[len(res) // 2]
    assert rtt >= 10, f"flows through the congested tor1 have RTT p50 {rtt:.1f} ms"
    assert loss >= 0.01, f"flows through the congested tor1 lose only {loss:.3f}"
    assert all(v["loss"] <= 0.02 and v["rtt_p50_ms"] < 5 for v in other.values()), f"h4 -> h7 suffered: {other}"
    log(f"lab: congested tor1: flows through it RTT p50 {rtt:.1f} ms, loss {loss:.3f}; h4 -> h7 untouched")


ALL = [check_link_loss, check_spine_latency, check_dead_spine, check_flapping, check_bad_nic, check_host_stack,
       check_congested_tor]


def verify_lab(c):
    echoes = [c.run(h, ["python3", os.path.join(LAB_DIR, "clos_probe.py"), "echo", str(ECHO_PORT)])
              for h in (DST, "h5", "h7")]
    time.sleep(0.3)
    check_ecmp(c)
    p = paths(c)
    log(f"lab: (request spine, reply spine) per flow: {sorted(set(p.values()))}")
    clean = ping(c, SPORTS, count=50)
    assert all(v["loss"] == 0 for v in clean.values()), f"loss on the healthy fabric: {clean}"
    for check in ALL:
        check(c, p)
    for e in echoes:
        e.terminate()
