#!/usr/bin/env bash
# A trained target for the draft-model measurement of docs/inference.md ("What a draft model
# gains"): no trained model of a useful size is on the machine, so one is trained here, a
# MiniMind-shaped LLaMA (minimind2-small with 16 layers: dim 512, 8 heads, 2 KV heads, 48 M
# parameters) on tinyshakespeare with MiniMind's tokenizer, bf16 autocast, AdamW, 900 steps of
# 8 x 256 tokens (4.4 passes over the 418 k training tokens), about 30 minutes on 2 cores.
#   tools/speculative/train_target.sh OUT_FOLDER [STEPS]
# OUT_FOLDER gets the checkpoints (ckpt_*.safetensors) and target-q8_0.gguf, the last one in Q8_0
# with the tokenizer embedded. Then tools/speculative/make_draft.sh distils its draft.
set -euo pipefail
out=$1 steps=${2:-900}
here=$(cd "$(dirname "$0")" && pwd)
nanoformer=${NANOFORMER:-$here/../../build/nanoformer}
data=${NF_DATA:-/work/shared/data}
"$nanoformer" train --config minimind2-small --set n_layers=16 --set max_seq_len=2048 \
  --data "$data/tinyshakespeare.txt" -t "$data/minimind2_tokenizer.json" -b 8 -T 256 --steps "$steps" \
  --lr 8e-4 --warmup 50 --precision bf16 --save-every 150 --out "$out"
last=$(ls "$out"/ckpt_*.safetensors | sort | tail -1)
"$nanoformer" quantize "$last" "$out/target-q8_0.gguf" --type q8_0 -t "$data/minimind2_tokenizer.json"
