#!/usr/bin/env python3
"""Hugging Face BertModel fixtures for tests/formats/test_hf_bert.cpp, with `transformers` as the oracle.

    .venv/bin/python tools/golden/hf_bert_fixtures.py write tests/fixtures/hf
        builds small random BertModels (vocab 64, dim 32, 4 heads, 16 positions; unit-scale weights as
        hf_fixtures.py's randomise()) and saves each with save_pretrained into tests/fixtures/hf/<case>/, with
        tests/fixtures/hf/<case>.outputs.safetensors holding, for a batch of 2 whose second row is padded:
          ids, token_type_ids, attention_mask (2, T) int64 (mask 1 = real token, padded ids = pad_token_id 0),
          last_hidden_state (2, T, 32), pooler_output (2, 32) (with a pooler),
          short_ids, short_token_type_ids (1, R) and short_last_hidden_state (1, R, 32): the second row's R
          real tokens alone, without padding;
        and for the case `bert` also tests/fixtures/hf/bert.grads.safetensors: `weight` (2, T, 32) and
        `pooler_weight` (2, 32), fixed random tensors, and `grad.<HF name>` for every parameter: the gradient
        of loss = sum(last_hidden_state * weight) + sum(pooler_output * pooler_weight).
        Cases: bert (2 layers, intermediate 64, 2 token types, gelu, pooler) and bert_gelu_new (1 layer,
        intermediate 48, 3 token types, gelu_new, no pooler).
    .venv/bin/python tools/golden/hf_bert_fixtures.py check DIR
        for every DIR/<case>/ that nanoformer exported (NF_HF_EXPORT_DIR=DIR build/test_hf_bert writes the
        folders and our outputs as DIR/<case>.outputs.safetensors), loads it with transformers' BertModel
        and compares last_hidden_state (and pooler_output) with ours; exit status 1 above 1e-4.
"""
from __future__ import annotations

from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from transformers import BertConfig, BertModel

import hf_fixtures
from hf_fixtures import randomise

T = 10
REAL_IN_SECOND_ROW = 7
CASES = {
    "bert": lambda: BertModel(BertConfig(
        vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
        max_position_embeddings=16, type_vocab_size=2, hidden_act="gelu")),
    "bert_gelu_new": lambda: BertModel(BertConfig(
        vocab_size=64, hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=48,
        max_position_embeddings=16, type_vocab_size=3, hidden_act="gelu_new"), add_pooling_layer=False),
}


def inputs(type_vocab_size: int, gen: torch.Generator) -> dict[str, torch.Tensor]:
    """Two rows of T tokens; the second has REAL_IN_SECOND_ROW real tokens, then pad_token_id 0."""
    ids = torch.randint(1, 64, (2, T), generator=gen)
    mask = torch.ones(2, T, dtype=torch.long)
    mask[1, REAL_IN_SECOND_ROW:] = 0
    ids[1, REAL_IN_SECOND_ROW:] = 0
    types = torch.randint(0, type_vocab_size, (2, T), generator=gen)
    types[1, REAL_IN_SECOND_ROW:] = 0
    return {"ids": ids, "token_type_ids": types, "attention_mask": mask}


def run(model: BertModel, x: dict[str, torch.Tensor]):
    return model(input_ids=x["ids"], token_type_ids=x["token_type_ids"], attention_mask=x["attention_mask"])


def write(out_dir: Path) -> None:
    gen = torch.Generator().manual_seed(23)
    for case, build in CASES.items():
        torch.manual_seed(0)
        model = build().eval()
        randomise(model, gen)
        model.save_pretrained(out_dir / case)
        x = inputs(model.config.type_vocab_size, gen)
        out = run(model, x)
        short = {"ids": x["ids"][1:, :REAL_IN_SECOND_ROW], "token_type_ids": x["token_type_ids"][1:, :REAL_IN_SECOND_ROW]}
        with torch.no_grad():
            short_out = model(input_ids=short["ids"], token_type_ids=short["token_type_ids"]).last_hidden_state
        tensors = {**x, "last_hidden_state": out.last_hidden_state.detach(), "short_ids": short["ids"],
                   "short_token_type_ids": short["token_type_ids"], "short_last_hidden_state": short_out}
        if out.pooler_output is not None:
            tensors["pooler_output"] = out.pooler_output.detach()
        save_file({k: v.contiguous().clone() for k, v in tensors.items()}, str(out_dir / f"{case}.outputs.safetensors"))
        if case == "bert":
            weight = torch.randn(out.last_hidden_state.shape, generator=gen)
            pooler_weight = torch.randn(out.pooler_output.shape, generator=gen)
            loss = (out.last_hidden_state * weight).sum() + (out.pooler_output * pooler_weight).sum()
            loss.backward()
            grads = {f"grad.{name}": p.grad.contiguous() for name, p in model.named_parameters()}
            save_file({"weight": weight, "pooler_weight": pooler_weight, **grads}, str(out_dir / f"{case}.grads.safetensors"))
        size = sum(f.stat().st_size for f in (out_dir / case).iterdir())
        print(f"{case}: {size} bytes, |last_hidden_state| max {out.last_hidden_state.abs().max():.3f}")


def check(folder: Path) -> int:
    worst = 0.0
    for ours in sorted(folder.glob("*.outputs.safetensors")):
        case = ours.name.removesuffix(".outputs.safetensors")
        expected = load_file(str(ours))
        pooled = "pooler_output" in expected
        model = BertModel.from_pretrained(folder / case, add_pooling_layer=pooled).eval()
        with torch.no_grad():
            out = run(model, expected)
        err = (out.last_hidden_state - expected["last_hidden_state"]).abs().max().item()
        if pooled:
            err = max(err, (out.pooler_output - expected["pooler_output"]).abs().max().item())
        worst = max(worst, err)
        print(f"{case}: {type(model).__name__} loads our export; max abs difference {err:.3g}")
    return 0 if worst <= 1e-4 else 1


if __name__ == "__main__":
    raise SystemExit(hf_fixtures.run(__doc__, write, check))
