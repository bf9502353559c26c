# What the post-training pipelines share (sourced by pipeline.sh and tool_pipeline.sh; they set NF,
# the nanoformer program): a stage's final checkpoint, and a training stage that reruns only when
# its arguments or inputs changed.
# ckpt DIR STEPS: the path of DIR's checkpoint at STEPS
ckpt() { echo "$1/ckpt_$(printf '%08d' "$2").safetensors"; }
# stage DIR STEPS ARGS...: `nanoformer train ARGS --out DIR`, unless DIR holds its final checkpoint
# from the same ARGS and the same --data and --init-from contents (DIR/args), so a rerun with other
# GRPO settings retrains GRPO alone (PIPELINE_RETRAIN=1: everything)
stage() {
  local dir=$1 steps=$2
  shift 2
  local stamp="$*" prev=""
  for arg in "$@"; do
    [[ $prev == --data || $prev == --init-from ]] && stamp+=" $(md5sum < "$arg")"
    prev=$arg
  done
  if [[ "${PIPELINE_RETRAIN:-0}" != 1 && -f "$(ckpt "$dir" "$steps")" && "$(cat "$dir/args" 2>/dev/null)" == "$stamp" ]]; then
    echo "   reusing $(ckpt "$dir" "$steps")"
    return
  fi
  rm -rf "$dir"
  mkdir -p "$(dirname "$dir")"
  "$NF" train "$@" --steps "$steps" --save-every 0 --keep 1 --out "$dir" --quiet > "$dir.log" 2>&1 || { cat "$dir.log" >&2; exit 1; }
  grep -E "^step [0-9]+: val|^finished" "$dir.log" | tail -2 || true
  echo "$stamp" > "$dir/args"
}
