"""GRPO losses, gradients and metrics from TRL itself, and CISPO/GRPO from MiniMind's code, for
tests/ops/test_policy_loss.cpp.

Writes tests/golden/grpo_trl.json. Re-run (needs torch and trl; not needed by `make test`):
    python3 -m venv /tmp/venv-dpo && /tmp/venv-dpo/bin/pip install torch trl
    /tmp/venv-dpo/bin/python tools/golden/grpo_trl_fixtures.py

TRL (checked with 1.16): GRPOTrainer._compute_loss(model, inputs) is called unchanged on a trainer
object holding only the attributes it reads, its _get_per_token_logps_and_entropies replaced by one
returning fixed per-token log-probs (a float64 leaf), with old and reference log-probs and
advantages given as the inputs TRL's generation step would make. loss_type grpo, bnpo, dr_grpo,
dapo and cispo, with beta 0 and 0.04, and one on-policy case (no old_per_token_logps). dapo's and
cispo's normaliser num_items_in_batch is the mask's total (one process, no accumulation). The
gradient is torch.autograd's through TRL's code w.r.t. the per-token log-probs; the metrics (kl,
clip_ratio/*, cispo_clip_ratio) are TRL's.

MiniMind (jingyaogong/minimind at d65ef2c00ebc6082f9df11541e1b191655eddb00, trainer/train_grpo.py,
the loss lines after the rollout): minimind_loss below copies them, loss_type cispo and grpo, each
aggregated per sequence then averaged as MiniMind does.
"""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace

import torch
import trl
from trl.trainer.grpo_trainer import GRPOTrainer

OUT = Path(__file__).resolve().parents[2] / "tests" / "golden" / "grpo_trl.json"


class Accelerator:  # one process
    device = torch.device("cpu")
    num_processes = 1
    sync_gradients = True

    def gather(self, x):
        return x

    gather_for_metrics = gather

    def reduce(self, x, reduction="sum"):
        return x


def trl_loss(logps, old, ref, advantages, mask, loss_type, beta, eps_low, eps_high, max_len):
    leaf = logps.clone().requires_grad_(True)
    trainer = GRPOTrainer.__new__(GRPOTrainer)  # no __init__: only what _compute_loss reads
    model = torch.nn.Linear(1, 1)
    model.train()
    attributes = dict(
        model=model, accelerator=Accelerator(), beta=beta, loss_type=loss_type, epsilon_low=eps_low,
        epsilon_high=eps_high, top_entropy_quantile=1.0, off_policy_mask_threshold=None,
        importance_sampling_level="token", use_vllm=False, vllm_importance_sampling_correction=False,
        current_gradient_accumulation_steps=1, max_completion_length=max_len, aux_loss_enabled=False,
        _entropy_bonus_enabled=False, _metrics={"train": defaultdict(list), "eval": defaultdict(list)},
        args=SimpleNamespace(use_bias_correction_kl=False, delta=None, steps_per_generation=1))
    for name, value in attributes.items():
        object.__setattr__(trainer, name, value)
    B, T = logps.shape
    object.__setattr__(trainer, "_get_per_token_logps_and_entropies",
                       lambda *a, **k: (leaf, torch.zeros(B, T, dtype=logps.dtype), None))
    inputs = {"prompt_ids": torch.zeros(B, 1, dtype=torch.long), "prompt_mask": torch.ones(B, 1, dtype=torch.long),
              "completion_ids": torch.zeros(B, T, dtype=torch.long), "completion_mask": mask.long(),
              "advantages": advantages, "num_items_in_batch": mask.sum()}
    if old is not None:
        inputs["old_per_token_logps"] = old
    if beta != 0.0:
        inputs["ref_per_token_logps"] = ref
    loss = GRPOTrainer._compute_loss(trainer, model, inputs)
    loss.backward()
    metrics = {k: v[-1] for k, v in trainer._metrics["train"].items()
               if k in ("kl", "clip_ratio/low_mean", "clip_ratio/high_mean", "clip_ratio/region_mean",
                        "cispo_clip_ratio")}
    return {"source": "trl", "loss_type": loss_type, "beta": beta, "epsilon_low": eps_low, "epsilon_high": eps_high,
            "on_policy": old is None, "loss": loss.item(), "grad": leaf.grad.tolist(), "metrics": metrics}


