#!/usr/bin/env bash
# A draft model for speculative decoding (docs/inference.md, "A draft model"): the target's first
# LAYERS layers (its embeddings, positions, final norm and tied head with them), then distilled from
# the whole target (`nanoformer train --objective distill`, KL only) on tinyshakespeare.
#   tools/speculative/make_draft.sh TARGET OUT_FOLDER [LAYERS] [STEPS]
# TARGET: the teacher in f32, any file `nanoformer convert` reads (an F32 GGUF, a checkpoint).
# OUT_FOLDER gets target-hf/ (the teacher as a Hugging Face folder), draft-hf/ (the cut draft),
# kd/ (the distilled draft's checkpoints) and draft-q8_0.gguf (the last one in Q8_0).
# LAYERS defaults to 2, STEPS to 90. From the environment: NF_DATA (default /work/shared/data:
# tinyshakespeare.txt and, without TOKENIZER, gpt2_tokenizer.json.gz), TOKENIZER (a tokenizer.json),
# BATCH (default 4) and CONTEXT (default 128) tokens a step.
# docs/inference.md's two runs:
#   gpt2-124m (random weights):   make_draft.sh gpt2-124m-F32.gguf OUT 2 90     (about 9 minutes)
#   the Shakespeare target of train_target.sh:
#     TOKENIZER=/work/shared/data/minimind2_tokenizer.json BATCH=8 CONTEXT=256 \
#       make_draft.sh TARGET/ckpt_00000900.safetensors OUT 1 300
set -euo pipefail
target=$1 out=$2 layers=${3:-2} steps=${4:-90}
here=$(cd "$(dirname "$0")" && pwd)
nanoformer=${NANOFORMER:-$here/../../build/nanoformer}
data=${NF_DATA:-/work/shared/data}
mkdir -p "$out"
if [ -n "${TOKENIZER:-}" ]; then cp "$TOKENIZER" "$out/tokenizer.json"; else zcat "$data/gpt2_tokenizer.json.gz" > "$out/tokenizer.json"; fi
rm -rf "$out/target-hf" "$out/draft-hf" "$out/kd"
"$nanoformer" convert "$target" "$out/target-hf" --to hf
python3 "$here/truncate_hf_model.py" "$out/target-hf" "$out/draft-hf" "$layers"
"$nanoformer" train --objective distill --teacher "$out/target-hf" --init-from "$out/draft-hf" \
  --data "$data/tinyshakespeare.txt" -t "$out/tokenizer.json" -b "${BATCH:-4}" -T "${CONTEXT:-128}" --steps "$steps" \
  --lr 1e-3 --distill-alpha 0 --save-every 50 --out "$out/kd"
# the last checkpoint, quantised as the target is (Q8_0): the draft that bench_speculative --draft measures
last=$(ls "$out/kd"/ckpt_*.safetensors | sort | tail -1)
"$nanoformer" quantize "$last" "$out/draft-q8_0.gguf" --type q8_0 -t "$out/tokenizer.json"
