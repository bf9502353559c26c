#!/usr/bin/env bash
# Data-parallel throughput on this machine (docs/scaling.md): STEPS optimizer steps of a model
# trained by 1 process x 2 threads at batch 2B against 2 MPI ranks x 1 thread at batch B each (the
# same global batch), alternated ROUNDS times in one invocation; prints per run the median
# tokens/s over the steps after the first and, for the ranks, the median time blocked on the
# gradient all-reduce (metrics.jsonl's comm_wait_s) as a share of the step.
#   scripts/bench-data-parallel.sh TOKENS.bin [model] [B] [context] [steps] [rounds]
set -euo pipefail
tokens=$1 model=${2:-minimind2-small} batch=${3:-4} context=${4:-256} steps=${5:-10} rounds=${6:-2}
bin=${NANOFORMER:-build/nanoformer}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
common=(train --config "$model" --data "$tokens" --context "$context" --steps "$steps" --warmup 1
        --eval-every 0 --val-fraction 0 --quiet)

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}'; }
field() { grep -o "\"$2\":[0-9.e+-]*" "$1" | tail -n +2 | cut -d: -f2; }  # steps after the first

for round in $(seq "$rounds"); do
  out=$work/one_$round
  NANOFORMER_THREADS=2 "$bin" "${common[@]}" --batch-size $((2 * batch)) --out "$out" > /dev/null
  one=$(field "$out/metrics.jsonl" tokens_per_s | median)
  out=$work/two_$round
  mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 -x NANOFORMER_THREADS=1 \
    "$bin" "${common[@]}" --batch-size "$batch" --out "$out" > /dev/null
  two=$(field "$out/metrics.jsonl" tokens_per_s | median)
  wait_s=$(field "$out/metrics.jsonl" comm_wait_s | median)
  awk -v r="$round" -v one="$one" -v two="$two" -v w="$wait_s" -v b="$batch" -v t="$context" 'BEGIN {
    step = 2 * b * t / two
    printf "round %d: 1 process x 2 threads %.0f tokens/s | 2 ranks x 1 thread %.0f tokens/s (ratio %.2f), " \
           "all-reduce wait %.3f s of a %.2f s step (%.1f%%)\n", r, one, two, two / one, w, step, 100 * w / step }'
done
