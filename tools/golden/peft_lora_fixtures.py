#!/usr/bin/env python3
"""LoRA on a whole model with Hugging Face PEFT as the oracle, for tests/models/test_lora_model.cpp.

    .venv/bin/python tools/golden/peft_lora_fixtures.py write tests/fixtures/hf
        (needs `peft`: .venv/bin/pip install peft) loads the tiny LlamaForCausalLM of
        tests/fixtures/hf/llama_gqa (written by hf_fixtures.py), wraps it with
        peft.get_peft_model(LoraConfig(r=4, lora_alpha=8, every attention and MLP projection)), draws
        random adapters (B is zero at PEFT's initialisation; a trained-looking B makes every number
        non-trivial) and writes tests/fixtures/hf/llama_gqa_lora.safetensors:
          lora.<name>    every adapter tensor under nanoformer's name (PEFT's
                         base_model.model.model.layers.N.self_attn.q_proj.lora_A.weight ->
                         layers.N.attn.q_proj.lora_A.weight; mlp gate_proj / up_proj / down_proj ->
                         mlp.w1 / w3 / w2)
          ids, targets   the ids of llama_gqa.logits.safetensors and the shifted targets
          logits, loss   the adapted model's logits and causal LM loss (eval mode)
          grad.<name>    d loss / d adapter tensor, under nanoformer's name (the base gets none)
          merged.<name>  merge_and_unload()'s weights of layer 0's q_proj and down_proj, and
          merged_logits  the merged model's logits
        with the LoRA options in the metadata ("options": rank, alpha, targets as nanoformer names).
Re-running gives the same file for the same torch and peft versions.
"""
from __future__ import annotations

import json
from pathlib import Path

import peft
import torch
from safetensors.torch import load_file, save_file
from transformers import LlamaForCausalLM

from hf_fixtures import run

RANK, ALPHA = 4, 8.0
PEFT_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
OUR_TARGETS = ["q", "k", "v", "o", "gate", "up", "down"]
MLP_NAMES = {"gate_proj": "w1", "up_proj": "w3", "down_proj": "w2"}


def ours(peft_name: str) -> str:
    """PEFT's parameter name (with or without the adapter name "default") -> nanoformer's."""
    name = peft_name.removeprefix("base_model.model.").removeprefix("model.").replace(".default.", ".")
    name = name.replace(".self_attn.", ".attn.")
    for theirs, mine in MLP_NAMES.items():
        name = name.replace(f".mlp.{theirs}.", f".mlp.{mine}.")
    return name


def write(out_dir: Path) -> None:
    base_dir = out_dir / "llama_gqa"
    model = LlamaForCausalLM.from_pretrained(base_dir).eval()
    config = peft.LoraConfig(r=RANK, lora_alpha=ALPHA, lora_dropout=0.0, target_modules=PEFT_TARGETS)
    model = peft.get_peft_model(model, config).eval()
    gen = torch.Generator().manual_seed(21)
    adapters = {}
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_" in name:
                p.copy_(0.3 * torch.randn(p.shape, generator=gen))
                adapters[ours(name)] = p
    ids = load_file(str(out_dir / "llama_gqa.logits.safetensors"))["ids"]
    targets = torch.cat([ids[:, 1:], torch.full((ids.shape[0], 1), -100)], dim=1)
    out = model(input_ids=ids, labels=ids)
    out.loss.backward()
    tensors = {"ids": ids, "targets": targets, "logits": out.logits.detach(), "loss": out.loss.detach()}
    for name, p in adapters.items():
        tensors[f"lora.{name}"] = p.detach()
        tensors[f"grad.{name}"] = p.grad
    merged = model.merge_and_unload().eval()
    with torch.no_grad():
        tensors["merged_logits"] = merged(input_ids=ids).logits
    for layer in ("model.layers.0.self_attn.q_proj.weight", "model.layers.0.mlp.down_proj.weight"):
        tensors[f"merged.{ours(layer)}"] = merged.get_parameter(layer).detach()
    options = {"rank": RANK, "alpha": ALPHA, "targets": OUR_TARGETS, "peft_version": peft.__version__}
    path = out_dir / "llama_gqa_lora.safetensors"
    save_file({k: v.contiguous() for k, v in tensors.items()}, str(path), metadata={"options": json.dumps(options)})
    drift = (tensors["merged_logits"] - tensors["logits"]).abs().max().item()
    print(f"{path}: {path.stat().st_size} bytes, {len(adapters)} adapter tensors, loss {out.loss.item():.4f}, "
          f"PEFT merged vs adapted logits {drift:.3g}")


def check(_: Path) -> int:
    raise SystemExit("peft_lora_fixtures.py has no check mode")


if __name__ == "__main__":
    raise SystemExit(run(__doc__, write, check))
