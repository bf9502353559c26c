#!/usr/bin/env bash
# Runs every benchmark binary in the build directory. The kernel benchmarks (Google Benchmark)
# repeat their cases with random interleaving (so drift on a shared machine hits ours and the
# baseline alike) and report medians and the ratio of ours to the baseline measured in the same
# run. The training benchmark (bench_training) alternates our process and PyTorch's over rounds and
# reports medians, ratios, GEMM limits and peak memory (docs/training.md, "Training speed"). The
# inference benchmark (bench_inference) does the same for prefill and decode of five presets beside
# PyTorch and the memory-bandwidth limit (docs/inference.md, "Speed"), and of the GGUF types people
# download beside llama.cpp's and ik_llama.cpp's own llama-bench where tools/peers/ built them.
# bench_schema_masks times masks and schema compilation over JSONSchemaBench schemas as MaskBench
# does and prints MaskBench's published numbers beside (docs/structured-output.md).
#   scripts/run-bench.sh [build-dir] [extra Google Benchmark flags...]
# Environment: NF_BENCH=all|kernels|training|inference (default all), NF_BENCH_REPETITIONS (kernels,
# 5), NF_TRAIN_BENCH_ROUNDS (3), NF_INFER_BENCH_ROUNDS (3), NF_BENCH_THREADS (training and
# inference, 2), NF_PYTHON (.venv/bin/python), NF_BENCH_BASELINE (a build directory of an older commit:
# training and inference also measure its binaries, alternating, and print before/after; so does
# batched decode, bench_batched_decode, through scripts/compare-bench.py), NF_BENCH_BASELINE_COMMIT
# (a commit: scripts/build-baseline.sh builds its benchmarks in build-baseline/ first and sets
# NF_BENCH_BASELINE; `make bench BASELINE=<rev>`), NF_INFER_BENCH_FLAGS / NF_TRAIN_BENCH_FLAGS
# (more flags for bench_inference / bench_training, e.g. "--presets minimind2-small --types f32,q8_0").
# GOMP_SPINCOUNT is 10000 unless it or OMP_WAIT_POLICY is set, as the nanoformer CLI runs
# (apps/nanoformer/openmp_defaults.cpp).
set -euo pipefail
if [ -z "${GOMP_SPINCOUNT:-}" ] && [ -z "${OMP_WAIT_POLICY:-}" ]; then export GOMP_SPINCOUNT=10000; fi
build=${1:-build}
shift || true
if [ -n "${NF_BENCH_BASELINE_COMMIT:-}" ]; then
  NF_BENCH_BASELINE=$(bash "$(dirname "$0")/build-baseline.sh" "$NF_BENCH_BASELINE_COMMIT")
fi
which=${NF_BENCH:-all}
reps=${NF_BENCH_REPETITIONS:-5}
status=0
if [ "$which" = all ] || [ "$which" = kernels ]; then
  for b in "$build"/bench_*; do
    [ -x "$b" ] || continue
    case "$(basename "$b")" in bench_training | bench_inference) continue ;; esac
    echo "=== $(basename "$b") ==="
    "$b" --benchmark_repetitions="$reps" --benchmark_enable_random_interleaving=true \
         --benchmark_report_aggregates_only=true "$@" || status=1
    echo
  done
fi
if [ -n "${NF_BENCH_BASELINE:-}" ] && [ -x "$NF_BENCH_BASELINE/bench_batched_decode" ] &&
   { [ "$which" = all ] || [ "$which" = kernels ] || [ "$which" = inference ]; }; then
  echo "=== bench_batched_decode, before and after ==="
  python3 "$(dirname "$0")/compare-bench.py" "$NF_BENCH_BASELINE/bench_batched_decode" "$build/bench_batched_decode" \
      --rounds "${NF_INFER_BENCH_ROUNDS:-3}" || status=1
  echo
fi
if { [ "$which" = all ] || [ "$which" = training ]; } && [ -x "$build/bench_training" ]; then
  echo "=== bench_training ==="
  "$build/bench_training" --python "${NF_PYTHON:-.venv/bin/python}" --rounds "${NF_TRAIN_BENCH_ROUNDS:-3}" \
      --threads "${NF_BENCH_THREADS:-2}" ${NF_BENCH_BASELINE:+--baseline "$NF_BENCH_BASELINE/bench_training"} \
      ${NF_TRAIN_BENCH_FLAGS:-} || status=1
  echo
fi
if { [ "$which" = all ] || [ "$which" = inference ]; } && [ -x "$build/bench_inference" ]; then
  echo "=== bench_inference ==="
  "$build/bench_inference" --python "${NF_PYTHON:-.venv/bin/python}" --rounds "${NF_INFER_BENCH_ROUNDS:-3}" \
      --threads "${NF_BENCH_THREADS:-2}" ${NF_BENCH_BASELINE:+--baseline "$NF_BENCH_BASELINE/bench_inference"} \
      ${NF_INFER_BENCH_FLAGS:-} || status=1
  echo
fi
exit $status
