#!/usr/bin/env bash
# The tool-use pipeline (docs/post-training.md, "Tools in training: a worked result"):
#   make tool-use-pipeline          (or: bash tools/post_training/tool_pipeline.sh [BUILD_DIR])
# Word problems whose numbers are too large for a small model's head (tools/post_training/tool_problems.py:
# products of 2-3 and 2 digit numbers, sums of 3-4 digit ones) train a tiny LLaMA-shaped model with the
# nanoformer CLI alone: SFT on demonstrations that call nanochat's calculator
# (<|python_start|>347*58<|python_end|><|output_start|>20126<|output_end|> #### 20126), then GRPO whose
# rollouts call it (--tools calculator: its answers forced, out of the loss), once per seed. After each
# stage `nanoformer eval` scores the held-out problems by exact match, with the calculator answering
# (--tools calculator) and without it (the model writes the result itself). One core.
# Outputs: BUILD_DIR/tool-use/ (data, tokenizer, runs, eval reports, results.md, results.json) and the
# chart docs/images/tool-use-pipeline.png (`nanoformer eval --combine`).
# TOOL_SYNTAX=hermes (make tool-use-pipeline TOOL_SYNTAX=hermes): the same problems with a
# chat-template model's Hermes <tool_call>s instead (tool_problems.py --syntax hermes: a compact
# ChatML whose system turn lists the tools offered; SFT, 1000 steps, on conversations that call the
# calculator and get its answer as a tool message), GRPO's rollouts calling it
# through the template for up to 2 tool turns with MiniMind's call reward, eval through the template
# with the tools offered and without them; outputs in BUILD_DIR/tool-use-hermes/ and
# docs/images/tool-use-pipeline-hermes.png.
# Settings (environment): PIPELINE_SEEDS ("1 2 3"), SFT_STEPS, GRPO_STEPS, GRPO_LR, GRPO_GROUP,
# GRPO_TEMPERATURE. A stage whose final checkpoint exists from the same arguments is reused.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="$(cd "${1:-$ROOT/build}" && pwd)"
NF="$BUILD/nanoformer"
SYNTAX="${TOOL_SYNTAX:-nanochat}"
[[ $SYNTAX == nanochat || $SYNTAX == hermes ]] || { echo "tool pipeline: TOOL_SYNTAX=$SYNTAX: nanochat or hermes" >&2; exit 1; }
SUFFIX=$([[ $SYNTAX == hermes ]] && echo "-hermes" || true)
OUT="${PIPELINE_OUT:-$BUILD/tool-use$SUFFIX}"
CHART="docs/images/tool-use-pipeline$SUFFIX.png"
PYTHON="${PIPELINE_PYTHON:-python3}"  # only the standard library
SEEDS="${PIPELINE_SEEDS:-1 2 3}"
SFT_STEPS="${SFT_STEPS:-$([[ ${TOOL_SYNTAX:-nanochat} == hermes ]] && echo 1000 || echo 400)}"
GRPO_STEPS="${GRPO_STEPS:-60}"
GRPO_LR="${GRPO_LR:-5e-5}"
GRPO_GROUP="${GRPO_GROUP:-8}"
GRPO_TEMPERATURE="${GRPO_TEMPERATURE:-0.7}"
if [[ $SYNTAX == hermes ]]; then
  MAX_NEW=64 CONTEXT=128 EOT='<|im_end|>'
  SPECIALS=(--special '<|endoftext|>' --special '<|im_start|>' --special '<|im_end|>' --special '<tool_call>' --special '</tool_call>')
  # GRPO: the calls through the template, MiniMind's call reward; eval: through the template, the tools offered or not
  GRPO_TOOLS=(--tools calculator --max-tool-turns 2 --call-reward 0.5)
  EVAL_WITH=(--chat-template auto --tools calculator) EVAL_WITHOUT=(--chat-template auto)
else
  MAX_NEW=40 CONTEXT=96 EOT='<|endoftext|>'
  SPECIALS=(--special "$EOT" --special '<|python_start|>' --special '<|python_end|>' --special '<|output_start|>' --special '<|output_end|>')
  GRPO_TOOLS=(--tools calculator)
  EVAL_WITH=(--tools calculator) EVAL_WITHOUT=()
fi
export NANOFORMER_THREADS=1 OMP_NUM_THREADS=1
[[ -x "$NF" ]] || { echo "tool pipeline: $NF not built (make build)" >&2; exit 1; }
mkdir -p "$OUT" "$ROOT/docs/images"
OUT="$(cd "$OUT" && pwd)"
cd "$OUT"
start=$SECONDS

