"""What weft's source-tree checkers (tests/layers/check_layers.py, tests/style/check_cli_names.py)
share: each has a check(root) that returns one line per problem, a --self-test that plants each
kind of problem in a temporary tree and proves it is reported (and that the clean tree is not),
and the same command line. A checker that cannot fail is not a test, hence the self-test."""
import os
import sys
import tempfile


def write_tree(base, files):
    """Writes {relative path: text} under base, making folders as needed."""
    for rel, text in files.items():
        path = os.path.join(base, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)


def self_test(check, clean, planted):
    """clean: {path: text} that check() must pass. planted: {name: ({path: text}, expected)}, each
    written over the clean tree, where some reported line must contain expected. Returns the exit
    code (0 when all hold) after printing one FAIL line per miss and a count."""
    failures = []
    with tempfile.TemporaryDirectory() as d:
        write_tree(d, clean)
        got = check(d)
        if got:
            failures.append(f"clean tree reported: {got}")
    for name, (changes, expected) in planted.items():
        with tempfile.TemporaryDirectory() as d:
            write_tree(d, clean)
            write_tree(d, changes)
            got = check(d)
            if not any(expected in p for p in got):
                failures.append(f"{name}: expected a report containing '{expected}', got {got}")
    for f in failures:
        print("FAIL", f)
    print(f"self-test: {len(planted) + 1 - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


def main(doc, check, run_self_test, summary):
    """usage: CHECKER SOURCE_ROOT | CHECKER --self-test. summary(problems) prints the last lines."""
    if len(sys.argv) != 2:
        print(doc)
        return 2
    if sys.argv[1] == "--self-test":
        return run_self_test()
    problems = check(sys.argv[1])
    for p in problems:
        print(p)
    summary(problems)
    return 1 if problems else 0
