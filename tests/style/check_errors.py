#!/usr/bin/env python3
"""weft's one error idiom (docs/code.md "Errors: one idiom"), the parts a script can see:
  - weft's own code never throws: no `throw` in src/ (libraries that throw are caught where
    weft calls them, which `catch` may do);
  - code the fuzzers compile (src/proto) spells `weft::unexpected`, never `std::unexpected`
    (clang 14's libstdc++ has no usable <expected>; base/result.hpp has the stand-in).
Comments and string literals are not code.

usage: check_errors.py SOURCE_ROOT   exit 0 when clean, 1 with one line per violation
       check_errors.py --self-test   plants each violation in a temp tree and checks it is caught
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import source_check  # noqa: E402  (tests/pylib: what the source checkers share)

SOURCE_EXT = (".hpp", ".cpp", ".h", ".cc")
THROW = re.compile(r"\bthrow\b")
STD_UNEXPECTED = re.compile(r"\bstd::unexpected\b")
STRING = re.compile(r'"(?:\\.|[^"\\])*"' + r"|'(?:\\.|[^'\\])*'")


def code_lines(text):
    """(line number, code) with comments and string literals blanked out."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    for n, line in enumerate(text.split("\n"), 1):
        yield n, STRING.sub('""', line).split("//", 1)[0]


def check(root):
    problems = []
    src = os.path.join(root, "src")
    for dirpath, _, files in os.walk(src):
        for f in sorted(files):
            if not f.endswith(SOURCE_EXT):
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, root)
            module = os.path.relpath(path, src).split(os.sep, 1)[0]
            with open(path, encoding="utf-8", errors="replace") as fh:
                for n, code in code_lines(fh.read()):
                    if THROW.search(code):
                        problems.append(f"{rel}:{n}: throws (return a Result; docs/code.md)")
                    if module == "proto" and STD_UNEXPECTED.search(code):
                        problems.append(f"{rel}:{n}: std::unexpected in src/proto (the fuzz build needs weft::unexpected)")
    return problems


def self_test():
    clean = {
        "src/base/result.hpp": "// Results, never exceptions: nothing here may throw\n",
        "src/net/socket.cpp": 'Result<int> f() { return fail("cannot throw"); }\n/* throw in a comment */\n',
        "src/controller/config.cpp": "try { parse(); } catch (const YAML::Exception& e) { return fail(\"{}\", e.what()); }\n",
        "src/proto/report.cpp": "if (!r) return weft::unexpected(r.error());\n",
    }
    planted = {
        "a throw": ({"src/net/socket.cpp": "void f() { throw std::runtime_error(\"x\"); }\n"}, "src/net/socket.cpp:1: throws"),
        "a rethrow": ({"src/agent/agent.cpp": "try { g(); } catch (...) {\n  throw;\n}\n"}, "src/agent/agent.cpp:2: throws"),
        "std::unexpected in proto": (
            {"src/proto/pinglist.cpp": "if (!r) return std::unexpected(r.error());\n"},
            "src/proto/pinglist.cpp:1: std::unexpected in src/proto",
        ),
    }
    return source_check.self_test(check, clean, planted)


def main():
    return source_check.main(__doc__, check, self_test, lambda problems: print(f"error idiom: {len(problems)} violation(s)"))


if __name__ == "__main__":
    sys.exit(main())
