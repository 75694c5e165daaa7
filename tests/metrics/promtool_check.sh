#!/usr/bin/env bash
# promtool (from Debian's prometheus package) lints an exposition: names, units, counter suffixes,
# help text, reserved labels. Exit 77 (skipped) when promtool is not installed.
set -euo pipefail
command -v promtool >/dev/null || { echo "promtool not installed: skipped"; exit 77; }
out=$("$1")
echo "$out" | promtool check metrics
echo "promtool check metrics: OK ($(grep -vc '^#' <<<"$out") samples)"
