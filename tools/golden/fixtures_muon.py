"""Muon's updates over 10 steps, for nanoformer's Muon (tests/optim/test_muon.cpp).

Re-run with all fixtures:  .venv/bin/python tools/golden/generate_all.py tests/golden   (make golden)

The reference is written from nanochat's nanochat/muon.py (the Muon class that 003's
setup_optimizers builds, itself Keller Jordan's Muon), with the Newton-Schulz iteration in fp32 as
nanochat runs it off CUDA (on CUDA it runs in bf16):
  b = lerp(b, g, 1 - momentum)                       (b = momentum b + (1 - momentum) g)
  u = lerp(g, b, momentum) with Nesterov, else b
  X = u (transposed when rows > cols) / (||u||_F + 1e-7); 5 times:
      A = X X^T;  B = b_ns A + (c_ns A) A;  X = a_ns X + B X      (a, b, c = 3.4445, -4.7750, 2.0315)
  p = p (1 - lr wd)                                  (Keller Jordan's decoupled decay; nanochat's wd is 0)
  p = p - lr max(1, rows / cols)^0.5 X
Each case has three 2-D parameters p0 (6, 4) (tall: transposed, scaled by sqrt(1.5)), p1 (4, 8)
and p2 (5, 5) in two parameter groups ({p0, p1} and {p2}, with their own lr and weight decay) and
the loss sum_i sum(0.5 a_i p_i^2 + b_i p_i), whose gradient a_i p_i + b_i changes as the parameters
move. Roles: "p{i}" the initial values, "a{i}", "b{i}", "p{i}.step{k}" the values after step
k = 1 .. 10, "n{i}.step{k}" the momentum update that step k orthogonalises and "u{i}.step{k}" the
Newton-Schulz result (before lr and scale). The case
parameters hold momentum, nesterov and each group's lr and weight_decay.
"""
from __future__ import annotations

import torch

from fixtures_optimizers import quadratic_case
from golden_common import Fixture

SHAPES = [(6, 4), (4, 8), (5, 5)]
NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)
NS_STEPS = 5
CASES = {
    "nesterov": {"momentum": 0.95, "nesterov": True, "groups": [(0.02, 0.0), (0.05, 0.0)]},
    "plain_momentum": {"momentum": 0.9, "nesterov": False, "groups": [(0.03, 0.0), (0.01, 0.0)]},
    "weight_decay": {"momentum": 0.95, "nesterov": True, "groups": [(0.02, 0.1), (0.04, 0.0)]},
}


def newton_schulz(G: torch.Tensor, steps: int = NS_STEPS) -> torch.Tensor:
    """nanochat's zeropower_via_newtonschulz5 on one matrix, in fp32."""
    a, b, c = NS_COEFFICIENTS
    X = G.float()
    if G.size(-2) > G.size(-1):
        X = X.mT
    X = X / (X.norm(dim=(-2, -1), keepdim=True) + 1e-7)
    for _ in range(steps):
        A = X @ X.mT
        B = b * A + c * A @ A  # (c A) A, as Python evaluates it
        X = a * X + B @ X
    if G.size(-2) > G.size(-1):
        X = X.mT
    return X


class Muon(torch.optim.Optimizer):
    """nanochat's Muon (nesterov, lerp momentum, max(1, rows / cols)^0.5 scale) plus Keller
    Jordan's decoupled weight decay; records each Newton-Schulz input in `inputs` and output in
    `updates`."""

    def __init__(self, params, lr=0.02, momentum=0.95, nesterov=True, weight_decay=0.0):
        super().__init__(params, dict(lr=lr, momentum=momentum, nesterov=nesterov, weight_decay=weight_decay))
        self.inputs: list[torch.Tensor] = []
        self.updates: list[torch.Tensor] = []

    @torch.no_grad()
    def step(self):
        self.inputs, self.updates = [], []
        for group in self.param_groups:
            for p in group["params"]:
                g = p.grad
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = torch.zeros_like(g)
                buf = state["momentum_buffer"]
                buf.lerp_(g, 1 - group["momentum"])
                g = g.lerp_(buf, group["momentum"]) if group["nesterov"] else buf
                self.inputs.append(g.clone())
                g = newton_schulz(g)
                self.updates.append(g.clone())
                p.mul_(1 - group["lr"] * group["weight_decay"])
                p.add_(g, alpha=-group["lr"] * max(1, p.size(-2) / p.size(-1)) ** 0.5)


def fixtures() -> list[Fixture]:
    fx = Fixture("muon", seed=91, description="nanochat's Muon (fp32 Newton-Schulz) over 10 steps on "
                 "sum(0.5 a p^2 + b p), two parameter groups; roles p{i}, a{i}, b{i}, p{i}.step{k}, n{i}.step{k}, u{i}.step{k}")
    for name, case in CASES.items():
        groups = case["groups"]

        def make_optimizer(params, case=case, groups=groups):
            return Muon([{"params": params[:2], "lr": groups[0][0], "weight_decay": groups[0][1]},
                         {"params": params[2:], "lr": groups[1][0], "weight_decay": groups[1][1]}],
                        momentum=case["momentum"], nesterov=case["nesterov"])

        def record(k, optimizer, name=name):
            for i, (n, u) in enumerate(zip(optimizer.inputs, optimizer.updates)):
                fx.tensors.update({f"{name}.n{i}.step{k}": n, f"{name}.u{i}.step{k}": u})

        quadratic_case(fx, name, SHAPES, make_optimizer, record)
        fx.cases[name] = {"momentum": case["momentum"], "nesterov": case["nesterov"],
                          "groups": [{"lr": lr, "weight_decay": wd} for lr, wd in groups]}
    return [fx]
