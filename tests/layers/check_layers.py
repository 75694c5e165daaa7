#!/usr/bin/env python3
"""Checks that each folder of src/ (a module) uses only the modules it is allowed to.

The allowed sets are written in one place, the root CMakeLists.txt, one line per module:

    set(WEFT_MODULES base proto net stack posix rdma msg probe agent controller)   (build order)
    set(WEFT_USES_msg base net rdma)                                              (what msg may use)

They make three towers on one ground (README "Layout"): the monitor (proto, net -> probe ->
agent; the controller on proto and net alone, so it builds without probe engines or verbs), RDMA
(rdma -> msg; probe's RDMA engine stands on rdma) and the user-space stack (stack -> posix); cli
stands on all of them. This checker holds the code to those sets:
  - every `#include "X/..."` of a module names itself or a module of its set;
  - every `weft_X` a module's CMakeLists.txt links is itself or of its set;
  - every module it includes it also links (a module that includes net/ but gets weft_net only
    through another library builds by luck, and breaks when that library stops linking it);
  - verbs headers (<infiniband/...>, <rdma/rdma_cma.h>) and the verbs libraries only in rdma and
    the modules whose set holds rdma;
  - every module in src/ has a set, every module of a set comes earlier in WEFT_MODULES (so the
    sets have no cycle), and WEFT_MODULES lists every module but cli.

usage: check_layers.py SOURCE_ROOT      exit 0 when clean, 1 with one line per violation
       check_layers.py --self-test      plants each kind of violation in a temp tree, checks each is caught
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import source_check  # noqa: E402  (tests/pylib: what the source checkers share)

SOURCE_EXT = (".hpp", ".cpp", ".h", ".cc", ".c")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
LINK = re.compile(r"target_link_libraries\s*\(\s*(\S+)([^)]*)\)", re.S)
SET = re.compile(r"^\s*set\(\s*(WEFT_MODULES|WEFT_USES_(\w+))\b([^)]*)\)", re.M)
VERBS = ("infiniband/", "rdma/rdma_cma.h", "rdma/rdma_verbs.h")
# Libraries that carry another module's code compiled again: libweft_preload.so holds its own
# position-independent copy of the stack (src/posix/CMakeLists.txt says why).
COPIES = {"posix_stack_pic": "stack"}


def read_sets(root):
    """(WEFT_MODULES list or None, {module: set of modules it may use}, problems)."""
    with open(os.path.join(root, "CMakeLists.txt"), encoding="utf-8") as fh:
        text = re.sub(r"#[^\n]*", "", fh.read())
    order, uses = None, {}
    for whole, module, args in SET.findall(text):
        if whole == "WEFT_MODULES":
            order = args.split()
        else:
            uses[module] = set(args.split())
    return order, uses


def module_of(library, modules):
    """The module a weft_X library belongs to: X itself, or the module whose sub-folder or part it
    builds (weft_probe_ip from src/probe/ip is probe)."""
    if library in modules:
        return library
    owners = [m for m in modules if library.startswith(m + "_")]
    return max(owners, key=len) if owners else None


def may_use(uses, user, used):
    return used == user or used in uses.get(user, set())


def verbs_allowed(uses, m):
    return m == "rdma" or "rdma" in uses.get(m, set())


def allowed_text(uses, m):
    s = sorted(uses.get(m, set()))
    return f"{m} may use {', '.join(s)}" if s else f"{m} may use no other module"


def scan_module(root, m, modules, order):
    """(includes: {module: first 'path:line'}, links: [(cmake path, target, library)],
    verbs: [where], verbs_links: [(cmake path, target)]) of one module."""
    includes, links, verbs, verbs_links = {}, [], [], []
    for dirpath, _, files in os.walk(os.path.join(root, "src", m)):
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
                        if kind == '"' and "/" in name and top in modules and top != m:
                            includes.setdefault(top, []).append(f"{rel}:{n}: includes {name}")
                        if kind == "<" and name.startswith(VERBS):
                            verbs.append(f"{rel}:{n}: includes <{name}>")
            elif f == "CMakeLists.txt":
                with open(path, encoding="utf-8") as fh:
                    text = re.sub(r"#[^\n]*", "", fh.read())
                for target, args in LINK.findall(text):
                    for library in re.findall(r"\bweft_(\w+)", args):
                        links.append((rel, target, library))
                    if "weft_${m}" in args and "WEFT_MODULES" in text:  # a loop over every module
                        links.extend((rel, target, lib) for lib in order or [])
                    if "IBVERBS" in args or "RDMACM" in args:
                        verbs_links.append((rel, target))
    return includes, links, verbs, verbs_links


def check(root):
    problems = []
    order, uses = read_sets(root)
    if order is None:
        return ["CMakeLists.txt: no set(WEFT_MODULES ...)"]
    src = os.path.join(root, "src")
    modules = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
    known = set(modules) | set(order) | set(uses)
    for m in modules:
        if m not in uses:
            problems.append(f"src/{m}: no set(WEFT_USES_{m} ...) in CMakeLists.txt: say which modules it may use")
        if m != "cli" and m not in order:
            problems.append(f"CMakeLists.txt: WEFT_MODULES does not list {m}")
    position = {m: i for i, m in enumerate(order)}
    position["cli"] = len(order)
    for m, used in sorted(uses.items()):
        for u in sorted(used):
            if u not in known:
                problems.append(f"CMakeLists.txt: WEFT_USES_{m} names {u}, which is no module")
            elif u == m:
                problems.append(f"CMakeLists.txt: WEFT_USES_{m} names {m} itself")
            elif m in position and u in position and position[u] > position[m]:
                problems.append(f"CMakeLists.txt: WEFT_USES_{m} names {u}, which WEFT_MODULES builds after {m}")
    for m in modules:
        if m not in uses:
            continue
        includes, links, verbs, verbs_links = scan_module(root, m, known, order)
        linked = set()
        for rel, target, library in links:
            used = module_of(library, known)
            if used is None:
                continue
            linked.add(COPIES.get(library, used))
            if not may_use(uses, m, used):
                problems.append(f"{rel}: {target} links weft_{library} ({allowed_text(uses, m)})")
        for used, places in sorted(includes.items()):
            if not may_use(uses, m, used):
                problems.extend(f"{p} ({allowed_text(uses, m)})" for p in places)
            elif used not in linked:
                problems.append(f"{places[0]}, but src/{m} never links weft_{used}")
        if not verbs_allowed(uses, m):
            problems.extend(f"{v} (verbs only where rdma may be used; {allowed_text(uses, m)})" for v in verbs)
            problems.extend(f"{rel}: {target} links verbs ({allowed_text(uses, m)})" for rel, target in verbs_links)
    return problems


def self_test():
    """Each planted violation must be reported, and the clean tree must not be."""
    sets = (
        "set(WEFT_MODULES base proto net rdma probe controller)\n"
        "set(WEFT_USES_base)\nset(WEFT_USES_proto base)\nset(WEFT_USES_net base)\nset(WEFT_USES_rdma base net)\n"
        "set(WEFT_USES_probe base proto net rdma)\nset(WEFT_USES_controller base proto)\n"
        "set(WEFT_USES_cli base proto net rdma probe controller)\n"
    )
    clean = {
        "CMakeLists.txt": sets,
        "src/base/log.hpp": "#include <string>\n",
        "src/proto/report.hpp": '#include "base/log.hpp"\n',
        "src/proto/CMakeLists.txt": "target_link_libraries(weft_proto PUBLIC weft_base)\n",
        "src/net/socket.hpp": '#include "base/log.hpp"\n',
        "src/net/CMakeLists.txt": "target_link_libraries(weft_net PUBLIC weft_base)\n",
        "src/rdma/qp.hpp": '#include <infiniband/verbs.h>\n#include "net/socket.hpp"\n',
        "src/rdma/CMakeLists.txt": "target_link_libraries(weft_rdma PUBLIC weft_net weft_base PkgConfig::IBVERBS)\n",
        "src/probe/prober.hpp": '#include "rdma/qp.hpp"\n#include "proto/report.hpp"\n',
        "src/probe/CMakeLists.txt": "target_link_libraries(weft_probe PUBLIC weft_proto weft_rdma weft_probe_ip PkgConfig::IBVERBS)\n",
        "src/probe/ip/CMakeLists.txt": "target_link_libraries(weft_probe_ip PUBLIC weft_net weft_proto weft_base)\n",
        "src/probe/ip/udp_prober.hpp": '#include "net/socket.hpp"\n#include "probe/prober.hpp"\n',
        "src/controller/ingest.cpp": '#include "proto/report.hpp"\n#include "controller/ingest.hpp"\n',
        "src/controller/CMakeLists.txt": "target_link_libraries(weft_controller PUBLIC weft_proto weft_base)\n",
        "src/cli/main.cpp": '#include "controller/ingest.hpp"\n#include "probe/prober.hpp"\n',
        "src/cli/CMakeLists.txt": "foreach(m IN LISTS WEFT_MODULES)\n  target_link_libraries(weft PRIVATE weft_${m})\nendforeach()\n",
    }
    planted = {
        "include outside the set": ({"src/net/socket.hpp": '#include "probe/prober.hpp"\n'}, "net/socket.hpp:1: includes probe/prober.hpp (net may use base)"),
        "include of a sibling": ({"src/proto/report.hpp": '#include "net/socket.hpp"\n'}, "includes net/socket.hpp (proto may use base)"),
        "include of a lower module outside the set": (
            {"src/controller/pinglist.hpp": '#include "rdma/qp.hpp"\n'},
            "includes rdma/qp.hpp (controller may use base, proto)",
        ),
        "included but not linked": (
            {"src/probe/ip/CMakeLists.txt": "target_link_libraries(weft_probe_ip PUBLIC weft_proto weft_base)\n"},
            "includes net/socket.hpp, but src/probe never links weft_net",
        ),
        "link outside the set": (
            {"src/controller/CMakeLists.txt": "target_link_libraries(weft_controller PUBLIC weft_proto\n  weft_cli weft_base)\n"},
            "weft_controller links weft_cli",
        ),
        "link sideways": ({"src/net/CMakeLists.txt": "target_link_libraries(weft_net PUBLIC weft_proto weft_base)\n"}, "weft_net links weft_proto"),
        "sub-folder library linked outside the set": (
            {"src/controller/CMakeLists.txt": "target_link_libraries(weft_controller PUBLIC weft_proto weft_base weft_probe_ip)\n"},
            "weft_controller links weft_probe_ip",
        ),
        "sub-folder links outside the set": (
            {"src/probe/ip/CMakeLists.txt": "target_link_libraries(weft_probe_ip PUBLIC weft_net weft_proto weft_base weft_controller)\n"},
            "weft_probe_ip links weft_controller",
        ),
        "verbs in a module without rdma": (
            {"src/controller/rdma.cpp": "#include <infiniband/verbs.h>\n"},
            "controller/rdma.cpp:1: includes <infiniband/verbs.h> (verbs only where rdma may be used",
        ),
        "verbs linked by a module without rdma": (
            {"src/controller/CMakeLists.txt": "target_link_libraries(weft_controller PUBLIC weft_proto weft_base PkgConfig::IBVERBS)\n"},
            "weft_controller links verbs",
        ),
        "unknown folder": ({"src/extra/x.hpp": "\n"}, "src/extra: no set(WEFT_USES_extra ...)"),
        "set names a later module": (
            {"CMakeLists.txt": sets.replace("set(WEFT_USES_rdma base net)", "set(WEFT_USES_rdma base net probe)")},
            "WEFT_USES_rdma names probe, which WEFT_MODULES builds after rdma",
        ),
        "set names no module": (
            {"CMakeLists.txt": sets.replace("set(WEFT_USES_net base)", "set(WEFT_USES_net base nett)")},
            "WEFT_USES_net names nett, which is no module",
        ),
        "module not listed": (
            {"CMakeLists.txt": sets.replace("rdma probe controller)", "rdma controller)", 1)},
            "WEFT_MODULES does not list probe",
        ),
        "no WEFT_MODULES": ({"CMakeLists.txt": sets.replace("set(WEFT_MODULES", "set(MODULES")}, "no set(WEFT_MODULES"),
    }
    return source_check.self_test(check, clean, planted)


def main():
    return source_check.main(__doc__, check, self_test, lambda problems: print(f"module sets: {len(problems)} violation(s)"))


if __name__ == "__main__":
    sys.exit(main())
