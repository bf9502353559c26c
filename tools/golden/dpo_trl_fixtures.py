"""DPO and IPO losses, rewards and gradients from TRL itself, for tests/ops/test_preference_loss.cpp.

Writes tests/golden/dpo_trl.json. Re-run (needs torch and trl; not needed by `make test`):
    python3 -m venv /tmp/venv-dpo && /tmp/venv-dpo/bin/pip install torch trl
    /tmp/venv-dpo/bin/python tools/golden/dpo_trl_fixtures.py

TRL (checked with 1.16) has no standalone dpo_loss any more: the loss is computed inline in
DPOTrainer._compute_loss(model, inputs, return_outputs). This script calls that method unchanged
on a trainer object holding only the attributes it reads, with a stub model whose forward returns,
as TRL's fused LM head does, per-token log-probs: one completion token per row whose log-prob is
the row's summed log-prob (so IPO's division by the completion length, which TRL adds and the IPO
paper does not, divides by 1), and precomputed reference log-probs (precompute_ref_logps). The
gradients are torch.autograd's through TRL's code w.r.t. the four log-prob vectors. Per-pair
rewards are beta * (logp - ref_logp), as TRL computes them before averaging them into its metrics;
the metrics' means (rewards/chosen, rewards/rejected, rewards/margins, rewards/accuracies) are TRL's.
"""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace

import torch
import trl
from trl.trainer.dpo_trainer import DPOTrainer

OUT = Path(__file__).resolve().parents[2] / "tests" / "golden" / "dpo_trl.json"


class Accelerator:  # one process: gathering is the identity
    device = torch.device("cpu")

    def gather(self, x):
        return x

    gather_for_metrics = gather

    def unwrap_model(self, model):
        return model


class LogProbModel(torch.nn.Module):
    """Stands for the policy: its 'forward' returns the given per-row log-probs as one token each."""

    def __init__(self, logps):
        super().__init__()
        self.logps = logps  # (2B,), chosen rows then rejected rows (TRL's batch order)

    def forward(self, **kwargs):
        rows = self.logps.shape[0]
        per_token = self.logps.unsqueeze(1)  # (2B, 1): the completion's only token
        zeros = torch.zeros(rows, 1, dtype=self.logps.dtype)
        return SimpleNamespace(log_probs=per_token, entropy=zeros, mean_logits=zeros,
                               is_top1=torch.zeros(rows, 1, dtype=torch.bool), aux_loss=None)


def trl_dpo(pi_chosen, pi_rejected, ref_chosen, ref_rejected, beta, loss_type):
    leaves = [t.clone().requires_grad_(True) for t in (pi_chosen, pi_rejected, ref_chosen, ref_rejected)]
    pc, pr, rc, rr = leaves
    trainer = DPOTrainer.__new__(DPOTrainer)  # no __init__: only what _compute_loss reads
    model = LogProbModel(torch.cat([pc, pr]))
    model.train()
    attributes = dict(model=model, accelerator=Accelerator(), beta=beta, loss_types=[loss_type], loss_weights=[1.0],
                      f_divergence_type="reverse_kl", ld_alpha=None, precompute_ref_logps=True,
                      aux_loss_enabled=False, use_weighting=False, label_smoothing=0.0,
                      _metrics={"train": defaultdict(list), "eval": defaultdict(list)}, _total_train_tokens=0,
                      _tp_size=1, args=SimpleNamespace(gradient_checkpointing_kwargs=None))
    for name, value in attributes.items():
        object.__setattr__(trainer, name, value)
    rows = 2 * pc.shape[0]
    inputs = {"input_ids": torch.zeros(rows, 2, dtype=torch.long), "attention_mask": torch.ones(rows, 2),
              "completion_mask": torch.tensor([[0, 1]] * rows), "ref_chosen_logps": rc, "ref_rejected_logps": rr}
    loss = DPOTrainer._compute_loss(trainer, model, inputs, return_outputs=False)
    loss.backward()
    metrics = {k: v[-1] for k, v in trainer._metrics["train"].items()
               if k in ("rewards/chosen", "rewards/rejected", "rewards/margins", "rewards/accuracies")}
    return {
        "beta": beta,
        "loss_type": loss_type,
        "loss": loss.item(),
        "chosen_rewards": (beta * (pi_chosen - ref_chosen)).tolist(),
        "rejected_rewards": (beta * (pi_rejected - ref_rejected)).tolist(),
        "grad_pi_chosen": pc.grad.tolist(),
        "grad_pi_rejected": pr.grad.tolist(),
        "grad_ref_chosen": rc.grad.tolist(),
        "grad_ref_rejected": rr.grad.tolist(),
        "metrics": metrics,
    }


def main():
    torch.manual_seed(24)
    pairs = 7
    # summed response log-probs: tens of nats, as for real responses; the last pair has z = 0 and
    # the one before a margin so large the sigmoid saturates
    pi_chosen = -torch.rand(pairs, dtype=torch.float64) * 40 - 1
    pi_rejected = -torch.rand(pairs, dtype=torch.float64) * 40 - 1
    ref_chosen = pi_chosen + torch.randn(pairs, dtype=torch.float64) * 3
    ref_rejected = pi_rejected + torch.randn(pairs, dtype=torch.float64) * 3
    pi_rejected[-2] = ref_rejected[-2] - 150.0
    pi_chosen[-1], pi_rejected[-1] = ref_chosen[-1] + 2.5, ref_rejected[-1] + 2.5
    cases = [trl_dpo(pi_chosen, pi_rejected, ref_chosen, ref_rejected, beta, loss_type)
             for loss_type in ("sigmoid", "ipo") for beta in (0.1, 0.5)]
    doc = {"source": f"trl {trl.__version__} DPOTrainer._compute_loss, torch {torch.__version__}, float64",
           "pi_chosen": pi_chosen.tolist(), "pi_rejected": pi_rejected.tolist(),
           "ref_chosen": ref_chosen.tolist(), "ref_rejected": ref_rejected.tolist(), "cases": cases}
    tmp = OUT.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    tmp.replace(OUT)
    print(f"wrote {OUT}: {len(cases)} cases of {pairs} pairs")


if __name__ == "__main__":
    main()
