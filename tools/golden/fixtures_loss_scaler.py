"""torch.amp.GradScaler's dynamic loss scaling, for nanoformer's DynamicLossScaler
(tests/optim/test_loss_scaler.cpp).

Re-run with all fixtures:  .venv/bin/python tools/golden/generate_all.py tests/golden   (make golden)

Each case trains one parameter p (5,) with SGD (lr 0.1) on sum(0.5 a p^2 + b p) through a
GradScaler("cpu") of the case's options: scaler.scale(loss).backward(), then on the poisoned steps
one gradient element is set to nan or inf, then scaler.step(optimizer) (which unscales and skips a
step with non-finite gradients) and scaler.update(). Roles: "p", "a", "b" the initial values,
"poison" (S,) i64 per step (0 none, 1 nan, 2 inf), "scale" (S,) f32 the scale after each step's
update, "p.final" the parameter after the last step, and "p.step{k}" after step k = 1 .. S for
the short case. The case parameters hold the GradScaler options and the step count S.
"""
from __future__ import annotations

import torch

from golden_common import Fixture, randn

CASES = {
    # a short run: poisons at steps 3 (nan), 7 (inf) and 8 (nan), growth after 3 good steps
    "interval3": {"options": {"init_scale": 1024.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 3},
                  "steps": 16, "poison": {3: 1, 7: 2, 8: 1}, "every_step": True},
    # GradScaler's defaults: a poisoned first step halves 65536, 2000 good steps double it back
    "defaults": {"options": {"init_scale": 65536.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 2000},
                 "steps": 2003, "poison": {1: 1}, "every_step": False},
    # other factors: growth 4, backoff 0.25
    "factors": {"options": {"init_scale": 256.0, "growth_factor": 4.0, "backoff_factor": 0.25, "growth_interval": 2},
                "steps": 9, "poison": {2: 2, 3: 1}, "every_step": True},
}


def fixtures() -> list[Fixture]:
    fx = Fixture("loss_scaler", seed=93, description="torch.amp.GradScaler('cpu') over poisoned and good steps "
                 "of SGD; roles p, a, b, poison, scale, p.final, p.step{k}")
    for name, case in CASES.items():
        p0, a, b = randn(5), torch.rand(5) + 0.5, randn(5)
        p = p0.clone().requires_grad_(True)
        optimizer = torch.optim.SGD([p], lr=0.1)
        scaler = torch.amp.GradScaler("cpu", **case["options"])
        steps = case["steps"]
        poison = torch.zeros(steps, dtype=torch.int64)
        scales = torch.zeros(steps)
        for k in range(1, steps + 1):
            optimizer.zero_grad()
            loss = (0.5 * a * p * p + b * p).sum()
            scaler.scale(loss).backward()
            kind = case["poison"].get(k, 0)
            poison[k - 1] = kind
            if kind:
                with torch.no_grad():
                    p.grad[1] = float("nan") if kind == 1 else float("inf")
            scaler.step(optimizer)
            scaler.update()
            scales[k - 1] = scaler.get_scale()
            if case["every_step"]:
                fx.tensors[f"{name}.p.step{k}"] = p.detach().clone()
        fx.tensors.update({f"{name}.p": p0, f"{name}.a": a, f"{name}.b": b, f"{name}.poison": poison,
                           f"{name}.scale": scales, f"{name}.p.final": p.detach().clone()})
        fx.cases[name] = {**case["options"], "steps": steps}
    return [fx]
