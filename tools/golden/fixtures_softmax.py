"""softmax and log_softmax along several dims, f32 and f64, including large logits."""
from __future__ import annotations

import torch

from golden_common import Fixture, randn

# (case, shape, dim, dtype, scale): scale 30 gives logits far beyond exp's f32 range unless the
# kernel subtracts the max first.
CASES = [
    ("f32_dim_last", (4, 7), -1, torch.float32, 1.0),
    ("f32_dim0", (4, 7), 0, torch.float32, 1.0),
    ("f32_3d_dim1", (2, 3, 5), 1, torch.float32, 1.0),
    ("f32_large_logits", (3, 6), -1, torch.float32, 30.0),
    ("f64_dim_last", (2, 3, 5), -1, torch.float64, 1.0),
    ("f64_dim0", (4, 7), 0, torch.float64, 1.0),
]


def build(name: str, op) -> Fixture:
    fx = Fixture(name, seed=1 if name == "softmax" else 2,
                 description=f"{name}(x, dim): cases {', '.join(c[0] for c in CASES)}; "
                             "roles x, out, grad_out, grad_x")
    for case, shape, dim, dtype, scale in CASES:
        fx.case(case, lambda x, dim=dim: op(x, dim=dim), {"x": randn(*shape, dtype=dtype, scale=scale)},
                dim=dim, dtype=str(dtype))
    return fx


def fixtures() -> list[Fixture]:
    return [build("softmax", torch.softmax), build("log_softmax", torch.log_softmax)]
