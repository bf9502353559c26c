#!/usr/bin/env bash
# ik_llama.cpp (github.com/ikawrakow/ik_llama.cpp, the CPU-speed fork of llama.cpp with its IQK
# kernels and load-time repacking, -rtr), built from a git mirror at a named commit: llama-bench,
# llama-server, llama-quantize. The second speed peer of bench_inference --peers; never run by CI
# or `make test` (20-40 minutes on 2 cores). Idempotent: a build whose ORIGIN names the commit is
# left alone. The mirror comes from the development tools' `fetch github:ikawrakow/ik_llama.cpp`
# (or any clone: IK_LLAMA_GIT).
#   IK_LLAMA_GIT     the git directory (default: /work/.mirror/ikawrakow+ik_llama.cpp/repo)
#   IK_LLAMA_COMMIT  the commit (default: 8337e4cd3, 2026-08-15)
#   PEERS_DIR        where it goes (default: <repo>/.cache/peers); programs in $PEERS_DIR/ik_llama/bin
#   PEERS_JOBS       parallel compile jobs (default: 2)
#   PEERS_CMAKE      extra CMake options after the defaults
set -euo pipefail
cd "$(dirname "$0")/../.."
git_dir="${IK_LLAMA_GIT:-/work/.mirror/ikawrakow+ik_llama.cpp/repo}"
commit=$(git --git-dir="$git_dir" rev-parse --verify "${IK_LLAMA_COMMIT:-8337e4cd3}^{commit}")
dir="${PEERS_DIR:-$PWD/.cache/peers}/ik_llama"
if [ -x "$dir/bin/llama-bench" ] && grep -q "ik_llama.cpp $commit" "$dir/ORIGIN" 2>/dev/null; then
  cat "$dir/ORIGIN"
  exit 0
fi
rm -rf "$dir/src" "$dir/build"
mkdir -p "$dir/src"
# A snapshot mirror may lack its largest blobs (the server's web UI pages, tokenizer test
# vocabularies): those files are left empty, named in ORIGIN; nothing benchmarked reads them.
missing=$(git --git-dir="$git_dir" ls-tree -r "$commit" | awk '$2 == "blob" {print $3 " " $4}' |
  git --git-dir="$git_dir" cat-file --batch-check='%(objectname) %(objecttype) %(rest)' 2>/dev/null | awk '$2 == "missing" {print $1}' || true)
excludes=() empty=()
for object in $missing; do
  path=$(git --git-dir="$git_dir" ls-tree -r "$commit" | awk -v o="$object" '$3 == o {print $4}')
  excludes+=(":(exclude)$path")
  empty+=("$path")
  mkdir -p "$dir/src/$(dirname "$path")" && : > "$dir/src/$path"
done
git --git-dir="$git_dir" archive "$commit" -- . "${excludes[@]}" | tar -x -C "$dir/src"
# -march=native, and the AVX-512 switches its docs/build.md lists where the CPU has them (with
# GGML_NATIVE they add nothing the compiler does not already enable, but its CMake keys some
# sources on them)
flags=()
grep -qw avx512f /proc/cpuinfo && flags+=(-DGGML_AVX512=ON)
grep -qw avx512_vnni /proc/cpuinfo && flags+=(-DGGML_AVX512_VNNI=ON)
grep -qw avx512vbmi /proc/cpuinfo && flags+=(-DGGML_AVX512_VBMI=ON)
grep -qw avx512_bf16 /proc/cpuinfo && flags+=(-DGGML_AVX512_BF16=ON)
cmake -S "$dir/src" -B "$dir/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF \
  -DGGML_OPENMP=ON -DGGML_CUDA=OFF -DGGML_BLAS=OFF -DLLAMA_BUILD_TESTS=OFF -DBUILD_SHARED_LIBS=ON \
  "${flags[@]}" ${PEERS_CMAKE:-}
cmake --build "$dir/build" -j "${PEERS_JOBS:-2}" --target llama-bench llama-server llama-quantize
ln -sfn build/bin "$dir/bin"
echo "ik_llama.cpp $commit, GGML_NATIVE ${flags[*]}${PEERS_CMAKE:+ $PEERS_CMAKE}${empty:+; empty (absent from the mirror): ${empty[*]}}" > "$dir/ORIGIN"
"$dir/bin/llama-bench" --help >/dev/null
cat "$dir/ORIGIN"
