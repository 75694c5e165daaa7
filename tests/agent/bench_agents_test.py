#!/usr/bin/env python3
"""`weft bench agents` with 20 real agents (agent::Agent, the code `weft agent` runs) in 2 processes,
against a real controller, on loopback addresses 127.3.0.1-20 (issue 14: real agents against one
controller). Checks what the benchmark measured, not how fast:
  - every agent started, registered and is up;
  - every ordered pair of each group (2 groups of 10: 180 pairs) has UDP and TCP windows that began
    during the measurement, as the controller's group meshes show them;
  - the windows seen carry probes that were answered, and the agents delivered windows;
  - the agents stopped cleanly and the benchmark exits 0.
    bench_agents_test.py WEFT_BINARY"""
import json
import subprocess
import sys

weft = sys.argv[1]
cmd = [weft, "--log-level", "warn", "bench", "agents", "--agents", "20", "--group-size", "10",
       "--processes", "2", "--window", "2", "--seconds", "5", "--udp-interval-ms", "200",
       "--tcp-interval-ms", "500", "--prefix", "127.3", "--port", "18211", "--udp-port", "27787",
       "--tcp-port", "27788", "--register-timeout", "60", "--json"]
p = subprocess.run(cmd, capture_output=True, text=True, timeout=150)
failed = []
try:
    r = json.loads(p.stdout.strip().splitlines()[-1])
except (ValueError, IndexError):
    print(p.stdout, p.stderr, sep="\n")
    sys.exit(f"FAIL: no JSON from bench agents (exit {p.returncode})")

if r["start_failures"] != 0:
    failed.append(f"{r['start_failures']} agents did not start: {p.stderr.strip()[:300]}")
if r["agents_up"] != 20 or r["agents_listed"] != 20:
    failed.append(f"{r['agents_listed']} agents listed, {r['agents_up']} up (20 expected)")
if r["expected_pairs_per_protocol"] != 180:
    failed.append(f"expected 180 pairs per protocol, the benchmark counted {r['expected_pairs_per_protocol']}")
for proto in ("udp", "tcp"):
    got = r["pairs_with_window"].get(proto, 0)
    if got != 180:
        failed.append(f"{proto}: {got} of 180 pairs have a window from the measurement "
                      f"(first missing: {r['first_missing_pair'].get(proto)})")
if r["windows_checked"] == 0 or r["probes_received"] == 0:
    failed.append(f"no answered probes in the windows seen ({r['windows_checked']} windows)")
if r["windows_delivered"] == 0 or r["reports_sent"] == 0:
    failed.append(f"the agents delivered {r['windows_delivered']} windows in {r['reports_sent']} reports")
if r["agent_threads"] == 0 or r["agents_rss_kb"] == 0:
    failed.append("the agents' processes were not measured")
if "stop_error" in r:
    failed.append(r["stop_error"])
if p.returncode != 0 and not failed:
    failed.append(f"bench agents exited {p.returncode}: {p.stderr.strip()[:300]}")

if failed:
    print(json.dumps(r, indent=1))
    for f in failed:
        print("FAIL:", f)
    sys.exit(1)
print(f"ok: 20 agents up, 180/180 pairs per protocol, {r['windows_checked']} windows seen, "
      f"{r['probes_lost']} of {r['probes_sent']} probes lost")
