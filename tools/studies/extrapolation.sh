#!/usr/bin/env bash
# The length-extrapolation study (docs/studies/extrapolation.md), rerun with one command:
#   make study-extrapolation            (or: bash tools/studies/extrapolation.sh [BUILD_DIR])
# Five small character-level models identical but for their positional scheme (sinusoidal,
# learned, RoPE, ALiBi, T5 bias) are trained with `nanoformer train` on the first 90% of
# tinyshakespeare at context 128, same data order, steps and seed; each is evaluated with
# `nanoformer eval` on the last 10% at 1x, 2x, 4x and 8x that context (learned positions at 1x
# only: their table has 128 rows), RoPE also with linear interpolation, NTK scaling and YaRN applied at
# evaluation time (--rope-factor auto). nanochat's initialisation gives token embeddings unit scale,
# the scale of the sinusoidal table added to them (with GPT-2's 0.02 the table drowns the tokens and
# the sinusoidal model barely trains in this budget). One core (NANOFORMER_THREADS=1): about 11
# minutes on an idle core, 22 on this shared 2-core machine with other work running.
# A trained model is reused when its final checkpoint exists (STUDY_RETRAIN=1 retrains).
# Outputs: BUILD_DIR/studies/extrapolation/ (runs, JSON, results.md) and the chart
# docs/studies/extrapolation.png.
set -euo pipefail

source "$(dirname "$0")/common.sh"
STEPS="${STUDY_STEPS:-500}"
CONTEXT=128
CONTEXTS="128,256,512,1024"
EVAL_TOKENS="${STUDY_EVAL_TOKENS:-32768}"
study_setup extrapolation "${1:-}"

start=$SECONDS
train_seconds=()
for position in sinusoidal learned rope alibi t5_bias; do
  run="run_$position"
  if ! needs_training "$run" "$STEPS"; then
    echo "== $position: reusing $(checkpoint_of "$run" "$STEPS")"
  else
    rm -rf "$run"
    cat > "$position.json" <<JSON
{"name": "extrapolation-$position", "vocab_size": $vocab, "dim": 128, "n_layers": 4, "n_heads": 4,
 "max_seq_len": $CONTEXT, "norm": "layernorm", "norm_placement": "pre", "position": "$position",
 "mlp": "gelu_tanh", "dropout": 0.0, "init": "nanochat", "tie_embeddings": false}
JSON
    echo "== $position: training $STEPS steps at context $CONTEXT"
    "$NF" train --config "$position.json" --data train.txt --val-data val.txt -t chars.json --context $CONTEXT \
      --batch-size 16 --steps "$STEPS" --lr 2e-3 --warmup 50 --eval-every 100 --eval-batches 8 --save-every 0 \
      --keep 1 --seed 1337 --data-seed 1337 --out "$run" | tee "$run.log"
  fi
  train_seconds+=("$position $(sed -n 's/.* steps in \([0-9.]*\) s.*/\1/p' "$run.log" 2>/dev/null || true)")
done

evaluate() {  # label model extra-flags...
  local label=$1 model=$2
  shift 2
  echo "== eval $label"
  "$NF" eval "$model" --data val.txt -t chars.json --max-tokens "$EVAL_TOKENS" --label "$label" \
    --json "eval_$label.json" "$@"
}
ckpt() { checkpoint_of "run_$1" "$STEPS"; }
evaluate sinusoidal "$(ckpt sinusoidal)" --context "$CONTEXTS"
evaluate learned "$(ckpt learned)" --context "$CONTEXT"
evaluate rope "$(ckpt rope)" --context "$CONTEXTS"
evaluate rope+linear "$(ckpt rope)" --context "$CONTEXTS" --rope-scaling linear --rope-factor auto
evaluate rope+ntk "$(ckpt rope)" --context "$CONTEXTS" --rope-scaling ntk --rope-factor auto
evaluate rope+yarn "$(ckpt rope)" --context "$CONTEXTS" --rope-scaling yarn --rope-factor auto
evaluate alibi "$(ckpt alibi)" --context "$CONTEXTS"
evaluate t5_bias "$(ckpt t5_bias)" --context "$CONTEXTS"

{
  echo "Perplexity on the held-out 10% of $(basename "$DATA") ($EVAL_TOKENS targets per context):"
  echo
  "$NF" eval --combine eval_sinusoidal.json eval_learned.json eval_rope.json eval_rope+linear.json \
    eval_rope+ntk.json eval_rope+yarn.json eval_alibi.json eval_t5_bias.json --plot "$ROOT/docs/studies/extrapolation.png" \
    --title "Perplexity past the training context ($CONTEXT)"
  echo
  echo "Conditions: $(machine);"
  echo "models: dim 128, 4 layers, 4 heads, LayerNorm pre-norm, GELU MLP, untied head, nanochat init (unit-scale"
  echo "embeddings), vocab $vocab (characters);"
  echo "training: $STEPS steps x 16 x $CONTEXT tokens, AdamW lr 2e-3 warmup 50 cosine, seed 1337;"
  echo "training seconds: ${train_seconds[*]}; this invocation $((SECONDS - start)) s (runs already trained are reused)."
} | tee results.md
echo "extrapolation: table in $OUT/results.md, chart docs/studies/extrapolation.png"
