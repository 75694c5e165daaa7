# A scratch directory and the background processes of a bench script, both gone when it exits
# (sourced, not run): sets $tmp and the array `pids` (append what you start in the background) and
# an EXIT trap that kills those processes, waits for them and removes $tmp.
tmp=$(mktemp -d)
pids=()
bench_cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap bench_cleanup EXIT
