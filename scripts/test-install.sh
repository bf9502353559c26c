#!/usr/bin/env bash
# What a program that uses nanoformer sees: installs the build into an empty prefix, copies the
# examples into an empty folder, and builds them there with nothing but that prefix, through the
# CMake package (find_package) and through pkg-config; then runs them, and the installed program
# from another folder (its presets found under share/). Run by ctest as install_builds_the_examples.
#   scripts/test-install.sh BUILD_DIR
set -euo pipefail
source_dir=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
model=$source_dir/tests/fixtures/gguf_model/llama.gguf  # a tiny GGUF with its tokenizer

cmake --install "$build" --prefix "$prefix" > /dev/null
echo "install-test: installed to $prefix:"
(cd "$prefix" && find . -type f -o -type l | grep -v '^./include/nanoformer/.*/' | sort | sed 's/^/  /')

cp -r "$source_dir/examples" "$work/examples"
cmake -S "$work/examples" -B "$work/examples-build" -DCMAKE_PREFIX_PATH="$prefix" > "$work/configure.log" \
  || { cat "$work/configure.log"; exit 1; }
cmake --build "$work/examples-build" -j 2 > "$work/build.log" || { cat "$work/build.log"; exit 1; }
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
cc -std=c11 -Wall -Wextra -Werror "$work/examples/c/generate.c" $(pkg-config --cflags --libs nanoformer) \
   -o "$work/generate-pkg-config"
echo "install-test: ldd of the shared library and of the C example:"
ldd "$prefix/lib/libnanoformer.so" | sed 's/^/  /'
ldd "$work/examples-build/generate" | sed 's/^/  /'

out=$("$work/examples-build/generate" "$model" "Hello" 8)
echo "$out" | sed 's/^/  generate: /'
grep -q "^\[nanoformer .*: .* prompt tokens, 8 generated" <<< "$out"
out=$(LD_LIBRARY_PATH=$prefix/lib "$work/generate-pkg-config" "$model" "Hello" 8)
grep -q "8 generated" <<< "$out"
out=$("$work/examples-build/chat_embed" "$model" "Hi")
echo "$out" | sed 's/^/  chat_embed: /'
grep -q "cosine similarity" <<< "$out"
# the installed program finds its presets wherever it runs
(cd "$work" && "$prefix/bin/nanoformer" inspect minimind2-small > /dev/null)
echo "install-test: the examples built and ran against $prefix alone"
