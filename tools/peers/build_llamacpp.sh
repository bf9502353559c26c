#!/usr/bin/env bash
# Mainline llama.cpp's own programs, built from the llama.cpp that tools/llamacpp/install.sh
# compiles (the one vendored in the llama-cpp-python 0.3.36 sdist, commit in ORIGIN): llama-bench,
# llama-batched-bench, llama-server, llama-quantize, llama-perplexity, and libggml-base (the
# reference quantisers tools/quant/make_quant_fixtures.py calls). The speed peer of
# bench_inference --peers; never run by CI or `make test` (10-30 minutes on 2 cores). Idempotent: a
# build whose ORIGIN names this version is left alone.
#   PEERS_DIR     where it goes (default: <repo>/.cache/peers); programs in $PEERS_DIR/llamacpp/bin
#   PEERS_JOBS    parallel compile jobs (default: 2)
#   PEERS_CMAKE   extra CMake options after the defaults (a build for another CPU)
set -euo pipefail
cd "$(dirname "$0")/../.."
version="0.3.36"
dir="${PEERS_DIR:-$PWD/.cache/peers}/llamacpp"
if [ -x "$dir/bin/llama-bench" ] && grep -q "llama-cpp-python $version" "$dir/ORIGIN" 2>/dev/null; then
  cat "$dir/ORIGIN"
  exit 0
fi
mkdir -p "$dir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download -q --no-deps --no-binary llama-cpp-python "llama-cpp-python==$version" -d "$tmp"
sdist="$tmp/llama_cpp_python-$version.tar.gz"
root="llama_cpp_python-$version"
rm -rf "$dir/src" "$dir/build"
tar -xzf "$sdist" -C "$tmp" "$root/vendor/llama.cpp" "$root/.git/modules/vendor/llama.cpp/HEAD"
commit=$(cat "$tmp/$root/.git/modules/vendor/llama.cpp/HEAD")
mv "$tmp/$root/vendor/llama.cpp" "$dir/src"
# the same CPU options as install.sh: -march=native, OpenMP, no GPU, no BLAS; shared libraries
# (the programs find them by their build RPATH in $dir/build/bin)
cmake -S "$dir/src" -B "$dir/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DGGML_OPENMP=ON \
  -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF -DGGML_BLAS=OFF -DLLAMA_CURL=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON \
  -DBUILD_SHARED_LIBS=ON ${PEERS_CMAKE:-}
cmake --build "$dir/build" -j "${PEERS_JOBS:-2}" --target llama-bench llama-batched-bench llama-server \
  llama-quantize llama-perplexity
ln -sfn build/bin "$dir/bin"
echo "llama.cpp $commit from the llama-cpp-python $version sdist (sha256 $(sha256sum "$sdist" | cut -c1-16)...), GGML_NATIVE${PEERS_CMAKE:+ $PEERS_CMAKE}" > "$dir/ORIGIN"
"$dir/bin/llama-bench" --help >/dev/null
cat "$dir/ORIGIN"
