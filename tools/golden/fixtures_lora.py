"""LoRA of reference 000 (section 4.5), written from its formula h = W0 x + b + (alpha / r) B A x
with W0 and b frozen: only x, A and B get gradients."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from golden_common import Fixture, randn


def lora() -> Fixture:
    fx = Fixture("lora", seed=33,
                 description="LoRA on a Linear: x W0^T + b + (alpha / rank) (x A^T) B^T; roles x, weight, [bias,] "
                             "lora_A.weight (rank, in), lora_B.weight (out, rank), out, grad_out, grad_x, "
                             "grad_lora_A.weight, grad_lora_B.weight (the base is frozen)")

    def case(name, x_shape, out_features, rank, alpha, bias=True, dtype=torch.float32):
        in_features = x_shape[-1]
        def op(**t):
            base = F.linear(t["x"], t["weight"], t.get("bias"))
            return base + (t["x"] @ t["lora_A.weight"].T @ t["lora_B.weight"].T) * (alpha / rank)
        inputs = {"x": randn(*x_shape, dtype=dtype), "weight": randn(out_features, in_features, dtype=dtype)}
        if bias:
            inputs["bias"] = randn(out_features, dtype=dtype)
        # B is zero at initialisation; a trained (random) B makes every gradient non-trivial
        inputs["lora_A.weight"] = randn(rank, in_features, dtype=dtype)
        inputs["lora_B.weight"] = randn(out_features, rank, dtype=dtype)
        fx.case(name, op, inputs, differentiable=["x", "lora_A.weight", "lora_B.weight"], rank=rank, alpha=alpha)

    case("rank3_alpha6_bias", (2, 3, 6), 5, 3, 6.0)
    case("rank1_alpha1_no_bias", (4, 6), 3, 1, 1.0, bias=False)
    case("rank4_alpha2", (3, 5), 4, 4, 2.0)
    return fx


def fixtures() -> list[Fixture]:
    return [lora()]
