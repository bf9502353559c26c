#!/usr/bin/env bash
# Builds llama.cpp, through llama-cpp-python's PyPI sdist, into a venv of its own: the oracle of
# tools/llamacpp/*.py (its speed is measured by its own llama-bench: tools/peers/). Idempotent: a venv that already has the pinned version
# built is left alone. Never run by CI or `make test` (the build compiles llama.cpp: 10-30 minutes
# on 2 cores). CPU only, tuned for this machine (-march=native), OpenMP threads as llama.cpp ships.
#   LLAMACPP_VENV   where the venv goes (default: <repo>/.venv-llamacpp)
#   LLAMACPP_JOBS   parallel compile jobs (default: 2)
#   LLAMACPP_CMAKE  extra CMake options, after the defaults: a build for another CPU, e.g.
#                   "-DGGML_NATIVE=OFF -DGGML_AVX512=ON -DGGML_AVX512_VNNI=ON ..." (run elsewhere)
set -euo pipefail
cd "$(dirname "$0")/../.."
venv="${LLAMACPP_VENV:-$PWD/.venv-llamacpp}"
version="0.3.36"
# llama-cpp-python's own dependencies beside numpy and gguf, from wheels
want=(numpy "gguf==0.19.0" typing-extensions diskcache jinja2)

if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
py="$venv/bin/python"
if ! "$py" -c "import numpy, gguf, typing_extensions, diskcache, jinja2" 2>/dev/null; then
  "$py" -m pip install -q "${want[@]}"
fi
if [ "$("$py" -c 'import llama_cpp; print(llama_cpp.__version__)' 2>/dev/null)" = "$version" ]; then
  echo "llama-cpp-python $version already in $venv"
  exit 0
fi
# GGML_NATIVE: -march=native (AVX2/FMA/F16C here, AVX-512/VNNI where the CPU has them).
# LLAVA_BUILD=OFF skips the multimodal library, which nothing here loads (llama_cpp imports it lazily).
export CMAKE_ARGS="-DGGML_NATIVE=ON -DGGML_OPENMP=ON -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF -DGGML_BLAS=OFF -DLLAVA_BUILD=OFF -DCMAKE_BUILD_TYPE=Release ${LLAMACPP_CMAKE:-}"
export CMAKE_BUILD_PARALLEL_LEVEL="${LLAMACPP_JOBS:-2}"
export FORCE_CMAKE=1
"$py" -m pip install --no-cache-dir --no-binary llama-cpp-python --force-reinstall --no-deps -v \
  "llama-cpp-python==$version"
[ -n "${LLAMACPP_CMAKE:-}" ] && exit 0  # built for another CPU: it may not load here
"$py" -c "import llama_cpp; print('llama-cpp-python', llama_cpp.__version__, 'in', '$venv'); print(llama_cpp.llama_print_system_info().decode())"
