#!/usr/bin/env python3
"""Lab test of the probe engine (issue 2), in three namespaces on one bridge (lab prefix "wpr").

A responder runs in each host; one prober in host 1 probes hosts 2 and 3:
  1. every target answers, no loss;
  2. 20% loss injected on the bridge for frames h1 -> h3: h3 alone shows 20% +/- 5 points over 1000 probes;
  3. the responder of h3 is killed: h3 goes to 100% loss, h2 keeps being answered by the same prober;
  4. 10,000 random datagrams hit the h2 responder: it keeps answering real probes.
Usage: test_probe_lab.py WEFT_BINARY LAB_DIR
"""
import json
import os
import re
import subprocess
import sys
import time

WEFT = os.path.abspath(sys.argv[1])
sys.path.insert(0, sys.argv[2])
from netns import Lab, require_root  # noqa: E402

UDP, TCP = 17700, 17701
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def ping(lab, targets, *args, timeout=120):
    """Runs `weft ping udp` in host 1; returns (summaries by target, windows)."""
    r = lab.exec(1, [WEFT, "--log-level", "warn", "ping", "udp", *targets, "--json", *args], timeout=timeout)
    summaries, windows = {}, []
    for line in r.stdout.splitlines():
        j = json.loads(line)
        if j.get("type") == "window":
            windows.append(j)
        else:
            summaries[j["target"]] = j
    if r.returncode not in (0, 1):
        raise RuntimeError(f"weft ping failed ({r.returncode}): {r.stderr}")
    return summaries, windows


def start_responder(lab, i):
    return lab.run(i, [WEFT, "--log-level", "info", "responder", "--listen", "0.0.0.0",
                       "--udp-port", str(UDP), "--tcp-port", str(TCP)],
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def main():
    require_root()
    t_start = time.monotonic()
    with Lab("wpr", hosts=3) as lab:
        h2, h3 = f"{lab.ip(2)}:{UDP}", f"{lab.ip(3)}:{UDP}"
        r = lab.exec(1, ["ping", "-c", "1", "-W", "2", lab.ip(2)])
        check(r.returncode == 0, "iputils ping h1 -> h2 works (lab sanity)")
        resp = {i: start_responder(lab, i) for i in (1, 2, 3)}
        time.sleep(0.5)
        for i, p in resp.items():
            check(p.poll() is None, f"responder in h{i} is running")

        # 1. Clean mesh.
        s, _ = ping(lab, [h2, h3], "-c", "200", "-i", "0.005", "--timeout", "0.5")
        for t in (h2, h3):
            check(s[t]["sent"] == 200 and s[t]["received"] == 200 and s[t]["lost"] == 0,
                  f"clean: {t} answered 200/200 (got {s[t]['received']}/{s[t]['sent']})")
            check(s[t]["timestamp_source"] == "kernel", f"clean: {t} timed by kernel timestamps")
            check(0 < s[t]["network_rtt_us"]["p50"] <= s[t]["rtt_incl_responder_delay_us"]["p50"],
                  f"clean: {t} network RTT p50 {s[t]['network_rtt_us']['p50']} us <= total "
                  f"{s[t]['rtt_incl_responder_delay_us']['p50']} us")
        r = lab.exec(1, [WEFT, "ping", "tcp", f"{lab.ip(2)}:{TCP}", "-c", "20", "-i", "0.01", "--json"])
        j = json.loads(r.stdout)
        check(r.returncode == 0 and j["received"] == 20, f"tcp connect probes h1 -> h2: {j['received']}/20")

        # 2. 20% loss on the h1 -> h3 link only.
        lab.drop(src=1, dst=3, percent=20)
        s, _ = ping(lab, [h2, h3], "-c", "1000", "-i", "0.004", "--timeout", "0.5")
        lab.clear_drops()
        loss3 = 100.0 * s[h3]["lost"] / s[h3]["sent"]
        loss2 = 100.0 * s[h2]["lost"] / s[h2]["sent"]
        check(s[h3]["sent"] == 1000 and 15.0 <= loss3 <= 25.0, f"lossy link: h3 loss {loss3:.1f}% over 1000 probes")
        check(loss2 == 0.0, f"lossy link: h2 unaffected ({loss2:.1f}% loss)")

        # 3. Kill h3's responder while the prober runs.
        proc = lab.run(1, [WEFT, "--log-level", "warn", "ping", "udp", h2, h3, "--json", "-q", "-c", "700",
                           "-i", "0.005", "--timeout", "0.3", "--window", "0.5"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)
        kill_ns = time.time_ns()
        lab.stop(resp[3])
        out, err = proc.communicate(timeout=60)
        windows = [json.loads(l) for l in out.splitlines() if '"window"' in l]
        after = [w for w in windows if w["start_unix_ns"] > kill_ns + 500_000_000]  # whole windows after the kill
        w3 = [w for w in after if w["target"] == h3]
        w2 = [w for w in after if w["target"] == h2]
        check(len(w3) >= 2 and all(w["sent"] > 0 and w["lost"] == w["sent"] for w in w3),
              f"killed responder: h3 at 100% loss in {len(w3)} windows after the kill")
        check(len(w2) >= 2 and all(w["sent"] > 0 and w["received"] == w["sent"] for w in w2),
              f"killed responder: the same prober still gets every h2 answer ({len(w2)} windows)")
        check(proc.returncode == 0, "killed responder: the prober finished normally")

        # 4. 10,000 random datagrams at h2's responder while probing it.
        proc = lab.run(1, [WEFT, "--log-level", "warn", "ping", "udp", h2, "--json", "-q", "-c", "600",
                           "-i", "0.005", "--timeout", "0.5", "--window", "0.5"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(0.3)
        spray = ("import os,random,socket,time\n"
                 "s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n"
                 "r=random.Random(7)\n"
                 "for i in range(10000):\n"
                 "    n=r.randrange(0,120)\n"
                 "    b=bytearray(os.urandom(n))\n"
                 "    if i%3==0 and n>=4: b[0:4]=b'WFPB'\n"
                 "    if i%7==0: b=bytearray(48); b[0:4]=b'WFPB'; b[4]=1; b[5]=r.randrange(0,5)\n"
                 f"    s.sendto(bytes(b),('{lab.ip(2)}',{UDP}))\n"
                 "    if i%200==0: time.sleep(0.005)\n")
        r = lab.exec(1, ["python3", "-c", spray])
        check(r.returncode == 0, "garbage: 10,000 random datagrams sent")
        out, _ = proc.communicate(timeout=60)
        lines = [json.loads(l) for l in out.splitlines()]
        summ = [l for l in lines if l.get("type") == "summary"][0]
        check(summ["received"] >= 0.98 * summ["sent"],
              f"garbage: h2 kept answering ({summ['received']}/{summ['sent']})")
        check(resp[2].poll() is None, "garbage: h2's responder is still running")
        lab.stop(resp[2])
        m = re.search(r"malformed (\d+)", resp[2].stderr.read())
        check(m is not None and int(m.group(1)) >= 5000,
              f"garbage: h2's responder counted the garbage as malformed ({m.group(1) if m else '?'})")
    elapsed = time.monotonic() - t_start
    check(elapsed < 120, f"lab test took {elapsed:.0f} s")
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
