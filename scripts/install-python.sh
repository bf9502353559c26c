#!/usr/bin/env bash
# Creates .venv with the Python packages the golden-file and comparison scripts need
# (PyTorch, safetensors, numpy, Hugging Face tokenizers, unicodedata2 for the Unicode 16
# tables of tools/tokenizer/gen_unicode_tables.py, and gguf, whose gguf.quants is the oracle of
# tools/quant/make_quant_fixtures.py; pinned, as its reference defines the fixtures' bytes). Only needed to regenerate fixtures:
# `make test` reads the committed fixtures and needs no Python.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
# openai and websocket-client: the serving scripts of tools/serve/ (the official client; Chromium's DevTools)
# gguf: llama.cpp's reference GGUF writer and quantisers, for the fixtures of tools/gguf/ and tools/quant/
want=(torch numpy safetensors tokenizers "unicodedata2==16.0.0" openai websocket-client "gguf==0.19.0")
if ! .venv/bin/python -c "import torch, numpy, safetensors, tokenizers, unicodedata2, openai, websocket, gguf" 2>/dev/null; then
  .venv/bin/pip install -q "${want[@]}"
fi
