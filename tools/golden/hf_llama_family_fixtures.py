#!/usr/bin/env python3
"""Qwen2ForCausalLM, Qwen3ForCausalLM and MistralForCausalLM fixtures, with `transformers` as the oracle
(written with transformers 5.24.0, torch 2.15.0; each folder's config.json records the version):

    /work/venv-eval/bin/python tools/golden/hf_llama_family_fixtures.py write tests/fixtures/hf
        builds a tiny random model of each class (vocab 64, hidden 32, 2 layers, 4 heads / 2 kv heads,
        SwiGLU 48, 80 positions; the sliding window, 4 or 5, shorter than the test sequence of 12 and
        than the 64 generated tokens), saves it with save_pretrained (safetensors) into
        tests/fixtures/hf/<case>/ and writes, as tools/golden/hf_fixtures.py does for GPT-2 and LLaMA,
        <case>.logits.safetensors (ids (1, 12), logits), <case>.grads.safetensors (transformers' causal
        LM loss and the gradient of every parameter by its transformers name), and, as
        tools/golden/hf_generate_fixtures.py does, <case>.generate.safetensors (2 prompts of 4 ids and
        the 64 tokens generate(do_sample=False) gives through transformers' own sliding-window cache).
    /work/venv-eval/bin/python tools/golden/hf_llama_family_fixtures.py check DIR
        loads the folders nanoformer exported (NF_HF_EXPORT_DIR=DIR build/test_hf_checkpoint) in
        transformers and compares their logits with ours (hf_fixtures.py's check).

Cases:
  qwen2    Qwen2Config: q / k / v biases, o without (always, in Qwen2Attention), use_sliding_window
           with sliding_window 4 and max_window_layers 1: layer 0 full, layer 1 windowed; untied head
  qwen3    Qwen3Config: q_norm / k_norm (RMSNorm over head_dim, before RoPE), explicit head_dim 16
           (hidden / heads is 8), rope_theta 1e6, use_sliding_window with sliding_window 5 and
           max_window_layers 1; tied head
  mistral  MistralConfig: sliding_window 4 on every layer, head_dim 8; untied head
"""
from __future__ import annotations

import logging
from pathlib import Path

import torch
from transformers import (MistralConfig, MistralForCausalLM, Qwen2Config, Qwen2ForCausalLM, Qwen3Config,
                          Qwen3ForCausalLM)

from hf_fixtures import check, run, write_case
from hf_generate_fixtures import write_generation

T = 12
COMMON = dict(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, max_position_embeddings=80, rms_norm_eps=1e-6)
CASES = {
    "qwen2": lambda: Qwen2ForCausalLM(Qwen2Config(
        **COMMON, use_sliding_window=True, sliding_window=4, max_window_layers=1, tie_word_embeddings=False)),
    "qwen3": lambda: Qwen3ForCausalLM(Qwen3Config(
        **COMMON, head_dim=16, use_sliding_window=True, sliding_window=5, max_window_layers=1,
        tie_word_embeddings=True, rope_parameters={"rope_type": "default", "rope_theta": 1e6})),
    "mistral": lambda: MistralForCausalLM(MistralConfig(
        **COMMON, head_dim=8, sliding_window=4, tie_word_embeddings=False)),
}


def write(out_dir: Path) -> None:
    gen = torch.Generator().manual_seed(23)
    for case, build in CASES.items():
        model, logits, size = write_case(case, build, out_dir, gen, T)
        windows = getattr(model.config, "layer_types", None) or ["sliding_window"] * model.config.num_hidden_layers
        print(f"{case}: {size} bytes, windows per layer {windows}, |logits| max {logits.abs().max():.3f}")
        write_generation(out_dir, case, gen, prompt_len=4, new_tokens=64)


if __name__ == "__main__":
    raise SystemExit(run(__doc__, write, check))
