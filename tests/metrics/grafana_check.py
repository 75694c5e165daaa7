#!/usr/bin/env python3
"""deploy/grafana-weft.json only uses metrics and labels the controller really exports.

Reads the exposition printed by metrics_example (the renderer on a sample mesh, per-pair series
on), then checks every weft_* name in every panel query exists and every label it matches on is
one that metric carries.

    grafana_check.py METRICS_EXAMPLE_BINARY GRAFANA_JSON
"""
import json
import re
import subprocess
import sys


def exported(binary):
    labels = {}
    for line in subprocess.run([binary], capture_output=True, text=True, check=True).stdout.splitlines():
        if line.startswith("#") or not line:
            continue
        m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? ", line)
        names = set(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="', m.group(3) or ""))
        labels.setdefault(m.group(1), set()).update(names)
    return labels


def exprs(node):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "expr":
                yield v
            else:
                yield from exprs(v)
    elif isinstance(node, list):
        for v in node:
            yield from exprs(v)


def main():
    have = exported(sys.argv[1])
    with open(sys.argv[2]) as f:
        dash = json.load(f)
    queries = list(exprs(dash))
    # Template variable queries too: label_values(metric, label).
    for var in dash.get("templating", {}).get("list", []):
        q = var.get("definition", "")
        m = re.match(r"label_values\((weft_\w+),\s*(\w+)\)", q)
        if m:
            queries.append(f"{m.group(1)}{{{m.group(2)}=~\".*\"}}")
    bad = []
    used = set()
    for q in queries:
        for name, _, sel in re.findall(r"(weft_[a-z0-9_]+)(\{([^}]*)\})?", q):
            used.add(name)
            if name not in have:
                bad.append(f"{name}: not exported (in {q!r})")
                continue
            for label in re.findall(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)", sel):
                if label not in have[name]:
                    bad.append(f"{name}: has no label {label!r} (in {q!r})")
    print(f"{len(queries)} queries use {len(used)} of {len(have)} exported metrics")
    for b in bad:
        print("FAIL", b)
    return 1 if bad or not used else 0


if __name__ == "__main__":
    sys.exit(main())
