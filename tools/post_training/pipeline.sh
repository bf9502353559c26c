#!/usr/bin/env bash
# The post-training pipeline on data the project generates (docs/post-training.md, "A worked pipeline"):
#   make post-training-pipeline          (or: bash tools/post_training/pipeline.sh [BUILD_DIR])
# Multi-step arithmetic word problems (tools/post_training/word_problems.py) train a tiny LLaMA-shaped
# model with the nanoformer CLI alone: pretrain (stories and sums) -> SFT (question, worked answer)
# -> DPO (the right answer over one with a wrong step) -> GRPO (sampled answers, numeric verifier),
# once per seed (about 20 minutes for 3 seeds on one core). After each stage `nanoformer eval` scores the model on held-out problems: exact
# match of the greedy answer (GSM8K layout) and the share of held-out preference pairs whose right
# answer gets the higher log-likelihood (mc layout). One core (NANOFORMER_THREADS=1).
# Outputs: BUILD_DIR/post-training/ (data, tokenizer, runs, eval reports, results.md, results.json),
# the table in results.md (tools/post_training/pipeline_report.py, Python's standard library) and the
# chart docs/images/post-training-pipeline.png (`nanoformer eval --combine` of the reports: a line
# per score through the seeds' mean at each stage, a dot per seed).
# Settings (environment): PIPELINE_SEEDS ("1 2 3"), PRETRAIN_STEPS, SFT_STEPS, DPO_STEPS, DPO_LR,
# DPO_BETA, GRPO_STEPS, GRPO_LR, GRPO_GROUP, GRPO_TEMPERATURE. A stage whose final checkpoint exists
# from the same arguments is reused (PIPELINE_RETRAIN=1 retrains everything).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="$(cd "${1:-$ROOT/build}" && pwd)"
NF="$BUILD/nanoformer"
OUT="${PIPELINE_OUT:-$BUILD/post-training}"  # PIPELINE_OUT: another folder (runs side by side)
PYTHON="${PIPELINE_PYTHON:-python3}"  # only the standard library
SEEDS="${PIPELINE_SEEDS:-1 2 3}"
PRETRAIN_STEPS="${PRETRAIN_STEPS:-300}"
SFT_STEPS="${SFT_STEPS:-200}"
DPO_STEPS="${DPO_STEPS:-200}"
DPO_LR="${DPO_LR:-1e-5}"
DPO_BETA="${DPO_BETA:-0.5}"
GRPO_STEPS="${GRPO_STEPS:-200}"
GRPO_LR="${GRPO_LR:-5e-5}"
GRPO_GROUP="${GRPO_GROUP:-16}"
GRPO_TEMPERATURE="${GRPO_TEMPERATURE:-0.7}"
MAX_NEW=40
EOT='<|endoftext|>'
export NANOFORMER_THREADS=1 OMP_NUM_THREADS=1
[[ -x "$NF" ]] || { echo "pipeline: $NF not built (make build)" >&2; exit 1; }
mkdir -p "$OUT" "$ROOT/docs/images"
OUT="$(cd "$OUT" && pwd)"
cd "$OUT"
start=$SECONDS

"$PYTHON" "$ROOT/tools/post_training/word_problems.py" data --seed 1 --train 3000 --test 200
# a byte-level BPE of 384 tokens trained on the text without its digits, so that every number is
# spelled one digit per token; the chat template beside it (tokenizer_config.json)
mkdir -p tokenizer
sed 's/[0-9]//g' data/corpus.txt > tokenizer/corpus_no_digits.txt
echo "0123456789+-=#" >> tokenizer/corpus_no_digits.txt
"$NF" tokenizer train -i tokenizer/corpus_no_digits.txt --vocab-size 384 --special "$EOT" --pattern gpt4 \
  -o tokenizer/tokenizer.json -q
cp data/tokenizer_config.json tokenizer/
TOK=tokenizer/tokenizer.json
cat > model.json <<JSON
{"name": "word-problems", "vocab_size": 384, "dim": 96, "n_layers": 4, "n_heads": 4, "max_seq_len": 96,
 "norm": "rmsnorm", "position": "rope", "mlp": "swiglu", "mlp_hidden": 256, "attention_bias": false,
 "mlp_bias": false, "tie_embeddings": true, "dropout": 0.0}
JSON

