#!/usr/bin/env bash
# Checks that every source of the library and the app compiles with clang (syntax and semantics,
# no code generation; the SIMD sources also to code for an AVX2 CPU), so that the library keeps building with Debian's clang 14, the compiler
# that brings libFuzzer (make fuzz). Run by ctest as clang_compiles_sources when clang++ exists.
#   scripts/check-clang.sh [clang++] [extra flags...]
# Exit status 77 (ctest: skipped) when that clang cannot compile an OpenMP program at all.
# CHECK_CLANG_JOBS sets how many files compile at once (default: all cores).
set -euo pipefail
cd "$(dirname "$0")/.."
CXX=${1:-clang++}
shift || true
flags=(-std=c++20 -fsyntax-only -fopenmp -Iinclude -Isrc -DNF_BLAS_LIBRARY='"libopenblas.so.0"' -DNANOFORMER_VERSION='"0.0.0"'
       -Wall -Wextra -Wpedantic -Wno-unused-parameter "$@")

if ! echo '#include <omp.h>
int main() { return omp_get_max_threads() > 0 ? 0 : 1; }' | "$CXX" -std=c++20 -fopenmp -fsyntax-only -x c++ - 2>/dev/null; then
  echo "check-clang: $CXX cannot compile OpenMP code (libomp-dev missing?); skipped"
  exit 77
fi

mapfile -t sources < <(find src apps -name '*.cpp' | sort)
# the MPI communicator compiles only where CMake found MPI (it passes -DNF_HAVE_MPI and mpi.h's folder)
if [[ " $* " != *" -DNF_HAVE_MPI "* ]]; then
  mapfile -t sources < <(printf '%s\n' "${sources[@]}" | grep -v '^src/dist/mpi_')
fi
jobs=${CHECK_CLANG_JOBS:-$(nproc)}
if printf '%s\0' "${sources[@]}" | xargs -0 -P "$jobs" -n 4 "$CXX" "${flags[@]}"; then
  echo "check-clang: ${#sources[@]} sources compile with $("$CXX" --version | head -1)"
else
  echo "check-clang: FAILED: the sources above do not compile with $CXX"
  exit 1
fi
# The SIMD kernels sit behind __AVX2__ (and AVX-512 target attributes inside it), which a build
# without -march leaves out; make fuzz builds them (NF_NATIVE). So those files compile once more
# as an AVX2 CPU's build sees them (a -march=native build on Zen 3), with code generation: an
# AVX-512 intrinsic inlined into a function without the kernels' target attribute (a lambda inside
# an NF_TARGET_AVX512_VNNI kernel does not take its target) fails only when code is generated.
mapfile -t simd < <(grep -l -e '__AVX2__' -e '__AVX512' "${sources[@]}")
simd_flags=("${flags[@]/-fsyntax-only/-O1}")
if printf '%s\0' "${simd[@]}" | xargs -0 -P "$jobs" -n 1 "$CXX" "${simd_flags[@]}" -mavx2 -mfma -mf16c -c -o /dev/null; then
  echo "check-clang: ${#simd[@]} of them compile to code with -mavx2 -mfma -mf16c too"
else
  echo "check-clang: FAILED: the sources above do not compile with $CXX -mavx2 -mfma -mf16c"
  exit 1
fi
