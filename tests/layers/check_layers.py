#!/usr/bin/env python3
"""Checks weft's layer order: a folder of src/ may use (#include "X/...", or link weft_X in its
CMakeLists.txt) only folders of a LOWER layer, never one above it or beside it:

    base < proto, net, stack < posix < rdma < msg < probe < agent < controller < cli

proto, net and stack are siblings, so none of them uses another: proto (what the agent and the
controller say to each other) is plain data and JSON, with no sockets and no verbs, so that the
controller can depend on it without the probe engines. posix (the LD_PRELOAD socket layer,
libweft_preload.so) sits on stack alone; only cli knows of it (`weft stack run`). Verbs headers (<infiniband/...>,
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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import source_check  # noqa: E402  (tests/pylib: what the source checkers share)

LAYERS = [["base"], ["proto", "net", "stack"], ["posix"], ["rdma"], ["msg"], ["probe"], ["agent"], ["controller"], ["cli"]]
RANK = {m: i for i, layer in enumerate(LAYERS) for m in layer}
VERBS_OK = {"rdma", "msg", "probe", "agent", "cli"}
# Folders that may use fewer layers than all those below them.
ONLY = {"controller": {"base", "proto", "net"}}
SOURCE_EXT = (".hpp", ".cpp", ".h", ".cc")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
LINK = re.compile(r"target_link_libraries\s*\(\s*(\S+)([^)]*)\)", re.S)
VERBS = ("infiniband/", "rdma/rdma_cma.h", "rdma/rdma_verbs.h")


def module_of(library):
    """The layer a weft_X library belongs to: X itself, or the folder whose sub-folder it builds
    (weft_probe_ip from src/probe/ip is probe), so sub-folders need no entry of their own."""
    if library in RANK:
        return library
    owners = [m for m in RANK if library.startswith(m + "_")]
    return max(owners, key=len) if owners else None


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
                        for library in re.findall(r"\bweft_(\w+)", args):
                            used = module_of(library)
                            if used and not may_use(m, used):
                                problems.append(f"{rel}: {target} links weft_{library} ({why(m, used)})")
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
    clean = {
        "CMakeLists.txt": "set(WEFT_MODULES base proto net rdma probe controller)\n",
        "src/base/log.hpp": "#include <string>\n",
        "src/proto/report.hpp": '#include "base/log.hpp"\n',
        "src/net/socket.hpp": '#include "base/log.hpp"\n',
        "src/rdma/qp.hpp": '#include <infiniband/verbs.h>\n#include "net/socket.hpp"\n',
        "src/probe/prober.hpp": '#include "rdma/qp.hpp"\n#include "proto/report.hpp"\n',
        "src/probe/CMakeLists.txt": "target_link_libraries(weft_probe PUBLIC weft_proto weft_rdma weft_probe_ip PkgConfig::IBVERBS)\n",
        "src/probe/ip/CMakeLists.txt": "target_link_libraries(weft_probe_ip PUBLIC weft_net weft_proto)\n",
        "src/probe/ip/udp_prober.hpp": '#include "net/socket.hpp"\n#include "probe/prober.hpp"\n',
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
        "include of a sub-folder up": (
            {"src/net/socket.cpp": '#include "probe/ip/udp_prober.hpp"\n'},
            "net includes probe/ip/udp_prober.hpp",
        ),
        "sub-folder library linked up": (
            {"src/controller/CMakeLists.txt": "target_link_libraries(weft_controller PUBLIC weft_probe_rdma)\n"},
            "weft_controller links weft_probe_rdma",
        ),
        "sub-folder links up": (
            {"src/probe/ip/CMakeLists.txt": "target_link_libraries(weft_probe_ip PUBLIC weft_agent)\n"},
            "weft_probe_ip links weft_agent",
        ),
        "unknown folder": ({"src/extra/x.hpp": "\n"}, "src/extra: not in the layer order"),
        "modules out of order": (
            {"CMakeLists.txt": "set(WEFT_MODULES base net proto rdma controller probe)\n"},
            "WEFT_MODULES (base net proto rdma controller probe) is not in the layer order",
        ),
        "module not listed": ({"CMakeLists.txt": "set(WEFT_MODULES base proto net rdma controller)\n"}, "WEFT_MODULES does not list probe"),
    }
    return source_check.self_test(check, clean, planted)


def main():
    return source_check.main(
        __doc__, check, self_test, lambda problems: print(f"layer order ({order_text()}): {len(problems)} violation(s)")
    )


if __name__ == "__main__":
    sys.exit(main())
