#!/usr/bin/env bash
# Builds the benchmarks of an older commit beside this checkout, for `make bench BASELINE=<rev>`:
# a detached git worktree of <rev> in <dir>/src and its Release build in <dir>/build (the same
# flags as `make configure`, ccache where installed), then prints the build directory, which
# scripts/run-bench.sh measures beside this build in the same invocation. Reruns reuse both.
#   scripts/build-baseline.sh <rev> [dir (default build-baseline)]
set -euo pipefail
rev=${1:?usage: scripts/build-baseline.sh <rev> [dir]}
dir=$(realpath -m "${2:-build-baseline}")
sha=$(git rev-parse --verify "$rev^{commit}")
src="$dir/src"
if [ -d "$src" ]; then
  git -C "$src" checkout --quiet --detach "$sha"
else
  git worktree add --quiet --detach "$src" "$sha"
fi
launcher=()
if command -v ccache > /dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S "$src" -B "$dir/build" -DCMAKE_BUILD_TYPE=Release -DNF_NATIVE="${NATIVE:-ON}" "${launcher[@]}" > /dev/null
echo "building the benchmarks of $(git log -1 --format='%h %s' "$sha" | cut -c1-80) in $dir/build" >&2
cmake --build "$dir/build" -j "${JOBS:-$(nproc)}" --target bench_inference bench_training bench_batched_decode >&2
echo "$dir/build"
