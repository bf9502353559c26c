#!/usr/bin/env bash
# Runs the libFuzzer targets built by `make fuzz` (docs/FUZZING.md), each for FUZZ_SECONDS
# (default 60), and fails when any of them reports a finding.
#   scripts/run-fuzz.sh <fuzz build dir> [target...]        (default: every target)
# For each target: the committed regression corpus fuzz/corpus/<target>/ and the generated seeds
# are loaded (and so replayed) first; new inputs go to <build>/fuzz-corpus/<target>/ (kept between
# runs), crashing inputs to <build>/fuzz-artifacts/<target>/, the log to <build>/fuzz-logs/.
# A finding: a sanitizer report, an exception other than nf::Error, a failed oracle check, an
# input running over 10 s or allocating over 2 GB (-timeout, -rss_limit_mb, -malloc_limit_mb).
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:?usage: run-fuzz.sh <fuzz build dir> [target...]}
shift
SECONDS_PER_TARGET=${FUZZ_SECONDS:-60}
ALL_TARGETS=(safetensors gguf gguf_model tokenizer_json wordpiece bpe_roundtrip char_vocab token_file load_tokenizer model_config llama2c
             checkpoint folder_config shard_index openai_request metrics_log torch_checkpoint grammar regex chat_template
             sentence_transformers nanochat_calculator tool_call sft_data)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${ALL_TARGETS[@]}")

# The largest input libFuzzer makes for each target (the tokenizer.json fixtures are 27 KB).
max_len() {
  case $1 in
    tokenizer_json|load_tokenizer) echo 32768 ;;
    checkpoint) echo 32768 ;;  # the seed checkpoints are 6.8-7.4 KB, the training checkpoint 27 KB
    gguf_model) echo 32768 ;;  # the seed models are 4.6-21 KB
    torch_checkpoint) echo 8192 ;;  # the seed files are 1.6-4.8 KB
    chat_template) echo 8192 ;;  # the published templates are 0.4-4.6 KB
    *) echo 4096 ;;
  esac
}

LIMITS=(-timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048)
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export NANOFORMER_THREADS=1

# Fresh seeds for this run (its own folder, so that two runs can fuzz different targets at once).
seeds=$(mktemp -d "${TMPDIR:-/tmp}/nf-fuzz-seeds.XXXXXX")
trap 'rm -rf "$seeds"' EXIT
"$BUILD/fuzz/fuzz_make_seeds" "$seeds" || { echo "run-fuzz: fuzz_make_seeds failed"; exit 1; }
mkdir -p "$BUILD/fuzz-logs"

failed=()
summary=()
for t in "${targets[@]}"; do
  bin=$BUILD/fuzz/fuzz_$t
  [ -x "$bin" ] || { echo "run-fuzz: no fuzz target $t ($bin)"; exit 2; }
  corpus=$BUILD/fuzz-corpus/$t
  artifacts=$BUILD/fuzz-artifacts/$t
  log=$BUILD/fuzz-logs/$t.log
  mkdir -p "$corpus" "$artifacts" "$seeds/$t"
  dict=()
  [ -f "fuzz/dict/$t.dict" ] && dict=(-dict="fuzz/dict/$t.dict")
  echo "run-fuzz: $t for ${SECONDS_PER_TARGET}s (log $log)"
  "$bin" "$corpus" "fuzz/corpus/$t" "$seeds/$t" -max_total_time="$SECONDS_PER_TARGET" -max_len="$(max_len "$t")" \
    "${LIMITS[@]}" "${dict[@]}" -artifact_prefix="$artifacts/" -print_final_stats=1 > "$log" 2>&1 &
  pid=$!
  wait $pid
  rc=$?
  rm -f "/dev/shm/nf_fuzz_$pid" "${TMPDIR:-/tmp}/nf_fuzz_$pid"  # the scratch file, if the target crashed
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$')
  last=$(grep -E '^#[0-9]+' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' <<< "$last" | grep -o '[0-9]*')
  ft=$(grep -o 'ft: [0-9]*' <<< "$last" | grep -o '[0-9]*')
  line=$(printf '%-15s %s  execs %-10s cov %-6s ft %-6s' "$t" "$([ $rc -eq 0 ] && echo ok || echo FINDING)" \
         "${execs:-?}" "${cov:-?}" "${ft:-?}")
  summary+=("$line")
  echo "run-fuzz: $line"
  if [ $rc -ne 0 ]; then
    failed+=("$t")
    grep -E 'ERROR|finding|runtime error|Test unit written|SUMMARY' "$log" | head -20 || tail -n 20 "$log"
  fi
done

echo "run-fuzz: summary (${SECONDS_PER_TARGET}s per target)"
printf '  %s\n' "${summary[@]}"
if [ ${#failed[@]} -ne 0 ]; then
  echo "run-fuzz: FINDINGS in ${failed[*]}: see $BUILD/fuzz-logs/ and $BUILD/fuzz-artifacts/"
  exit 1
fi
