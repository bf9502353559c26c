# Sourced by the study scripts in tools/studies/: the binary, the data and its split, the
# character vocabulary, and reuse of runs already trained.
#   study_setup NAME [BUILD_DIR]   sets ROOT, NF, DATA, OUT (BUILD_DIR/studies/NAME, the working
#                                  directory from then on) and vocab; writes train.txt (the first
#                                  90% of DATA), val.txt (the rest) and chars.json
#   needs_training RUN STEPS       true unless RUN/ckpt_<STEPS>.safetensors exists (STUDY_RETRAIN=1: always)
# DATA is $STUDY_DATA or /work/shared/data/tinyshakespeare.txt (measuring only, never copied into
# the repository). Every study runs on one core: NANOFORMER_THREADS=1.

study_setup() {
  local name=$1
  ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  local build
  build="$(cd "${2:-$ROOT/build}" && pwd)"
  NF="$build/nanoformer"
  DATA="${STUDY_DATA:-/work/shared/data/tinyshakespeare.txt}"
  OUT="$build/studies/$name"
  export NANOFORMER_THREADS=1
  [[ -x "$NF" ]] || { echo "$name: $NF not built (make build)" >&2; exit 1; }
  [[ -f "$DATA" ]] || { echo "$name: data $DATA not found (set STUDY_DATA)" >&2; exit 1; }
  mkdir -p "$OUT" "$ROOT/docs/studies"
  cd "$OUT"
  local total split
  total=$(wc -c < "$DATA")
  split=$((total * 9 / 10))
  head -c "$split" "$DATA" > train.txt
  tail -c +"$((split + 1))" "$DATA" > val.txt
  "$NF" tokenizer train --char -i "$DATA" -o chars.json > /dev/null
  vocab=$("$NF" tokenizer info chars.json | sed -n 's/^vocabulary size: //p')
}

checkpoint_of() { echo "$1/ckpt_$(printf '%08d' "$2").safetensors"; }

needs_training() {
  [[ "${STUDY_RETRAIN:-0}" == 1 || ! -f "$(checkpoint_of "$1" "$2")" ]]
}

machine() { echo "$(nproc) CPUs, $(lscpu | sed -n 's/^Model name: *//p'), NANOFORMER_THREADS=1"; }
