#!/usr/bin/env python3
"""Hugging Face fixtures for tests/formats/test_hf_checkpoint.cpp, with `transformers` as the oracle.

    .venv/bin/python tools/golden/hf_fixtures.py write tests/fixtures/hf
        builds small random GPT2LMHeadModel and LlamaForCausalLM models (vocab 64, dim 32, 2 layers),
        saves each with save_pretrained into tests/fixtures/hf/<case>/ and its logits for fixed ids into
        tests/fixtures/hf/<case>.logits.safetensors (`ids` (1, T) int64, `logits` (1, T, vocab) f32), and
        into tests/fixtures/hf/<case>.grads.safetensors the causal LM loss transformers computes,
        model(ids, labels=ids).loss (`loss`: mean cross-entropy of logits[:, t] vs ids[:, t + 1]; `targets`:
        ids shifted left with -100 last, which gives nanoformer's loss the same value), and
        `grad.<name>` = d loss / d parameter for every parameter by its transformers name (eval mode).
    .venv/bin/python tools/golden/hf_fixtures.py check DIR
        for every DIR/<case>/ folder that nanoformer exported (NF_HF_EXPORT_DIR=DIR build/test_hf_checkpoint;
        <case>_sharded/ are written in shards), loads it with transformers and compares its logits with
        ours in DIR/<case>.logits.safetensors.
"""
from __future__ import annotations

import argparse
import logging
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from transformers import AutoModelForCausalLM, GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

T = 12
CASES = {
    "gpt2": lambda: GPT2LMHeadModel(GPT2Config(
        vocab_size=64, n_embd=32, n_layer=2, n_head=4, n_positions=16, n_inner=64, bos_token_id=0, eos_token_id=0)),
    "llama_gqa": lambda: LlamaForCausalLM(LlamaConfig(
        vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=16, rms_norm_eps=1e-5, tie_word_embeddings=False)),
    "llama_linear_rope": lambda: LlamaForCausalLM(LlamaConfig(
        vocab_size=64, hidden_size=32, intermediate_size=40, num_hidden_layers=2, num_attention_heads=2,
        num_key_value_heads=2, max_position_embeddings=16, tie_word_embeddings=True, attention_bias=True,
        rope_parameters={"rope_type": "linear", "factor": 2.0, "rope_theta": 500.0})),
}


def randomise(model: torch.nn.Module, gen: torch.Generator) -> None:
    """Unit-scale weights (transformers' init draws 0.02, which leaves the logits near zero)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen)
            p.copy_(1 + 0.1 * noise if ("ln" in name.lower() or "norm" in name.lower()) and p.dim() == 1 and "bias" not in name
                    else 0.15 * noise)


def write_case(case: str, build, out_dir: Path, gen: torch.Generator, length: int):
    """A random model of `build` saved into out_dir/<case>/, its logits on `length` random ids
    (<case>.logits.safetensors) and its loss's gradients (<case>.grads.safetensors); returns the
    model, its logits and the folder's size in bytes."""
    torch.manual_seed(0)
    model = build().eval()
    randomise(model, gen)
    model.save_pretrained(out_dir / case)
    ids = torch.randint(0, 64, (1, length), generator=gen)
    with torch.no_grad():
        logits = model(ids).logits.float()
    save_file({"ids": ids, "logits": logits.contiguous()}, str(out_dir / f"{case}.logits.safetensors"))
    write_gradients(model, ids, out_dir / f"{case}.grads.safetensors")
    return model, logits, sum(f.stat().st_size for f in (out_dir / case).iterdir())


def write(out_dir: Path) -> None:
    gen = torch.Generator().manual_seed(11)
    for case, build in CASES.items():
        _, logits, size = write_case(case, build, out_dir, gen, T)
        print(f"{case}: {size} bytes, |logits| max {logits.abs().max():.3f}")


def write_gradients(model: torch.nn.Module, ids: torch.Tensor, path: Path) -> None:
    """transformers' causal LM loss (it shifts the labels) and the gradient of every parameter."""
    loss = model(ids, labels=ids).loss
    loss.backward()
    targets = torch.cat([ids[:, 1:], torch.full((ids.shape[0], 1), -100)], dim=1)
    logits = model(ids).logits
    shifted = torch.nn.functional.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1), ignore_index=-100)
    assert torch.allclose(shifted, loss), "the shifted targets must give transformers' loss"
    grads = {f"grad.{name}": p.grad.contiguous() for name, p in model.named_parameters()}
    save_file({"targets": targets, "loss": loss.detach(), **grads}, str(path))


def transformers_model(path: Path, auto_class=AutoModelForCausalLM):
    """(class name, input -> logits) of the folder loaded by transformers' auto_class."""
    model = auto_class.from_pretrained(path).eval()
    return type(model).__name__, lambda x: model(x).logits


def check(folder: Path, load=transformers_model, suffix: str = ".logits.safetensors", input_name: str = "ids") -> int:
    """Every DIR/<case><suffix> (our input and logits) against DIR/<case>/ loaded by `load`."""
    worst = 0.0
    for ours in sorted(folder.glob("*" + suffix)):
        case = ours.name.removesuffix(suffix)
        expected = load_file(str(ours))
        name, forward = load(folder / case)
        with torch.no_grad():
            logits = forward(expected[input_name])
        err = (logits - expected["logits"]).abs().max().item()
        worst = max(worst, err)
        shards = len(list((folder / case).glob("model-*-of-*.safetensors")))
        files = f"{shards} shards + index" if shards else "one model.safetensors"
        print(f"{case}: {name} loads our export ({files}); max abs logit difference {err:.3g}")
    return 0 if worst <= 1e-4 else 1


def run(doc: str, write_fixtures, check_export) -> int:
    """The command line `write DIR` / `check DIR` of a fixture script (this one and its siblings)."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["write", "check"])
    parser.add_argument("dir", type=Path)
    args = parser.parse_args()
    logging.getLogger("transformers").setLevel(logging.ERROR)
    torch.set_num_threads(1)
    if args.mode == "write":
        write_fixtures(args.dir)
        return 0
    return check_export(args.dir)


if __name__ == "__main__":
    raise SystemExit(run(__doc__, write, check))
