#!/usr/bin/env python3
"""Each src/cli/cmd_*.cpp is named after the command it adds: `weft X` lives in cmd_X.cpp and
`weft bench X` / `weft rdma X` in cmd_bench_X.cpp / cmd_rdma_X.cpp ('-' in a command name becomes
'_'), so the file of a command is found from its name. A file may also hold a mode of another
command that it names (cmd_ping_rdma.cpp: the rdma mode of `weft ping`), but every add_subcommand
in it must be its own command.

usage: check_cli_names.py SOURCE_ROOT   exit 0 when every file matches, 1 with one line per mismatch
       check_cli_names.py --self-test   plants mismatches in a temp tree and checks they are caught
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import source_check  # noqa: E402  (tests/pylib: what the source checkers share)

SUB = re.compile(r"root\.(app|bench|rdma)\s*(?:\.|->)\s*add_subcommand\(\s*\"([^\"]+)\"", re.S)
# Known mismatches, each with where it should go. Empty them as the files are fixed.
KNOWN = {
}


def check(root):
    problems = []
    cli = os.path.join(root, "src", "cli")
    files = sorted(f for f in os.listdir(cli) if f.startswith("cmd_") and f.endswith(".cpp"))
    stems = {f[len("cmd_") : -len(".cpp")] for f in files}
    for f in files:
        with open(os.path.join(cli, f), encoding="utf-8") as fh:
            text = fh.read()
        stem = f[len("cmd_") : -len(".cpp")]
        for parent, name in SUB.findall(text):
            command = name if parent == "app" else f"{parent} {name}"
            want = "cmd_" + command.replace(" ", "_").replace("-", "_") + ".cpp"
            if f == want or (f, command) in KNOWN:
                continue
            problems.append(f"src/cli/{f}: adds `weft {command}`, which belongs in src/cli/{want}")
        # No command of its own: it must be a mode of the command it is named after (cmd_ping_udp.cpp).
        is_mode = any(stem.startswith(other + "_") for other in stems if other != stem)
        if not SUB.search(text) and not is_mode:
            problems.append(f"src/cli/{f}: adds no command and is no mode of one; only command files are named cmd_*.cpp")
    return problems


def self_test():
    def cli(files):
        return {os.path.join("src", "cli", name): text for name, text in files.items()}

    clean = {
        "cmd_ping.cpp": 'auto* s = root.app.add_subcommand("ping", "x");',
        "cmd_bench_probe.cpp": 'auto* s = root.bench->add_subcommand(\n  "probe", "x");',
        "cmd_rdma_devices.cpp": 'root.rdma->add_subcommand("devices", "x");',
        "cmd_ping_udp.cpp": "// a mode of weft ping: no command of its own\n",
        "ping_report.cpp": "// not a command file\n",
    }
    planted = {
        "wrong top-level name": ({"cmd_probe.cpp": 'root.app.add_subcommand("ping-all", "x");'}, "belongs in src/cli/cmd_ping_all.cpp"),
        "wrong parent": ({"cmd_bench_ingest.cpp": 'root.rdma->add_subcommand("ingest", "x");'}, "belongs in src/cli/cmd_rdma_ingest.cpp"),
        "two commands in one file": (
            {"cmd_ping.cpp": 'root.app.add_subcommand("ping", "x"); root.app.add_subcommand("responder", "y");'},
            "adds `weft responder`",
        ),
        "a helper named like a command": ({"cmd_helpers.cpp": "int helper();\n"}, "cmd_helpers.cpp: adds no command"),
    }
    planted = {name: (cli(changes), expected) for name, (changes, expected) in planted.items()}
    return source_check.self_test(check, cli(clean), planted)


def summary(problems):
    for (f, command), want in KNOWN.items():
        print(f"known: src/cli/{f} adds `weft {command}`, to move to src/cli/{want}")
    print(f"cli file names: {len(problems)} mismatch(es)")


def main():
    return source_check.main(__doc__, check, self_test, summary)


if __name__ == "__main__":
    sys.exit(main())
