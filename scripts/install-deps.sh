#!/usr/bin/env bash
# Installs the Debian packages nanoformer's build, tests and benchmarks need.
# Idempotent: packages already present are skipped, and apt is not touched when nothing is missing.
# Extra package names given as arguments are installed too (scripts/install-fuzz-deps.sh).
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  ccache                 # rebuilds of unchanged sources from its cache (used by the Makefile when present)
  libopenblas-dev        # cblas.h
  libopenblas0-openmp    # the CBLAS loaded at run time: OpenBLAS built on OpenMP, sharing our threads
  libdnnl-dev            # oneDNN: bf16 GEMMs on the CPU's bf16 instructions (autocast)
  libgtest-dev           # unit tests
  libbenchmark-dev       # make bench
  nlohmann-json3-dev     # JSON configs and safetensors headers
  libcli11-dev           # command-line parsing for apps/nanoformer
  libplplot-dev          # figures (src/util/plot_*.cpp) ...
  plplot-driver-cairo    # ... drawn as PNG (pngcairo) and SVG (svgcairo)
  fonts-noto-cjk         # CJK glyphs for token labels (found through fontconfig)
  libcpp-httplib-dev     # the HTTP server of nanoformer serve
  libxxhash-dev          # checksums of every tensor in our checkpoints
  libgmp-dev             # Python's integers of any size in nanochat's calculator tool
  libtcmalloc-minimal4   # the allocator of the nanoformer program and the benchmarks (NF_TCMALLOC)
  libopenmpi-dev         # data-parallel training across processes (NF_MPI) ...
  openmpi-bin            # ... started by mpirun
  python3-venv           # the Python package's tests (scripts/test-python.sh)
  iproute2               # ss: the server tests read a listening socket's backlog
  "$@"
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
