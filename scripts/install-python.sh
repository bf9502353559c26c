#!/usr/bin/env bash
# Creates .venv with the Python packages the golden-file and comparison scripts need
# (PyTorch, safetensors, numpy, Hugging Face tokenizers). Only needed to regenerate fixtures:
# `make test` reads the committed fixtures and needs no Python.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
want=(torch numpy safetensors tokenizers)
if ! .venv/bin/python -c "import torch, numpy, safetensors, tokenizers" 2>/dev/null; then
  .venv/bin/pip install -q "${want[@]}"
fi
