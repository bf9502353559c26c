#!/usr/bin/env bash
# A small model that answers in JSON, for tools/grammar/jsonschemabench.py --model: random weights
# wander inside strings and rarely close them, so most answers of a random model end at max_tokens
# and are never validated; a model trained for a few minutes on JSON answers closes them.
# Its data: valid MaskBench instances of the JSONSchemaBench schemas that are NOT in the benchmark's
# sample (jsonschemabench.py --export-answers, same seed), as chat answers to the benchmark's
# prompt. Never run by CI.
#   tools/grammar/train_json_model.sh [BUILD=build] [OUT=.cache/json-model] [STEPS=400]
#   python3 tools/grammar/jsonschemabench.py --model .cache/json-model/ckpt_00000400.safetensors ...
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:-build}"
out="${2:-.cache/json-model}"
steps="${3:-400}"
tokenizer="${NF_TOKENIZER:-/work/shared/data/minimind2_tokenizer.json}"
mkdir -p "$out"
python3 tools/grammar/jsonschemabench.py --export-answers "$out/answers.jsonl"
# minimind2-small's shape, 2 layers of 256: a few minutes on 2 cores
"$build/nanoformer" train --config minimind2-small --set n_layers=2 --set dim=256 --set mlp_hidden=768 \
  --data "$out/answers.jsonl" -t "$tokenizer" --steps "$steps" --batch-size 16 --context 256 \
  --lr 3e-3 --warmup 20 --out "$out"
