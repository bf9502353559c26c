"""Learning-rate schedules as PyTorch computes them, for nanoformer's (tests/optim/test_schedules.cpp):
the lr of every step t = 0 .. T - 1 (f64) of an SGD optimizer driven by
  warmup_cosine    SequentialLR([LambdaLR(t / T_w), CosineAnnealingLR(T - T_w, min_lr)], [T_w]) (003)
  wsd              LambdaLR with nanochat's warmup-stable-decay multiplier
  minimind_cosine  LambdaLR(0.1 + 0.5 (1 + cos(pi t / T))), MiniMind's get_lr
  constant         no scheduler
Role "lr" (T,); the case parameters hold the schedule config as nanoformer names it.
"""
from __future__ import annotations

import math

import torch

from golden_common import Fixture

CASES = {
    "constant": {"kind": "constant", "lr": 3e-4, "total_steps": 20},
    "warmup_cosine": {"kind": "warmup_cosine", "lr": 1e-3, "total_steps": 40, "warmup_steps": 5, "min_lr": 1e-4},
    "wsd": {"kind": "wsd", "lr": 0.02, "total_steps": 50, "warmup_steps": 4, "warmdown_fraction": 0.2,
            "final_lr_fraction": 0.05},
    "minimind_cosine": {"kind": "minimind_cosine", "lr": 5e-4, "total_steps": 30},
}


def scheduler(optimizer: torch.optim.Optimizer, c: dict):
    T, Tw = c["total_steps"], c.get("warmup_steps", 0)
    if c["kind"] == "warmup_cosine":
        warmup = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda t: t / Tw if t < Tw else 1.0)
        cosine = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=T - Tw, eta_min=c["min_lr"])
        return torch.optim.lr_scheduler.SequentialLR(optimizer, [warmup, cosine], milestones=[Tw])
    if c["kind"] == "wsd":
        warmdown = round(c["warmdown_fraction"] * T)

        def multiplier(t):
            if t < Tw:
                return (t + 1) / Tw
            if t <= T - warmdown:
                return 1.0
            progress = (T - t) / warmdown
            return progress + (1 - progress) * c["final_lr_fraction"]
        return torch.optim.lr_scheduler.LambdaLR(optimizer, multiplier)
    if c["kind"] == "minimind_cosine":
        return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda t: 0.1 + 0.5 * (1 + math.cos(math.pi * t / T)))
    return None


def fixtures() -> list[Fixture]:
    fx = Fixture("schedules", seed=91, description="lr per step of torch's schedulers; role lr (T,) f64")
    for name, c in CASES.items():
        optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=c["lr"])
        sched = scheduler(optimizer, c)
        lrs = []
        for _ in range(c["total_steps"]):
            lrs.append(optimizer.param_groups[0]["lr"])
            optimizer.step()
            if sched:
                sched.step()
        fx.tensors[f"{name}.lr"] = torch.tensor(lrs, dtype=torch.float64)
        fx.cases[name] = c
    return [fx]
