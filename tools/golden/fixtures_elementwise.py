"""Activations (gelu exact and tanh, silu, sigmoid, tanh, softplus) and broadcasting binary ops."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from golden_common import Fixture, randn, uniform


def activations() -> Fixture:
    fx = Fixture("activations", seed=4,
                 description="unary activations on x (4, 7) scaled by 3 to reach the tails; "
                             "roles x, out, grad_out, grad_x")
    ops = {
        "gelu_none": lambda x: F.gelu(x, approximate="none"),
        "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
        "silu": lambda x: F.silu(x),
        "sigmoid": lambda x: torch.sigmoid(x),
        "tanh": lambda x: torch.tanh(x),
    }
    for dtype, tag in ((torch.float32, "f32"), (torch.float64, "f64")):
        for op_name, op in ops.items():
            fx.case(f"{op_name}_{tag}", op, {"x": randn(4, 7, dtype=dtype, scale=3.0)}, op=op_name, dtype=str(dtype))
    # softplus over [-25, 25], across its threshold at x = 20 where it becomes the identity
    for dtype, tag in ((torch.float32, "f32"), (torch.float64, "f64")):
        fx.case(f"softplus_{tag}", F.softplus, {"x": uniform(4, 7, low=-25.0, high=25.0, dtype=dtype)},
                op="softplus", dtype=str(dtype))
    return fx


def broadcast() -> Fixture:
    fx = Fixture("broadcast", seed=5,
                 description="binary ops a (2, 3, 1) (op) b (3, 4) -> (2, 3, 4), gradients summed back to "
                             "each operand's shape; composite = (a * b + c) / (b * b + 1) with c (4); "
                             "roles a, b[, c], out, grad_out, grad_a, grad_b[, grad_c]")
    ops = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div}
    for op_name, op in ops.items():
        a = randn(2, 3, 1)
        # div: keep |b| >= 0.5 so the quotient and its gradient stay well conditioned
        b = uniform(3, 4, low=0.5, high=2.0) * torch.where(torch.rand(3, 4) < 0.5, -1.0, 1.0)
        fx.case(op_name, lambda a, b, op=op: op(a, b), {"a": a, "b": b}, op=op_name)
    fx.case("composite", lambda a, b, c: (a * b + c) / (b * b + 1),
            {"a": randn(2, 3, 1), "b": randn(3, 4), "c": randn(4)}, op="(a * b + c) / (b * b + 1)")
    fx.case("composite_f64", lambda a, b, c: (a * b + c) / (b * b + 1),
            {"a": randn(2, 3, 1, dtype=torch.float64), "b": randn(3, 4, dtype=torch.float64),
             "c": randn(4, dtype=torch.float64)}, op="(a * b + c) / (b * b + 1)")
    return fx


def fixtures() -> list[Fixture]:
    return [activations(), broadcast()]
