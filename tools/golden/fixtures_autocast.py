"""Autocast: F.linear and torch.matmul under torch.autocast("cpu", dtype=torch.bfloat16 / float16).

PyTorch rounds the f32 operands to the autocast dtype, multiplies with f32 accumulation and rounds
the product to bf16/f16; the stored `out` is that product cast back to f32. Backward runs on the
rounded operands and gradient (the stored `grad_out` reaches the product rounded to the autocast
dtype), so grad_x, grad_weight, grad_a, grad_b are rounded to bf16/f16 before the cast to f32 too.
nanoformer keeps the product and the gradients in f32 (no final rounding), so the C++ test
(tests/ops/test_autocast.cpp) allows a few ulps of the autocast dtype.

Regenerate with the rest: `make golden` (tools/golden/generate_all.py tests/golden).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from golden_common import Fixture, randn

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}


def autocast_linear() -> Fixture:
    fx = Fixture("autocast_linear", seed=31,
                 description="F.linear(x, weight, bias) under torch.autocast('cpu', dtype), out cast to f32; "
                             "roles x, weight[, bias], out, grad_out, grad_x, grad_weight[, grad_bias]")
    for name, dtype in DTYPES.items():
        def op(x, weight, bias=None, dtype=dtype):
            with torch.autocast("cpu", dtype=dtype):
                return F.linear(x, weight, bias).float()

        fx.case(f"bias_{name}", op, {"x": randn(3, 5, 48), "weight": randn(24, 48), "bias": randn(24)}, dtype=name)
        fx.case(f"no_bias_{name}", op, {"x": randn(7, 40), "weight": randn(16, 40)}, dtype=name)
    return fx


def autocast_matmul() -> Fixture:
    fx = Fixture("autocast_matmul", seed=32,
                 description="torch.matmul(a, b) under torch.autocast('cpu', dtype), out cast to f32; "
                             "roles a, b, out, grad_out, grad_a, grad_b")
    shapes = {
        "2d": ((9, 33), (33, 12)),
        "batch_broadcast": ((2, 1, 5, 16), (3, 16, 7)),
        "batch_times_2d": ((2, 6, 20), (20, 8)),
        "vec_mat": ((24,), (24, 5)),
    }
    for name, dtype in DTYPES.items():
        def op(a, b, dtype=dtype):
            with torch.autocast("cpu", dtype=dtype):
                return torch.matmul(a, b).float()

        for case, (sa, sb) in shapes.items():
            fx.case(f"{case}_{name}", op, {"a": randn(*sa), "b": randn(*sb)}, dtype=name)
    return fx


def fixtures() -> list[Fixture]:
    return [autocast_linear(), autocast_matmul()]
