#!/usr/bin/env bash
# `./run bench` (scripts/bench-all): the list names every bench/*.sh with a description, and an
# unknown or path-like name is refused with exit 2 before anything runs.
set -uo pipefail
ROOT=${1:?usage: $0 SOURCE_DIR}
cd "$ROOT" || exit 1
out=$(scripts/bench-all) || { echo "listing failed"; exit 1; }
fail=0
for b in bench/*.sh; do
  name=$(basename "$b" .sh)
  line=$(grep -E "^  $name +[^ ]" <<<"$out") || { echo "not listed, or listed without a description: $name"; fail=1; continue; }
  [[ $(wc -w <<<"$line") -ge 3 ]] || { echo "listed without a description: $name"; fail=1; }
done
for bad in no_such_bench ../run bench/stack_apps; do
  err=$(scripts/bench-all "$bad" 2>&1 >/dev/null); rc=$?
  [[ $rc == 2 && $err == *"no benchmark named"* ]] || { echo "'$bad' not refused (rc $rc: $err)"; fail=1; }
done
[[ $fail == 0 ]] && echo "bench list: $(grep -c '^  ' <<<"$out") benchmarks listed, bad names refused"
exit $fail