"$PYTHON" "$ROOT/tools/post_training/tool_problems.py" data --seed 1 --train 3000 --test 200 --syntax "$SYNTAX"
# the same held-out problems under two names, so that the chart has a line for each way of scoring
cp data/test.jsonl data/held_out_with_calculator.jsonl
cp data/test.jsonl data/held_out_without_tool.jsonl
# a byte-level BPE of 384 tokens trained on the text without its digits (every number one digit per
# token), nanochat's tool tokens special; the chat template beside it
mkdir -p tokenizer
sed 's/[0-9]//g' data/corpus.txt > tokenizer/corpus_no_digits.txt
echo "0123456789+-*=#" >> tokenizer/corpus_no_digits.txt
"$NF" tokenizer train -i tokenizer/corpus_no_digits.txt --vocab-size 384 "${SPECIALS[@]}" \
  --pattern gpt4 -o tokenizer/tokenizer.json -q
cp data/tokenizer_config.json tokenizer/
TOK=tokenizer/tokenizer.json
cat > model.json <<JSON
{"name": "tool-problems", "vocab_size": 384, "dim": 128, "n_layers": 4, "n_heads": 4, "max_seq_len": $CONTEXT,
 "norm": "rmsnorm", "position": "rope", "mlp": "swiglu", "mlp_hidden": 384, "attention_bias": false,
 "mlp_bias": false, "tie_embeddings": true, "dropout": 0.0}
JSON

source "$ROOT/tools/post_training/stages.sh"  # ckpt, stage
# evaluate MODEL SEED STAGE: exact match on the held-out problems with the calculator and without it
evaluate() {
  "$NF" eval "$1" -t "$TOK" --task data/held_out_with_calculator.jsonl --layout gsm8k --max-new-tokens $MAX_NEW \
    --stop "$EOT" "${EVAL_WITH[@]}" --label "$3" --json "reports/$2_$3_with.json" -q | tail -1
  "$NF" eval "$1" -t "$TOK" --task data/held_out_without_tool.jsonl --layout gsm8k --max-new-tokens $MAX_NEW \
    --stop "$EOT" "${EVAL_WITHOUT[@]}" --label "$3" --json "reports/$2_$3_without.json" -q | tail -1
}
mkdir -p reports
for seed in $SEEDS; do
  run="seed$seed"
  echo "== seed $seed: SFT, $SFT_STEPS steps"
  stage "$run/sft" "$SFT_STEPS" --config model.json --data data/sft.jsonl -t "$TOK" --context $((CONTEXT - 32)) --batch-size 32 \
    --lr 3e-3 --warmup 40 --eval-every 100 --eval-batches 4 --seed "$seed" --data-seed "$seed"
  evaluate "$(ckpt "$run/sft" "$SFT_STEPS")" "$seed" sft
  echo "== seed $seed: GRPO with the calculator, $GRPO_STEPS steps, lr $GRPO_LR, $GRPO_GROUP completions at temperature $GRPO_TEMPERATURE"
  stage "$run/grpo" "$GRPO_STEPS" --objective grpo "${GRPO_TOOLS[@]}" --init-from "$(ckpt "$run/sft" "$SFT_STEPS")" \
    --data data/grpo.jsonl -t "$TOK" --context $CONTEXT --batch-size 8 --grpo-group "$GRPO_GROUP" --max-new-tokens $MAX_NEW \
    --stop "$EOT" --temperature "$GRPO_TEMPERATURE" --lr "$GRPO_LR" --schedule constant --warmup 0 --seed "$seed" \
    --data-seed "$seed"
  evaluate "$(ckpt "$run/grpo" "$GRPO_STEPS")" "$seed" grpo
done

settings="SFT $SFT_STEPS steps; GRPO $GRPO_STEPS (lr $GRPO_LR, batch 8 x $GRPO_GROUP completions, temperature \
$GRPO_TEMPERATURE, ${GRPO_TOOLS[*]}); $SYNTAX syntax; $(nproc --all) CPUs, $(lscpu | sed -n 's/^Model name: *//p'), \
NANOFORMER_THREADS=1; this invocation $((SECONDS - start)) s"
"$PYTHON" "$ROOT/tools/post_training/tool_pipeline_report.py" reports --seeds $SEEDS --settings "$settings" \
  --table results.md --json results.json
reports=()
for stage in sft grpo; do
  for seed in $SEEDS; do reports+=("reports/${seed}_${stage}_with.json" "reports/${seed}_${stage}_without.json"); done
done
"$NF" eval --combine "${reports[@]}" --plot "$ROOT/$CHART" \
  --title "tool use ($SYNTAX calls): held-out exact match (dots: seeds $SEEDS)" > combined.md
echo "tool pipeline: table in $OUT/results.md, chart $CHART"
