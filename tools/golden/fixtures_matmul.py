"""matmul with batch broadcasting and 1-D promotion, and linear with and without bias."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from golden_common import Fixture, randn


def matmul() -> Fixture:
    fx = Fixture("matmul", seed=6,
                 description="torch.matmul(a, b) over the promotion and broadcasting rules; "
                             "roles a, b, out, grad_out, grad_a, grad_b")
    shapes = {
        "2d": ((4, 3), (3, 5)),
        "batch_broadcast": ((2, 1, 4, 3), (5, 3, 2)),
        "batch_times_2d": ((2, 4, 3), (3, 5)),
        "vec_mat": ((3,), (3, 5)),
        "mat_vec": ((4, 3), (3,)),
        "vec_vec": ((3,), (3,)),
        "batch_vec": ((2, 4, 3), (3,)),
        "vec_batch": ((3,), (2, 3, 5)),
    }
    def op(a, b):
        return torch.matmul(a, b)

    for case, (sa, sb) in shapes.items():
        fx.case(case, op, {"a": randn(*sa), "b": randn(*sb)}, a_shape=list(sa), b_shape=list(sb))
    fx.case("batch_broadcast_f64", op,
            {"a": randn(2, 1, 4, 3, dtype=torch.float64), "b": randn(5, 3, 2, dtype=torch.float64)})
    return fx


def linear() -> Fixture:
    fx = Fixture("linear", seed=7,
                 description="F.linear(x, weight, bias) = x weight^T + bias; "
                             "roles x, weight[, bias], out, grad_out, grad_x, grad_weight[, grad_bias]")
    def op(x, weight, bias=None):
        return F.linear(x, weight, bias)

    fx.case("bias", op, {"x": randn(2, 3, 4), "weight": randn(5, 4), "bias": randn(5)})
    fx.case("no_bias", op, {"x": randn(3, 4), "weight": randn(5, 4)})
    fx.case("bias_f64", op, {"x": randn(2, 3, 4, dtype=torch.float64),
                             "weight": randn(5, 4, dtype=torch.float64), "bias": randn(5, dtype=torch.float64)})
    return fx


def fixtures() -> list[Fixture]:
    return [matmul(), linear()]