source "$ROOT/tools/post_training/stages.sh"  # ckpt, stage
# evaluate MODEL SEED STAGE: exact match on the held-out problems, preference accuracy on the held-out pairs
evaluate() {
  "$NF" eval "$1" -t "$TOK" --task data/test.jsonl --layout gsm8k --max-new-tokens $MAX_NEW --stop "$EOT" \
    --label "$3" --json "reports/$2_$3_exact.json" -q | tail -1
  "$NF" eval "$1" -t "$TOK" --task data/preference.jsonl --layout mc --label "$3" \
    --json "reports/$2_$3_preference.json" -q | tail -1
}
mkdir -p reports
for seed in $SEEDS; do
  run="seed$seed"
  echo "== seed $seed: pretrain, $PRETRAIN_STEPS steps"
  stage "$run/pretrain" "$PRETRAIN_STEPS" --config model.json --data data/pretrain.jsonl -t "$TOK" --context 64 \
    --batch-size 32 --lr 3e-3 --warmup 30 --eval-every 100 --eval-batches 4 --seed "$seed" --data-seed "$seed"
  evaluate "$(ckpt "$run/pretrain" "$PRETRAIN_STEPS")" "$seed" pretrain
  echo "== seed $seed: SFT, $SFT_STEPS steps"
  stage "$run/sft" "$SFT_STEPS" --init-from "$(ckpt "$run/pretrain" "$PRETRAIN_STEPS")" --data data/sft.jsonl \
    -t "$TOK" --context 64 --batch-size 32 --lr 2e-3 --warmup 20 --eval-every 100 --eval-batches 4 --seed "$seed" \
    --data-seed "$seed"
  evaluate "$(ckpt "$run/sft" "$SFT_STEPS")" "$seed" sft
  echo "== seed $seed: DPO, $DPO_STEPS steps, lr $DPO_LR, beta $DPO_BETA"
  stage "$run/dpo" "$DPO_STEPS" --objective dpo --init-from "$(ckpt "$run/sft" "$SFT_STEPS")" --data data/dpo.jsonl \
    -t "$TOK" --context 64 --batch-size 8 --lr "$DPO_LR" --dpo-beta "$DPO_BETA" --schedule constant --warmup 0 \
    --eval-every 50 --eval-batches 4 --seed "$seed" --data-seed "$seed"
  evaluate "$(ckpt "$run/dpo" "$DPO_STEPS")" "$seed" dpo
  echo "== seed $seed: GRPO, $GRPO_STEPS steps, lr $GRPO_LR, $GRPO_GROUP completions at temperature $GRPO_TEMPERATURE"
  stage "$run/grpo" "$GRPO_STEPS" --objective grpo --init-from "$(ckpt "$run/dpo" "$DPO_STEPS")" \
    --data data/grpo.jsonl -t "$TOK" --context 96 --batch-size 8 --grpo-group "$GRPO_GROUP" --max-new-tokens $MAX_NEW \
    --stop "$EOT" --temperature "$GRPO_TEMPERATURE" --lr "$GRPO_LR" --schedule constant --warmup 0 --seed "$seed" \
    --data-seed "$seed"
  evaluate "$(ckpt "$run/grpo" "$GRPO_STEPS")" "$seed" grpo
done

settings="pretrain $PRETRAIN_STEPS steps; SFT $SFT_STEPS; DPO $DPO_STEPS (lr $DPO_LR, beta $DPO_BETA); GRPO $GRPO_STEPS \
(lr $GRPO_LR, batch 8 x $GRPO_GROUP completions, temperature $GRPO_TEMPERATURE); $(nproc --all) CPUs, \
$(lscpu | sed -n 's/^Model name: *//p'), NANOFORMER_THREADS=1; this invocation $((SECONDS - start)) s"
"$PYTHON" "$ROOT/tools/post_training/pipeline_report.py" reports --seeds $SEEDS --settings "$settings" \
  --table results.md --json results.json
reports=()
for stage in pretrain sft dpo grpo; do
  for seed in $SEEDS; do reports+=("reports/${seed}_${stage}_exact.json" "reports/${seed}_${stage}_preference.json"); done
done
"$NF" eval --combine "${reports[@]}" --plot "$ROOT/docs/images/post-training-pipeline.png" \
  --title "word problems: held-out scores after each stage (dots: seeds $SEEDS)" > combined.md
echo "pipeline: table in $OUT/results.md, chart docs/images/post-training-pipeline.png"
