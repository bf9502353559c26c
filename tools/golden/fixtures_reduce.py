"""Reductions: sum, mean and var (unbiased and biased) over one, several or all dims."""
from __future__ import annotations

import torch

from golden_common import Fixture, randn

# (case, shape, dims, keepdim); dims [] means every dim
CASES = [
    ("dim_last", (4, 7), [-1], False),
    ("dim0_keepdim", (4, 7), [0], True),
    ("dims_0_2", (2, 3, 5), [0, 2], False),
    ("all", (2, 3, 5), [], False),
]


def reduce_op(op: str, dims: list[int], keepdim: bool, correction: int = 1):
    def run(x):
        dim = dims if dims else None
        if op == "var":
            return torch.var(x, dim=dim, correction=correction, keepdim=keepdim)
        if dim is None:
            return getattr(torch, op)(x)
        return getattr(torch, op)(x, dim=dim, keepdim=keepdim)
    return run


def fixtures() -> list[Fixture]:
    fx = Fixture("reduce", seed=8,
                 description="sum / mean / var(x, dims, correction, keepdim), dims [] meaning all; "
                             "case names <op>_<dims case>[_c0]_<dtype>; roles x, out, grad_out, grad_x")
    for dtype, tag in ((torch.float32, "f32"), (torch.float64, "f64")):
        for case, shape, dims, keepdim in CASES:
            for op in ("sum", "mean", "var"):
                fx.case(f"{op}_{case}_{tag}", reduce_op(op, dims, keepdim), {"x": randn(*shape, dtype=dtype)},
                        op=op, dims=dims, keepdim=keepdim, correction=1 if op == "var" else None)
        for case, shape, dims, keepdim in CASES[:2]:
            fx.case(f"var_{case}_c0_{tag}", reduce_op("var", dims, keepdim, correction=0),
                    {"x": randn(*shape, dtype=dtype)}, op="var", dims=dims, keepdim=keepdim, correction=0)
    return [fx]
