#!/usr/bin/env bash
# The draft model of docs/inference.md's draft-model measurement: gpt2-124m's first 2 layers (its
# embeddings, positions, final norm and tied head with them), then distilled from the whole model
# (`nanoformer train --objective distill`, KL only) on tinyshakespeare.
#   tools/speculative/make_gpt2_draft.sh TARGET.gguf OUT_FOLDER [STEPS]
# TARGET.gguf: gpt2-124m in f32 (the teacher); OUT_FOLDER gets gpt2-hf/ (the teacher as a Hugging
# Face folder), gpt2-2l-hf/ (the cut draft), kd/ (the distilled draft's checkpoints) and
# draft-q8_0.gguf (the last one in Q8_0). Data and tokenizer from $NF_DATA (default
# /work/shared/data: tinyshakespeare.txt, gpt2_tokenizer.json.gz). 90 steps of 512 tokens took
# about 9 minutes on 2 shared cores (docs/inference.md's run stopped at step 87).
set -euo pipefail
target=$1 out=$2 steps=${3:-90}
here=$(cd "$(dirname "$0")" && pwd)
nanoformer=${NANOFORMER:-$here/../../build/nanoformer}
data=${NF_DATA:-/work/shared/data}
mkdir -p "$out"
zcat "$data/gpt2_tokenizer.json.gz" > "$out/tokenizer.json"
"$nanoformer" convert "$target" "$out/gpt2-hf" --to hf
python3 "$here/truncate_hf_model.py" "$out/gpt2-hf" "$out/gpt2-2l-hf" 2
rm -rf "$out/kd"
"$nanoformer" train --objective distill --teacher "$out/gpt2-hf" --init-from "$out/gpt2-2l-hf" \
  --data "$data/tinyshakespeare.txt" -t "$out/tokenizer.json" -b 4 -T 128 --steps "$steps" --lr 1e-3 \
  --distill-alpha 0 --save-every 50 --out "$out/kd"
# the last checkpoint, quantised as the target is (Q8_0): the draft that bench_speculative --draft measured
last=$(ls "$out/kd"/ckpt_*.safetensors | sort | tail -1)
"$nanoformer" quantize "$last" "$out/draft-q8_0.gguf" --type q8_0 -t "$out/tokenizer.json"
