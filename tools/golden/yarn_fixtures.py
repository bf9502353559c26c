#!/usr/bin/env python3
"""YaRN RoPE scaling fixtures, with `transformers` as the oracle (written with transformers 5.24.0,
torch 2.15.0):

    /work/venv-eval/bin/python tools/golden/yarn_fixtures.py write tests/fixtures
        tests/fixtures/yarn/inverse_frequencies.json: for each case below, the rope parameters given to
          transformers.modeling_rope_utils._compute_yarn_parameters (a LlamaConfig of that head_dim), the
          inverse frequencies it returns (D/2 values, f32) and its attention factor;
        tests/fixtures/hf/llama_yarn/: a tiny random LlamaForCausalLM (vocab 64, hidden 32, 2 layers, 2 heads
          of 16, 80 positions) with rope_parameters yarn factor 4, original_max_position_embeddings 16, saved
          with save_pretrained, and as tools/golden/hf_fixtures.py writes them, llama_yarn.logits.safetensors
          (ids (1, 40): past the original 16 positions) and llama_yarn.grads.safetensors.
    /work/venv-eval/bin/python tools/golden/yarn_fixtures.py check DIR
        as hf_fixtures.py's check (transformers loading the folders nanoformer exported).
"""
from __future__ import annotations

import json
from pathlib import Path

import torch
import transformers
from transformers import LlamaConfig, LlamaForCausalLM
from transformers.modeling_rope_utils import _compute_yarn_parameters

from hf_fixtures import check, run, write_case

# (head_dim, rope parameters): the defaults (beta 32 / 1, attention factor 0.1 ln s + 1), explicit betas
# and attention factor, MiniMind's values (theta 1e6, factor 16, original 2048), a ramp whose bounds meet
# (transformers adds 0.001), and one clamped at 0 below and D - 1 above.
CASES = [
    (16, {"rope_theta": 10000.0, "factor": 4.0, "original_max_position_embeddings": 64}),
    (64, {"rope_theta": 10000.0, "factor": 8.0, "original_max_position_embeddings": 256, "beta_fast": 16,
          "beta_slow": 2, "attention_factor": 1.25}),
    (96, {"rope_theta": 1e6, "factor": 16.0, "original_max_position_embeddings": 2048, "beta_fast": 32,
          "beta_slow": 1, "attention_factor": 1.0}),
    (8, {"rope_theta": 500.0, "factor": 2.5, "original_max_position_embeddings": 40, "beta_fast": 4, "beta_slow": 3}),
    (32, {"rope_theta": 100.0, "factor": 3.0, "original_max_position_embeddings": 100000}),
]


def inverse_frequencies() -> list[dict]:
    cases = []
    for head_dim, params in CASES:
        config = LlamaConfig(hidden_size=head_dim * 2, num_attention_heads=2, head_dim=head_dim,
                             max_position_embeddings=4 * params["original_max_position_embeddings"],
                             rope_parameters={"rope_type": "yarn", **params})
        inv_freq, attention_factor = _compute_yarn_parameters(config)
        cases.append({"head_dim": head_dim, **params, "inv_freq": inv_freq.tolist(),
                      "attention_factor_out": float(attention_factor)})
    return cases


def write(out_dir: Path) -> None:
    (out_dir / "yarn").mkdir(parents=True, exist_ok=True)
    doc = {"generator": "tools/golden/yarn_fixtures.py", "transformers": transformers.__version__,
           "torch": torch.__version__, "cases": inverse_frequencies()}
    (out_dir / "yarn" / "inverse_frequencies.json").write_text(json.dumps(doc, indent=1) + "\n")
    gen = torch.Generator().manual_seed(29)
    build = lambda: LlamaForCausalLM(LlamaConfig(
        vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=2,
        num_key_value_heads=2, max_position_embeddings=80, rms_norm_eps=1e-6, tie_word_embeddings=False,
        rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
                         "original_max_position_embeddings": 16}))
    _, logits, size = write_case("llama_yarn", build, out_dir / "hf", gen, 40)
    print(f"llama_yarn: {size} bytes, |logits| max {logits.abs().max():.3f}")


if __name__ == "__main__":
    raise SystemExit(run(__doc__, write, check))
