#!/usr/bin/env bash
# The norm-placement study (docs/studies/norm-placement.md), rerun with one command:
#   make study-norms                     (or: bash tools/studies/norm_placement.sh [BUILD_DIR])
# Four deep, thin character-level models identical but for where the norm sits (post, pre,
# sandwich, DeepNorm; nn/block.h) are trained with `nanoformer train` on the first 90% of
# tinyshakespeare: 16 layers of width 64, a peak learning rate of 3e-3 reached with no warmup and
# no gradient clipping, the setting in which post-norm is known to struggle. DeepNorm uses
# DeepNet's initialisation (init "deepnet", its beta), the others GPT-2's normal(0, 0.02); same
# data order, steps and seed. One core (NANOFORMER_THREADS=1): about 6 minutes on an idle core,
# 11 on this shared 2-core machine with other work running.
# A trained model is reused when its final checkpoint exists (STUDY_RETRAIN=1 retrains).
# Outputs: BUILD_DIR/studies/norm-placement/ (runs, results.md), the chart
# docs/studies/norm-placement.png (training and validation loss of the four runs) and
# docs/studies/norm-placement-outputs.png (004's histograms of post- against pre-norm block outputs).
set -euo pipefail

source "$(dirname "$0")/common.sh"
STEPS="${STUDY_STEPS:-600}"
LAYERS="${STUDY_LAYERS:-16}"
LR="${STUDY_LR:-3e-3}"
study_setup norm-placement "${1:-}"

start=$SECONDS
placements=(post pre sandwich deepnorm)
for placement in "${placements[@]}"; do
  init=normal
  [[ $placement == deepnorm ]] && init=deepnet
  cat > "$placement.json" <<JSON
{"name": "norms-$placement", "vocab_size": $vocab, "dim": 64, "n_layers": $LAYERS, "n_heads": 4,
 "max_seq_len": 64, "norm": "layernorm", "norm_placement": "$placement", "position": "rope",
 "mlp": "gelu_tanh", "dropout": 0.0, "init": "$init"}
JSON
  if ! needs_training "$placement" "$STEPS"; then
    echo "== $placement: reusing $(checkpoint_of "$placement" "$STEPS")"
    continue
  fi
  rm -rf "$placement"
  echo "== $placement: $LAYERS layers, $STEPS steps, lr $LR without warmup or clipping, init $init"
  "$NF" train --config "$placement.json" --data train.txt --val-data val.txt -t chars.json --context 64 \
    --batch-size 16 --steps "$STEPS" --lr "$LR" --warmup 0 --grad-clip 0 --eval-every 50 --eval-batches 8 \
    --save-every 0 --keep 1 --seed 1337 --data-seed 1337 --out "$placement" | tee "$placement.log"
done

metrics=()
for placement in "${placements[@]}"; do metrics+=("$placement/metrics.jsonl"); done
"$NF" plot "${metrics[@]}" --names "$(IFS=,; echo "${placements[*]}")" --out "$ROOT/docs/studies/norm-placement.png" \
  --title "$LAYERS layers of width 64, lr $LR, no warmup, no clipping" > plot.txt

# 004's comparison: the block outputs of the trained post-norm and pre-norm models on the same
# held-out text (nanoformer viz --compare), one histogram panel per layer
"$NF" viz "$(checkpoint_of post "$STEPS")" --compare "$(checkpoint_of pre "$STEPS")" --tokenizer chars.json \
  --text "$(head -c 64 val.txt)" --layer 0 --head 0 --out viz_post_pre > viz.txt
cp viz_post_pre/compare.png "$ROOT/docs/studies/norm-placement-outputs.png"

{
  echo "| placement | init | loss at step $STEPS | final val loss | best val loss | diverged | stalled | seconds |"
  echo "| --- | --- | ---: | ---: | ---: | --- | --- | ---: |"
  for placement in "${placements[@]}"; do
    init=normal
    [[ $placement == deepnorm ]] && init=deepnet
    last=$(sed -n "s/^$placement: .*last loss \([^,]*\).*/\1/p" plot.txt)
    val=$(sed -n "s/^$placement: .*last validation loss \(.*\)$/\1/p" plot.txt)
    best=$(sed -n 's/.*best val loss \([^ ]*\).*/\1/p' "$placement.log")
    seconds=$(sed -n 's/.* steps in \([0-9.]*\) s.*/\1/p' "$placement.log")
    # diverged: a non-finite loss, or a final loss no better than the uniform guess ln(vocab)
    first=$(sed -n 's/^{"step":50,"val_loss":\([^,]*\),.*/\1/p' "$placement/metrics.jsonl")
    # diverged: a non-finite loss, or a final loss no better than the uniform guess ln(vocab);
    # stalled: the best validation loss less than 10% below the first one (step 50)
    diverged=$(awk -v l="$last" -v v="$vocab" 'BEGIN { print (l == "" || l ~ /nan|inf/ || l + 0 >= log(v)) ? "yes" : "no" }')
    stalled=$(awk -v b="$best" -v f="$first" 'BEGIN { print (b ~ /nan|inf/ || b + 0 > 0.9 * f) ? "yes" : "no" }')
    printf '| %s | %s | %.4f | %.4f | %.4f | %s | %s | %s |\n' "$placement" "$init" "${last:-nan}" "${val:-nan}" \
      "${best:-nan}" "$diverged" "$stalled" "$seconds"
  done
  echo
  echo "Conditions: $(machine);"
  echo "models: dim 64, $LAYERS layers, 4 heads, LayerNorm, RoPE, GELU MLP, tied head, vocab $vocab (characters);"
  echo "training: $STEPS steps x 16 x 64 tokens of $(basename "$DATA") (first 90%), AdamW, cosine from lr $LR at"
  echo "step 1 (no warmup) to lr/10, no gradient clipping, seed 1337; validation: 8 batches of the last 10%"
  echo "every 50 steps; this invocation $((SECONDS - start)) s (runs already trained are reused)."
} | tee results.md
echo "norm-placement: table in $OUT/results.md, chart docs/studies/norm-placement.png"
