#!/usr/bin/env python3
"""Checks weft's layer order: a folder of src/ may use (#include "X/...", or link weft_X in its
CMakeLists.txt) only folders of a LOWER layer, never one above it or beside it:

    base < proto, net, stack < rdma < msg < probe < agent < controller < cli

proto, net and stack are siblings, so none of them uses another: proto (what the agent and the
controller say to each other) is plain data and JSON, with no sockets and no verbs, so that the
controller can depend on it without the probe engines. Verbs headers (<infiniband/...>,
<rdma/rdma_cma.h>) are for rdma and the layers above it that drive verbs (msg, probe, agent, cli),
never the controller. The controller goes further than the order asks: it uses only base, proto
and net (it serves HTTP and stores windows; it never runs a probe engine, so it must not pull in
the agent, the probers or verbs). Every folder of src/ must be in the order, and the root CMakeLists.txt must
list WEFT_MODULES in it.

usage: check_layers.py SOURCE_ROOT      exit 0 when clean, 1 with one line per violation
       check_layers.py --self-test      plants each kind of violation in a temp tree, checks each is caught
"""
import os
import re
import sys
import tempfile

LAYERS = [["base"], ["proto", "net", "stack"], ["rdma"], ["msg"], ["probe"], ["agent"], ["controller"], ["cli"]]
RANK = {m: i for i, layer in enumerate(LAYERS) for m in layer}
VERBS_OK = {"rdma", "msg", "probe", "agent", "cli"}
# Folders that may use fewer layers than all those below them.
ONLY = {"controller": {"base", "proto", "net"}}
SOURCE_EXT = (".hpp", ".cpp", ".h", ".cc")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
LINK = re.compile(r"target_link_libraries\s*\(\s*(\S+)([^)]*)\)", re.S)
VERBS = ("infiniband/", "rdma/rdma_cma.h", "rdma/rdma_verbs.h")


def may_use(user, used):
    if used == user:
        return True
    return RANK[used] < RANK[user] and (user not in ONLY or used in ONLY[user])


def why(user, used):
    if user in ONLY and RANK[used] < RANK[user]:
        return f"{user} uses only {', '.join(sorted(ONLY[user]))}"
    return f"{used} is not below {user}"


def order_text():
    return " < ".join(", ".join(layer) for layer in LAYERS)


def check(root):
    problems = []
    src = os.path.join(root, "src")
    modules = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
    for m in modules:
        if m not in RANK:
            problems.append(f"src/{m}: not in the layer order ({order_text()}); add it to tests/layers")
    for m in modules:
        if m not in RANK:
            continue
        for dirpath, _, files in os.walk(os.path.join(src, m)):
            for f in sorted(files):
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, root)
                if f.endswith(SOURCE_EXT):
                    with open(path, encoding="utf-8", errors="replace") as fh:
                        for n, line in enumerate(fh, 1):
                            inc = INCLUDE.match(line)
                            if not inc:
                                continue
                            kind, name = inc.groups()
                            top = name.split("/", 1)[0]
                            if kind == '"' and "/" in name and top in RANK and not may_use(m, top):
                                problems.append(f"{rel}:{n}: {m} includes {name} ({why(m, top)})")
                            if kind == "<" and name.startswith(VERBS) and m not in VERBS_OK:
                                problems.append(f"{rel}:{n}: {m} includes <{name}> (verbs are for {', '.join(sorted(VERBS_OK))})")
                elif f == "CMakeLists.txt":
                    with open(path, encoding="utf-8") as fh:
                        text = fh.read()
                    for target, args in LINK.findall(text):
                        for used in re.findall(r"\bweft_(\w+)", args):
                            if used in RANK and not may_use(m, used):
                                problems.append(f"{rel}: {target} links weft_{used} ({why(m, used)})")
                        if m not in VERBS_OK and ("IBVERBS" in args or "RDMACM" in args):
                            problems.append(f"{rel}: {target} links verbs ({m} may not)")
    top = os.path.join(root, "CMakeLists.txt")
    with open(top, encoding="utf-8") as fh:
        listed = re.search(r"set\(WEFT_MODULES([^)]*)\)", fh.read())
    if not listed:
        problems.append("CMakeLists.txt: no set(WEFT_MODULES ...)")
    else:
        names = listed.group(1).split()
        for name in names:
            if name not in RANK:
                problems.append(f"CMakeLists.txt: WEFT_MODULES lists {name}, which is not in the layer order")
        ranks = [RANK[n] for n in names if n in RANK]
        if ranks != sorted(ranks):
            problems.append(f"CMakeLists.txt: WEFT_MODULES ({' '.join(names)}) is not in the layer order ({order_text()})")
        for m in modules:
            if m in RANK and m != "cli" and m not in names:
                problems.append(f"CMakeLists.txt: WEFT_MODULES does not list {m}")
    return problems


