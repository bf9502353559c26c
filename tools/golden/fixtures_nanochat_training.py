"""nanochat's optimizer setup training a small nanochat model, for nanoformer's "nanochat"
OptimizerSet (tests/optim/test_nanochat_training.cpp).

Re-run with all fixtures:  .venv/bin/python tools/golden/generate_all.py tests/golden   (make golden)

The model is fixtures_models' 003 nanochat model (dim 16, 2 layers, vocab 32, T 8, batch 2, under
nanoformer's DecoderLM names); the optimizers are those of nanochat's setup_optimizers (003) with
its default rates: torch.optim.AdamW (betas (0.8, 0.95), eps 1e-10, weight decay 0) for
output.weight at 0.004 (d/768)^-0.5 and tok_embeddings.weight at 0.2 (d/768)^-0.5, and
fixtures_muon's nanochat Muon (momentum 0.95, Nesterov, fp32 Newton-Schulz) at 0.02 for every block
matrix. Each of 10 steps runs as nanochat's base_train: a fresh batch, loss.backward(),
clip_grad_norm_(1.0), every group's lr = initial_lr x (1 - step / 20) (a stand-in schedule), both
optimizers step, gradients zeroed. Roles: "<param>" the initial parameters, "ids.step{k}" and
"targets.step{k}" the batch of step k = 1 .. 10, "loss" (10,) the loss of each step before its
update, "grad_norm" (10,) what clip_grad_norm_ returned, "<param>.step10" the parameters after the
last step. The case parameters hold the model config and the rates.
"""
from __future__ import annotations

import json

import torch

from fixtures_models import BASE, NANOCHAT_CONFIG, ids_and_targets, loss_of, nanochat_forward, nanochat_params
from fixtures_blocks import D
from fixtures_muon import Muon
from golden_common import Fixture

STEPS = 10
RATES = {"embedding_lr": 0.2, "unembedding_lr": 0.004, "matrix_lr": 0.02}
MAX_NORM = 1.0


def fixtures() -> list[Fixture]:
    fx = Fixture("nanochat_training", seed=94, description="nanochat's AdamW + Muon setup training the 003 model "
                 "for 10 steps with clipping; roles <param>, ids.step{k}, targets.step{k}, loss, grad_norm, "
                 "<param>.step10")
    name = "nanochat"
    init = nanochat_params()
    p = {k: v.clone().requires_grad_(True) for k, v in init.items()}
    scale = (D / 768) ** -0.5  # nanochat's dmodel_lr_scale
    adamw = torch.optim.AdamW([dict(params=[p["output.weight"]], lr=RATES["unembedding_lr"] * scale),
                               dict(params=[p["tok_embeddings.weight"]], lr=RATES["embedding_lr"] * scale)],
                              betas=(0.8, 0.95), eps=1e-10, weight_decay=0.0)
    muon = Muon([v for k, v in p.items() if k.startswith("layers.")], lr=RATES["matrix_lr"], momentum=0.95)
    optimizers = [adamw, muon]
    for opt in optimizers:
        for group in opt.param_groups:
            group["initial_lr"] = group["lr"]
    losses, norms = torch.zeros(STEPS), torch.zeros(STEPS)
    for k in range(1, STEPS + 1):
        ids, targets = ids_and_targets()
        logits, _ = nanochat_forward(ids, p)
        loss = loss_of(logits, targets)
        loss.backward()
        norms[k - 1] = torch.nn.utils.clip_grad_norm_(list(p.values()), MAX_NORM)
        for opt in optimizers:
            for group in opt.param_groups:
                group["lr"] = group["initial_lr"] * (1 - (k - 1) / 20)
            opt.step()
        for v in p.values():
            v.grad = None
        losses[k - 1] = loss.detach()
        fx.tensors.update({f"{name}.ids.step{k}": ids, f"{name}.targets.step{k}": targets})
    fx.tensors.update({f"{name}.{n}": v for n, v in init.items()})
    fx.tensors.update({f"{name}.{n}.step{STEPS}": v.detach().clone() for n, v in p.items()})
    fx.tensors.update({f"{name}.loss": losses, f"{name}.grad_norm": norms})
    fx.cases[name] = {"config": json.dumps({**BASE, **NANOCHAT_CONFIG}), **RATES, "max_norm": MAX_NORM}
    return [fx]
