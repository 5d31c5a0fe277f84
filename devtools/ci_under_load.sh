#!/usr/bin/env bash
# .ci/run from fresh clones, RUNS times in a row, with BUSY processes spinning on the cores:
# issue 26's bar ("the suite holds on a busy machine").
#   bash devtools/ci_under_load.sh [RUNS=3] [BUSY=4]
# Each run clones this checkout's HEAD into a temporary folder (no ../shared beside it, as
# on a fresh machine) and prints one line: its exit code, its wall time, pytest's summary.
set -u
runs=${1:-3}
busy=${2:-4}
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for i in $(seq 1 "$runs"); do
  rm -rf "$work/main"
  git clone -q "$repo" "$work/main"
  pids=()
  for _ in $(seq 1 "$busy"); do python3 -c 'while True: pass' & pids+=($!); done
  start=$(date +%s)
  (cd "$work/main" && CI=true bash .ci/run < /dev/null) > "$work/run$i.log" 2>&1
  rc=$?
  kill "${pids[@]}" 2>/dev/null
  wait "${pids[@]}" 2>/dev/null
  echo "run $i ($(git -C "$work/main" log --oneline -1 | cut -c1-7)): exit $rc after $(( $(date +%s) - start )) s; $(tail -1 "$work/run$i.log")"
  [ "$rc" -eq 0 ] || { tail -40 "$work/run$i.log"; exit "$rc"; }
done
