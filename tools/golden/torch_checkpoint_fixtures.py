#!/usr/bin/env python3
"""Writes tests/golden/torch_checkpoint/: small files as torch.save writes them, and the tensors
they hold as safetensors, for tests/io/test_torch_checkpoint.cpp (nanoformer's reader of PyTorch
checkpoints, src/io/torch_checkpoint.cpp). Re-runnable; needs torch and safetensors:

    .venv/bin/python tools/golden/torch_checkpoint_fixtures.py

  state.pt            an OrderedDict state dict (as nn.Module.state_dict()) with every dtype read,
                      a transposed (non-contiguous) tensor, a slice at an offset into a storage
                      another tensor shares, a 0-d tensor, an empty one, an nn.Parameter
  state_protocol4.pt  the same with pickle protocol 4 (FRAME, MEMOIZE, STACK_GLOBAL, ...)
  halves.pth          a plain dict of f16 tensors, as MiniMind saves its weights
  expected.safetensors  each tensor of state.pt, contiguous (halves.pth: "halves." + name)
  legacy.pt           torch.save(..., _use_new_zipfile_serialization=False): refused by name
  nested.pt           {"model": state dict, "step": 3}: refused, naming the entry
  short_storage.pt    state.pt with one storage member cut short: refused before allocating
and tests/fixtures/nanochat/d2_pt/: the d2 fixture's weights (tests/fixtures/nanochat/d2) as
nanochat's torch.save writes them, model_000000.pt, an OrderedDict whose names carry
torch.compile's "_orig_mod." prefix, beside the same meta_000000.json; tests/fixtures/hf/gpt2_bin/
(the gpt2 fixture's config.json and its weights as transformers' older pytorch_model.bin) and
tests/fixtures/minimind_hf/dense_pth/ (config.json and the weights as MiniMind's own full_sft_512.pth).
"""
from __future__ import annotations

import collections
import io
import zipfile
from pathlib import Path

import shutil

import torch
from safetensors.torch import load_file, save_file

OUT = Path(__file__).resolve().parents[2] / "tests" / "golden" / "torch_checkpoint"


def state_dict() -> collections.OrderedDict:
    g = torch.Generator().manual_seed(0)
    base = torch.randn(4, 6, generator=g)
    shared = torch.arange(20, dtype=torch.float32)
    state = collections.OrderedDict()
    state["layer.weight"] = base
    state["layer.weight_t"] = base.t()                      # strides (1, 6)
    state["shared.full"] = shared
    state["shared.slice"] = shared[5:17].view(3, 4)         # offset 5 into the same storage
    state["every_other"] = torch.randn(8, 3, generator=g)[::2]  # stride 2 along dim 0
    state["bf16"] = torch.randn(3, 5, generator=g).to(torch.bfloat16)
    state["f16"] = torch.randn(7, generator=g).to(torch.float16)
    state["f64"] = torch.randn(2, 2, generator=g, dtype=torch.float64)
    state["i64"] = torch.tensor([[-3, 2**40], [7, -2**62]], dtype=torch.int64)
    state["i32"] = torch.tensor([1, -2, 3], dtype=torch.int32)
    state["mask"] = torch.tensor([True, False, True])
    state["scalar"] = torch.tensor(2.5)
    state["empty"] = torch.zeros(0, 3)
    state["param"] = torch.nn.Parameter(torch.randn(2, 3, generator=g))
    return state


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    state = state_dict()
    torch.save(state, OUT / "state.pt")
    torch.save(state, OUT / "state_protocol4.pt", pickle_protocol=4)
    halves = {"tok_embeddings.weight": torch.randn(5, 4).half(), "norm.weight": torch.ones(4).half()}
    torch.save(halves, OUT / "halves.pth")
    expected = {k: v.detach().contiguous().clone() for k, v in state.items()}
    expected.update({"halves." + k: v.contiguous().clone() for k, v in halves.items()})
    save_file(expected, str(OUT / "expected.safetensors"))
    torch.save({"w": torch.ones(2)}, OUT / "legacy.pt", _use_new_zipfile_serialization=False)
    torch.save({"model": {"w": torch.ones(2)}, "step": 3}, OUT / "nested.pt")
    # one storage member shorter than its tensor says, the archive otherwise well formed
    with zipfile.ZipFile(OUT / "state.pt") as src, zipfile.ZipFile(OUT / "short_storage.pt", "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename.endswith("/data/0"):
                data = data[: len(data) // 2]
            dst.writestr(info.filename, data)
    d2 = OUT.parents[1] / "fixtures" / "nanochat" / "d2"
    d2_pt = d2.parent / "d2_pt"
    d2_pt.mkdir(exist_ok=True)
    shutil.copy(d2 / "meta_000000.json", d2_pt / "meta_000000.json")
    weights = load_file(str(d2 / "model_000000.safetensors"))
    torch.save(collections.OrderedDict(("_orig_mod." + k, v) for k, v in weights.items()), d2_pt / "model_000000.pt")
    print(f"{d2_pt / 'model_000000.pt'}: {(d2_pt / 'model_000000.pt').stat().st_size} bytes")
    fixtures = OUT.parents[1] / "fixtures"
    for source, target, name in ((fixtures / "hf" / "gpt2", fixtures / "hf" / "gpt2_bin", "pytorch_model.bin"),
                                 (fixtures / "minimind_hf" / "dense", fixtures / "minimind_hf" / "dense_pth", "full_sft_512.pth")):
        target.mkdir(exist_ok=True)
        shutil.copy(source / "config.json", target / "config.json")
        torch.save(dict(load_file(str(source / "model.safetensors"))), target / name)
        print(f"{target / name}: {(target / name).stat().st_size} bytes")
    for f in sorted(OUT.iterdir()):
        print(f"{f.relative_to(OUT.parents[2])}: {f.stat().st_size} bytes")
    print("torch", torch.__version__)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