def minimind_loss(per_token_logps, old_per_token_logps, ref_per_token_logps, advantages, completion_mask,
                  loss_type, beta, epsilon, epsilon_high):
    per_token_logps = per_token_logps.clone().requires_grad_(True)
    leaf = per_token_logps
    # trainer/train_grpo.py at d65ef2c0, verbatim but for `args.`
    kl_div = ref_per_token_logps - per_token_logps
    per_token_kl = torch.exp(kl_div) - kl_div - 1  # [B*num_gen, R]
    ratio = torch.exp(per_token_logps - old_per_token_logps)  # [B*num_gen, R]
    if loss_type == "cispo":
        clamped_ratio = torch.clamp(ratio, max=epsilon_high).detach()
        per_token_loss = -(clamped_ratio * advantages.unsqueeze(1) * per_token_logps - beta * per_token_kl)
    else:
        clipped_ratio = torch.clamp(ratio, 1 - epsilon, 1 + epsilon)
        per_token_loss1 = ratio * advantages.unsqueeze(1)
        per_token_loss2 = clipped_ratio * advantages.unsqueeze(1)
        per_token_loss = -(torch.min(per_token_loss1, per_token_loss2) - beta * per_token_kl)
    policy_loss = ((per_token_loss * completion_mask).sum(dim=1) / completion_mask.sum(dim=1).clamp(min=1)).mean()
    policy_loss.backward()
    return {"source": "minimind", "loss_type": loss_type, "beta": beta, "epsilon_low": epsilon,
            "epsilon_high": epsilon_high if loss_type == "cispo" else epsilon, "on_policy": False,
            "loss": policy_loss.item(), "grad": leaf.grad.tolist(), "metrics": {}}


def main():
    torch.manual_seed(24)
    B, T = 6, 5  # two groups of three completions, padded to five tokens
    logps = -torch.rand(B, T, dtype=torch.float64) * 3 - 0.05
    old = logps + torch.randn(B, T, dtype=torch.float64) * 0.4  # some ratios leave [0.8, 1.28]
    ref = logps + torch.randn(B, T, dtype=torch.float64) * 0.5
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 0, 0, 0, 0],
                         [1, 1, 1, 1, 0], [1, 1, 0, 0, 0], [1, 1, 1, 1, 1]], dtype=torch.float64)
    advantages = torch.tensor([1.2, -0.4, -0.8, 0.0, 1.1, -1.1], dtype=torch.float64)
    cases = []
    for loss_type in ("grpo", "bnpo", "dr_grpo", "dapo", "cispo"):
        eps_high = 1.15 if loss_type == "cispo" else 0.28
        for beta in (0.0, 0.04):
            cases.append(trl_loss(logps, old, ref, advantages, mask, loss_type, beta, 0.2, eps_high, T))
    cases.append(trl_loss(logps, None, ref, advantages, mask, "grpo", 0.04, 0.2, 0.28, T))
    for loss_type, eps_high in (("cispo", 1.15), ("cispo", 5.0), ("grpo", None)):
        for beta in (0.0, 0.1):
            cases.append(minimind_loss(logps, old, ref, advantages, mask, loss_type, beta, 0.2, eps_high))
    doc = {"source": f"trl {trl.__version__} GRPOTrainer._compute_loss; minimind d65ef2c0 trainer/train_grpo.py; "
                     f"torch {torch.__version__}, float64",
           "logps": logps.tolist(), "old_logps": old.tolist(), "ref_logps": ref.tolist(), "mask": mask.tolist(),
           "advantages": advantages.tolist(), "max_completion_length": T, "cases": cases}
    tmp = OUT.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    tmp.replace(OUT)
    print(f"wrote {OUT}: {len(cases)} cases of {B} completions")


if __name__ == "__main__":
    main()
