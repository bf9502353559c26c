#!/usr/bin/env python3
"""Turns a nanochat checkpoint's model_<step>.pt into model_<step>.safetensors beside it, which
nanoformer reads together with the meta_<step>.json already there:

    .venv/bin/python tools/nanochat_pt_to_safetensors.py ~/.cache/nanochat/base_checkpoints/d20/model_021400.pt

The state dict is written as is (nanochat's names: transformer.wte.weight, transformer.h.N.attn.c_q.weight,
mlp.c_fc.weight, lm_head.weight), in float32, with torch.compile's "_orig_mod." prefix removed.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import torch
from safetensors.torch import save_file


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pt", type=Path, help="model_<step>.pt")
    args = parser.parse_args()
    state = torch.load(args.pt, map_location="cpu", weights_only=True)
    tensors = {k.removeprefix("_orig_mod."): v.float().contiguous() for k, v in state.items()}
    out = args.pt.with_suffix(".safetensors")
    save_file(tensors, str(out))
    meta = args.pt.parent / args.pt.name.replace("model_", "meta_").replace(".pt", ".json")
    print(f"{out}: {len(tensors)} tensors" + ("" if meta.exists() else f" (warning: {meta.name} not found beside it)"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
