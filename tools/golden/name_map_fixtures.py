#!/usr/bin/env python3
"""MiniMind2 (002) and nanochat (003) checkpoint fixtures for tests/formats/test_name_map_formats.cpp:

    .venv/bin/python tools/golden/name_map_fixtures.py tests/golden/models.safetensors tests/fixtures

The models are those of fixtures_models.py (written from the documents: MiniMind2 dense and MoE,
nanochat, dim 16, 2 layers, vocab 32), whose parameters and logits tests/golden/models.safetensors
holds under nanoformer's names. This script renames the parameters as each implementation's
state_dict() names them and writes the folder that implementation's checkpoint would be:
  minimind/dense, minimind/moe   config.json (002's LMConfig fields, model_type "minimind") and
                                 model.safetensors (layers.N.attention.wq, feed_forward.w1, gate,
                                 experts.E, shared_experts (one FeedForward, as MiniMind's model.py at
                                 04b56ea names it); the dense one, like 002's state_dict,
                                 also holds the tied output.weight and the causal-mask buffers)
  nanochat                       meta_000000.json (model_config) and model_000000.safetensors
                                 (transformer.wte, transformer.h.N.attn.c_q, mlp.c_fc, lm_head)
and <folder>.logits.safetensors with the reference's `ids` (2, 8) and `logits` (2, 8, 32).
"""
from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from fixtures_models import BASE, EXPERT_HIDDEN, LAYERS, MOE, T

MINIMIND_NAMES = [  # (ours, MiniMind's) as regular expressions over one layer's names
    (r"layers\.(\d+)\.attn_norm\.", r"layers.\1.attention_norm."),
    (r"layers\.(\d+)\.attn\.([qkvo])_proj\.", r"layers.\1.attention.w\2."),
    (r"layers\.(\d+)\.mlp_norm\.", r"layers.\1.ffn_norm."),
    (r"layers\.(\d+)\.mlp\.", r"layers.\1.feed_forward."),
    # 04b56ea's MOEFeedForward: one shared FeedForward (feed_forward.shared_experts.w1), not a list
    (r"feed_forward\.shared_experts\.0\.", "feed_forward.shared_experts."),
]
NANOCHAT_NAMES = [
    (r"^tok_embeddings\.", "transformer.wte."),
    (r"^output\.", "lm_head."),
    (r"layers\.(\d+)\.attn\.([qkv])_proj\.", r"transformer.h.\1.attn.c_\2."),
    (r"layers\.(\d+)\.attn\.o_proj\.", r"transformer.h.\1.attn.c_proj."),
    (r"layers\.(\d+)\.mlp\.", r"transformer.h.\1.mlp."),
]


def renamed(golden: dict, case: str, rules) -> dict:
    out = {}
    for key, t in golden.items():
        if not key.startswith(case + "."):
            continue
        name = key[len(case) + 1:]
        if name in ("ids", "targets", "out", "grad_out", "logits", "token_loss", "aux_loss") or name.startswith("grad_"):
            continue
        for pattern, replacement in rules:
            name = re.sub(pattern, replacement, name)
        out[name] = t.contiguous()
    return out


def minimind_config(moe: bool) -> dict:
    config = {"model_type": "minimind", "dim": BASE["dim"], "n_layers": LAYERS, "n_heads": BASE["n_heads"],
              "n_kv_heads": 2, "vocab_size": BASE["vocab_size"], "hidden_dim": EXPERT_HIDDEN if moe else None,
              "multiple_of": 8, "norm_eps": 1e-5, "max_seq_len": T, "rope_theta": 1e6, "dropout": 0.0,
              "flash_attn": True, "use_moe": moe}
    if moe:
        config.update(num_experts_per_tok=MOE["top_k"], n_routed_experts=MOE["n_experts"],
                      n_shared_experts=MOE["n_shared_experts"], scoring_func="softmax",
                      aux_loss_alpha=MOE["aux_loss_alpha"], seq_aux=MOE["seq_aux"], norm_topk_prob=MOE["norm_topk_prob"])
    return config


def write_logits(golden: dict, case: str, path: Path) -> None:
    save_file({"ids": golden[f"{case}.ids"].contiguous(), "logits": golden[f"{case}.logits"].contiguous()}, str(path))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("golden", type=Path)
    parser.add_argument("out_dir", type=Path)
    args = parser.parse_args()
    golden = load_file(str(args.golden))
    for case, folder, moe in (("minimind", "dense", False), ("minimind_moe", "moe", True)):
        out = args.out_dir / "minimind" / folder
        out.mkdir(parents=True, exist_ok=True)
        tensors = renamed(golden, case, MINIMIND_NAMES)
        if not moe:  # 002's state_dict: the tied head under its own name and the persistent mask buffers
            tensors["output.weight"] = tensors["tok_embeddings.weight"].clone()
            for layer in range(LAYERS):
                tensors[f"layers.{layer}.attention.mask"] = torch.full((1, 1, T, T), float("-inf")).triu(1)
        save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
        (out / "config.json").write_text(json.dumps(minimind_config(moe), indent=2) + "\n")
        write_logits(golden, case, args.out_dir / "minimind" / f"{folder}.logits.safetensors")
    out = args.out_dir / "nanochat" / "d2"
    out.mkdir(parents=True, exist_ok=True)
    save_file(renamed(golden, "nanochat", NANOCHAT_NAMES), str(out / "model_000000.safetensors"))
    meta = {"step": 0, "model_config": {"sequence_len": T, "vocab_size": BASE["vocab_size"], "n_layer": LAYERS,
                                        "n_head": BASE["n_heads"], "n_kv_head": 2, "n_embd": BASE["dim"]}}
    (out / "meta_000000.json").write_text(json.dumps(meta, indent=2) + "\n")
    write_logits(golden, "nanochat", args.out_dir / "nanochat" / "d2.logits.safetensors")
    for path in sorted(args.out_dir.glob("minimind/**/*")) + sorted(args.out_dir.glob("nanochat/**/*")):
        if path.is_file():
            print(path, path.stat().st_size)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
