#!/usr/bin/env bash
# llama-cpp-python's JSON-schema-to-grammar converter, without building llama.cpp: downloads the
# pinned sdist with pip (network, once) and extracts llama_cpp/llama_grammar.py (its SchemaConverter,
# which llama-cpp-python's server uses for response_format json_schema) into .cache/llamacpp/, with
# ORIGIN naming the sdist and the llama.cpp commit it vendors. tools/grammar/jsonschemabench.py runs it
# beside MaskBench's copy of llama.cpp's own examples/json_schema_to_grammar.py (llama.cpp 66c2c93).
# Why not llama.cpp's file of this sdist: the vendored llama.cpp (0c1e570) no longer ships
# examples/json_schema_to_grammar.py, only the C++ converter common/json-schema-to-grammar.cpp,
# which needs llama.cpp's common library built. Also models/ggml-vocab-qwen2.gguf, Qwen2's vocabulary,
# for bench_schema_masks. Idempotent.
#   LLAMACPP_CACHE  where the file goes (default: <repo>/.cache/llamacpp)
set -euo pipefail
cd "$(dirname "$0")/../.."
version="0.3.36"
cache="${LLAMACPP_CACHE:-$PWD/.cache/llamacpp}"
out="$cache/llama_grammar.py"
if [ -f "$out" ] && [ -f "$cache/ggml-vocab-qwen2.gguf" ] && grep -q "llama-cpp-python $version" "$cache/ORIGIN" 2>/dev/null; then
  cat "$cache/ORIGIN"
  exit 0
fi
mkdir -p "$cache"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# only llama-cpp-python as an sdist (its build dependencies, for the metadata, from wheels); no build
python3 -m pip download -q --no-deps --no-binary llama-cpp-python "llama-cpp-python==$version" -d "$tmp"
sdist="$tmp/llama_cpp_python-$version.tar.gz"
root="llama_cpp_python-$version"
tar -xzf "$sdist" -C "$tmp" "$root/llama_cpp/llama_grammar.py" "$root/.git/modules/vendor/llama.cpp/HEAD" \
  "$root/vendor/llama.cpp/models/ggml-vocab-qwen2.gguf"
cp "$tmp/$root/llama_cpp/llama_grammar.py" "$out"
# Qwen2's vocabulary (151936 ids; llama.cpp's tokenizer test file), for bench_schema_masks' large vocabulary
cp "$tmp/$root/vendor/llama.cpp/models/ggml-vocab-qwen2.gguf" "$cache/"
commit=$(cat "$tmp/$root/.git/modules/vendor/llama.cpp/HEAD")
echo "llama-cpp-python $version sdist (sha256 $(sha256sum "$sdist" | cut -c1-16)...) llama_cpp/llama_grammar.py; it vendors llama.cpp $commit" > "$cache/ORIGIN"
cat "$cache/ORIGIN"
