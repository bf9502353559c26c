#!/usr/bin/env bash
# nanoGPT's CPU "baby" run on TinyShakespeare at character level (4 layers, 4 heads, dim 128,
# context 64, batch 12, 2000 steps, AdamW lr 1e-3 warmup 100 then cosine to 1e-4, betas (0.9,
# 0.99), weight decay 0.1, clip 1.0, LayerNorm and Linears without bias, exact GELU, learned
# positions, tied head, no dropout), first with `nanoformer train`, then with the same run in
# PyTorch (tools/bench/shakespeare_char.py), one after the other on the same threads; prints a
# table of the final validation loss (all 1715 validation windows), wall time, CPU time and tokens/s.
#   tools/bench/shakespeare_baby.sh DATA [THREADS]        (DATA: TinyShakespeare's input.txt)
# Environment: BUILD (build directory, default build), PYTHON (default .venv/bin/python, else
# python3), OUT (run directory, default a fresh temporary one), STEPS (default 2000).
set -euo pipefail
data=${1:?usage: tools/bench/shakespeare_baby.sh DATA [THREADS]}
threads=${2:-2}
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$root/build}
python=${PYTHON:-$root/.venv/bin/python}
[ -x "$python" ] || python=python3
steps=${STEPS:-2000}
out=${OUT:-$(mktemp -d -t nanoformer-baby.XXXXXX)}
mkdir -p "$out"

[ -f "$build/CMakeCache.txt" ] || cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$threads" --target nanoformer_cli >/dev/null
nanoformer=$build/nanoformer

# Runs a command, appending "wall user+sys" seconds to $out/times.
timed() {
  local start end
  start=$(date +%s.%N)
  /usr/bin/time -f "%U %S" -o "$out/cpu" "$@"
  end=$(date +%s.%N)
  echo "$(echo "$end - $start" | bc) $(awk '{print $1 + $2}' "$out/cpu")" >>"$out/times"
}

: >"$out/times"
"$nanoformer" tokenizer train --char -q -i "$data" -o "$out/chars.json"
vocab=$("$python" -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["code_points"]))' "$out/chars.json")

echo "== nanoformer ($threads threads) =="
rm -rf "$out/nanoformer"
NANOFORMER_THREADS=$threads timed "$nanoformer" train --config gpt-mini \
  --set vocab_size="$vocab" --set dim=128 --set n_layers=4 --set n_heads=4 --set max_seq_len=64 \
  --set norm_bias=false --set attention_bias=false --set mlp_bias=false --set mlp=gelu --set dropout=0 \
  --data "$data" --tokenizer "$out/chars.json" --context 64 --batch-size 12 --steps "$steps" \
  --optimizer adamw --lr 1e-3 --min-lr 1e-4 --warmup 100 --schedule warmup_cosine --beta1 0.9 --beta2 0.99 \
  --weight-decay 0.1 --grad-clip 1.0 --eval-every 250 --eval-batches 143 --out "$out/nanoformer" --quiet \
  | tee "$out/nanoformer.log"
ours_val=$(grep '"val_loss"' "$out/nanoformer/metrics.jsonl" | tail -1 | "$python" -c 'import json, sys; print("%.4f" % json.loads(sys.stdin.read())["val_loss"])')

echo "== PyTorch ($threads threads) =="
timed "$python" "$root/tools/bench/shakespeare_char.py" "$data" --threads "$threads" --steps "$steps" \
  | tee "$out/pytorch.log"
torch_val=$(tail -1 "$out/pytorch.log" | "$python" -c 'import json, sys; print("%.4f" % json.loads(sys.stdin.read())["val_loss"])')

tokens=$((steps * 12 * 64))
echo
echo "TinyShakespeare char, $steps steps x 12 x 64 tokens, $threads threads; $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| run | final val loss | wall s | CPU s (user + sys) | tokens/s (wall) |"
echo "| --- | ---: | ---: | ---: | ---: |"
paste -d' ' <(printf '%s\n' nanoformer PyTorch) <(printf '%s\n' "$ours_val" "$torch_val") "$out/times" |
  while read -r name val wall cpu; do
    printf '| %s | %s | %.1f | %.1f | %.0f |\n' "$name" "$val" "$wall" "$cpu" "$(echo "$tokens / $wall" | bc -l)"
  done
echo "(wall and tokens/s include the validation passes; run directory: $out)"
