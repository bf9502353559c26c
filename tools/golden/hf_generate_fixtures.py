#!/usr/bin/env python3
"""Greedy generation by transformers' `generate` for tests/infer/test_hf_generate.cpp:

    .venv/bin/python tools/golden/hf_generate_fixtures.py tests/fixtures/hf

loads each committed model folder of tools/golden/hf_fixtures.py (tests/fixtures/hf/<case>/:
GPT2LMHeadModel with learned positions, LlamaForCausalLM with GQA, LlamaForCausalLM with linear
RoPE scaling, tied head and biases) with AutoModelForCausalLM, and writes
tests/fixtures/hf/<case>.generate.safetensors:
  prompt (2, P) int64, generated (2, N) int64 = generate(prompt, do_sample=False,
  max_new_tokens=N) without an end-of-sequence id (every row runs N steps, through transformers'
  own KV cache), P + N = the model's 16 positions;
  margin: the smallest gap between the best and second-best logit over every step (a tie within
  float rounding would make the comparison meaningless: prompts are drawn again, from the same
  seeded stream, until every step's margin is at least 1e-3).
"""
from __future__ import annotations

import logging
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM

CASES = ["gpt2", "llama_gqa", "llama_linear_rope"]
P, N = 4, 12


def write_generation(folder: Path, case: str, gen: torch.Generator, prompt_len: int = P, new_tokens: int = N) -> None:
    """folder/<case>.generate.safetensors: greedy generate of folder/<case>/ from prompts drawn from gen."""
    model = AutoModelForCausalLM.from_pretrained(folder / case).eval()
    for _ in range(20):
        prompt = torch.randint(0, model.config.vocab_size, (2, prompt_len), generator=gen)
        with torch.no_grad():
            out = model.generate(prompt, attention_mask=torch.ones_like(prompt), do_sample=False,
                                 max_new_tokens=new_tokens, min_new_tokens=0, eos_token_id=None, pad_token_id=0,
                                 output_logits=True, return_dict_in_generate=True)
        top2 = torch.stack(out.logits, dim=1).topk(2, dim=-1).values
        margin = (top2[..., 0] - top2[..., 1]).min().item()
        if margin >= 1e-3:
            break
    assert margin >= 1e-3, f"{case}: no prompt without a near tie"
    generated = out.sequences[:, prompt_len:]
    assert generated.shape == (2, new_tokens), generated.shape
    save_file({"prompt": prompt, "generated": generated.contiguous(), "margin": torch.tensor(margin)},
              str(folder / f"{case}.generate.safetensors"))
    print(f"{case}: {type(model).__name__}, generated {generated.tolist()}, smallest top-2 margin {margin:.4f}")


def main(folder: Path) -> None:
    logging.getLogger("transformers").setLevel(logging.ERROR)
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(5)
    for case in CASES:
        write_generation(folder, case, gen)


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/hf"))
