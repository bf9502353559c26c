"""torch.nn.utils.clip_grad_norm_ (2-norm), for nanoformer's clip_grad_norm
(tests/optim/test_grad_clip.cpp).

Re-run with all fixtures:  .venv/bin/python tools/golden/generate_all.py tests/golden   (make golden)

Each case has gradients g0 (4, 3), g1 (5,) and g2 (2, 2, 2) of three parameters (scaled so that
their total norm is about `norm_scale` x 3.7), clipped to max_norm. Roles: "g{i}" the gradients
before, "clipped{i}" after, "total_norm" () what clip_grad_norm_ returned. The case parameters hold
max_norm.
"""
from __future__ import annotations

import torch

from golden_common import Fixture, randn

SHAPES = [(4, 3), (5,), (2, 2, 2)]
CASES = {
    "clipped": {"max_norm": 1.0, "norm_scale": 2.0},
    "clipped_hard": {"max_norm": 0.05, "norm_scale": 30.0},
    "not_clipped": {"max_norm": 100.0, "norm_scale": 1.0},
}


def fixtures() -> list[Fixture]:
    fx = Fixture("grad_clip", seed=92, description="torch.nn.utils.clip_grad_norm_ on three parameters' "
                 "gradients; roles g{i}, clipped{i}, total_norm")
    for name, case in CASES.items():
        grads = [randn(*s, scale=case["norm_scale"]) for s in SHAPES]
        params = [torch.zeros(s, requires_grad=True) for s in SHAPES]
        for p, g in zip(params, grads):
            p.grad = g.clone()
        total = torch.nn.utils.clip_grad_norm_(params, case["max_norm"])
        for i, (p, g) in enumerate(zip(params, grads)):
            fx.tensors[f"{name}.g{i}"] = g
            fx.tensors[f"{name}.clipped{i}"] = p.grad.clone()
        fx.tensors[f"{name}.total_norm"] = total.detach().clone()
        fx.cases[name] = {"max_norm": case["max_norm"]}
    return [fx]
