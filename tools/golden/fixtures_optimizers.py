"""torch.optim's updates over 10 steps, for nanoformer's optimizers (tests/optim/test_optimizers.cpp).

Each case has three parameters p0 (4, 3), p1 (3,) and p2 (2, 2, 2), in two parameter groups ({p0, p1}
and {p2}, with their own lr and weight decay), and the loss sum_i sum(0.5 a_i p_i^2 + b_i p_i), whose
gradient a_i p_i + b_i changes as the parameters move. Roles: "p{i}" the initial values, "a{i}",
"b{i}", and "p{i}.step{k}" the values after step k = 1 .. 10. The case parameters name the optimizer
and its options, and each group's lr and weight_decay.
"""
from __future__ import annotations

import torch

from golden_common import Fixture, randn

STEPS = 10
SHAPES = [(4, 3), (3,), (2, 2, 2)]
CASES = {
    "sgd": ("SGD", {}, [(0.1, 0.0), (0.05, 0.0)]),
    "sgd_momentum_dampening_decay": ("SGD", {"momentum": 0.9, "dampening": 0.1}, [(0.1, 0.01), (0.2, 0.0)]),
    "sgd_nesterov": ("SGD", {"momentum": 0.9, "nesterov": True}, [(0.05, 0.01), (0.1, 0.1)]),
    "adam": ("Adam", {"betas": (0.9, 0.999), "eps": 1e-8}, [(0.01, 0.0), (0.02, 0.0)]),
    "adam_l2": ("Adam", {"betas": (0.8, 0.95), "eps": 1e-6}, [(0.01, 0.05), (0.03, 0.0)]),
    "adamw": ("AdamW", {"betas": (0.8, 0.95), "eps": 1e-8}, [(0.01, 0.1), (0.02, 0.0)]),
}


def quadratic_case(fx: Fixture, name: str, shapes: list[tuple[int, ...]], make_optimizer, record=None) -> None:
    """Draws p_i, a_i, b_i of `shapes`, trains the p_i on sum_i sum(0.5 a_i p_i^2 + b_i p_i) for STEPS
    steps with make_optimizer(params) and stores roles p{i}, a{i}, b{i} and p{i}.step{k};
    record(k, optimizer) may store more after each step."""
    init = [randn(*s) for s in shapes]
    a = [torch.rand(*s) * 2 + 0.1 for s in shapes]
    b = [randn(*s) for s in shapes]
    params = [p.clone().requires_grad_(True) for p in init]
    optimizer = make_optimizer(params)
    for i in range(len(shapes)):
        fx.tensors.update({f"{name}.p{i}": init[i], f"{name}.a{i}": a[i], f"{name}.b{i}": b[i]})
    for k in range(1, STEPS + 1):
        optimizer.zero_grad()
        loss = sum((0.5 * ai * p * p + bi * p).sum() for p, ai, bi in zip(params, a, b))
        loss.backward()
        optimizer.step()
        for i, p in enumerate(params):
            fx.tensors[f"{name}.p{i}.step{k}"] = p.detach().clone()
        if record:
            record(k, optimizer)


def fixtures() -> list[Fixture]:
    fx = Fixture("optimizers", seed=90, description="torch.optim SGD / Adam / AdamW over 10 steps on "
                 "sum(0.5 a p^2 + b p), two parameter groups; roles p{i}, a{i}, b{i}, p{i}.step{k}")
    for name, (kind, options, groups) in CASES.items():
        def make_optimizer(params, kind=kind, options=options, groups=groups):
            return getattr(torch.optim, kind)(
                [{"params": params[:2], "lr": groups[0][0], "weight_decay": groups[0][1]},
                 {"params": params[2:], "lr": groups[1][0], "weight_decay": groups[1][1]}], **options)
        quadratic_case(fx, name, SHAPES, make_optimizer)
        fx.cases[name] = {"optimizer": kind, **{k: list(v) if isinstance(v, tuple) else v for k, v in options.items()},
                          "groups": [{"lr": lr, "weight_decay": wd} for lr, wd in groups]}
    return [fx]
