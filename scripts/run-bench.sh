#!/usr/bin/env bash
# Runs every benchmark binary in the build directory. Each repeats its cases with random
# interleaving (so drift on a shared machine hits ours and the baseline alike) and reports medians
# and the ratio of ours to the baseline measured in the same run.
#   scripts/run-bench.sh [build-dir] [extra Google Benchmark flags...]
set -euo pipefail
build=${1:-build}
shift || true
reps=${NF_BENCH_REPETITIONS:-5}
status=0
for b in "$build"/bench_*; do
  [ -x "$b" ] || continue
  echo "=== $(basename "$b") ==="
  "$b" --benchmark_repetitions="$reps" --benchmark_enable_random_interleaving=true \
       --benchmark_report_aggregates_only=true "$@" || status=1
  echo
done
exit $status