def self_test():
    """Each planted violation must be reported, and the clean tree must not be."""

    def tree(base, files):
        for rel, text in files.items():
            path = os.path.join(base, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)

    clean = {
        "CMakeLists.txt": "set(WEFT_MODULES base proto net rdma probe controller)\n",
        "src/base/log.hpp": "#include <string>\n",
        "src/proto/report.hpp": '#include "base/log.hpp"\n',
        "src/net/socket.hpp": '#include "base/log.hpp"\n',
        "src/rdma/qp.hpp": '#include <infiniband/verbs.h>\n#include "net/socket.hpp"\n',
        "src/probe/prober.hpp": '#include "rdma/qp.hpp"\n#include "proto/report.hpp"\n',
        "src/probe/CMakeLists.txt": "target_link_libraries(weft_probe PUBLIC weft_proto weft_rdma PkgConfig::IBVERBS)\n",
        "src/controller/ingest.cpp": '#include "proto/report.hpp"\n#include "controller/ingest.hpp"\n',
        "src/controller/CMakeLists.txt": "target_link_libraries(weft_controller PUBLIC weft_proto weft_base)\n",
        "src/cli/main.cpp": '#include "controller/ingest.hpp"\n#include "probe/prober.hpp"\n',
    }
    planted = {
        "include up": ({"src/net/socket.hpp": '#include "probe/prober.hpp"\n'}, "net includes probe/prober.hpp"),
        "include sideways": ({"src/proto/report.hpp": '#include "net/socket.hpp"\n'}, "proto includes net/socket.hpp"),
        "link up": (
            {"src/controller/CMakeLists.txt": "target_link_libraries(weft_controller PUBLIC weft_proto\n  weft_cli)\n"},
            "weft_controller links weft_cli",
        ),
        "link sideways": ({"src/net/CMakeLists.txt": "target_link_libraries(weft_net PUBLIC weft_stack)\n"}, "weft_net links weft_stack"),
        "verbs in the controller": (
            {"src/controller/rdma.cpp": "#include <infiniband/verbs.h>\n"},
            "controller includes <infiniband/verbs.h>",
        ),
        "verbs linked by the controller": (
            {"src/controller/CMakeLists.txt": "target_link_libraries(weft_controller PUBLIC PkgConfig::IBVERBS)\n"},
            "weft_controller links verbs",
        ),
        "controller uses the agent": (
            {"src/controller/pinglist.hpp": '#include "agent/rdma_endpoint.hpp"\n'},
            "controller includes agent/rdma_endpoint.hpp (controller uses only base, net, proto)",
        ),
        "unknown folder": ({"src/extra/x.hpp": "\n"}, "src/extra: not in the layer order"),
        "modules out of order": (
            {"CMakeLists.txt": "set(WEFT_MODULES base net proto rdma controller probe)\n"},
            "WEFT_MODULES (base net proto rdma controller probe) is not in the layer order",
        ),
        "module not listed": ({"CMakeLists.txt": "set(WEFT_MODULES base proto net rdma controller)\n"}, "WEFT_MODULES does not list probe"),
    }
    failures = []
    with tempfile.TemporaryDirectory() as d:
        tree(d, clean)
        got = check(d)
        if got:
            failures.append(f"clean tree reported: {got}")
    for name, (changes, expected) in planted.items():
        with tempfile.TemporaryDirectory() as d:
            tree(d, clean)
            tree(d, changes)
            got = check(d)
            if not any(expected in p for p in got):
                failures.append(f"{name}: expected a report containing '{expected}', got {got}")
    for f in failures:
        print("FAIL", f)
    print(f"self-test: {len(planted) + 1 - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    if sys.argv[1] == "--self-test":
        return self_test()
    problems = check(sys.argv[1])
    for p in problems:
        print(p)
    print(f"layer order ({order_text()}): {len(problems)} violation(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
