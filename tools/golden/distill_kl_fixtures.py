"""Distillation loss and its gradient w.r.t. the student logits from PyTorch, for
tests/ops/test_distillation_loss.cpp.

Writes tests/golden/distill_kl.json. Re-run (needs torch only; not needed by `make test`):
    python3 -m venv /tmp/venv && /tmp/venv/bin/pip install torch
    /tmp/venv/bin/python tools/golden/distill_kl_fixtures.py

MiniMind's trainer/train_distillation.py (jingyaogong/minimind at d65ef2c0) on the rows whose
target is kept (target != -100):
    ce  = F.cross_entropy(s, y) over the kept rows (their mean)
    kl  = F.kl_div(F.log_softmax(s / T), softmax(t / T), reduction="batchmean") over the kept rows
    loss = alpha * ce + (1 - alpha) * T^2 * kl
Here the KL is taken with log_target=True on log_softmax(t / T) (the same value; the teacher's
log-probs without the round trip through probabilities). batchmean divides the sum by the kept rows.
Logits are float64, drawn once from a fixed seed; the gradients are torch.autograd's.
"""
from __future__ import annotations

import json
from pathlib import Path

import torch
import torch.nn.functional as F

OUT = Path(__file__).resolve().parents[2] / "tests" / "golden" / "distill_kl.json"
IGNORE = -100


def main() -> None:
    gen = torch.Generator().manual_seed(24)
    rows, vocab = 5, 7
    student = (torch.randn(rows, vocab, generator=gen, dtype=torch.float64) * 3).tolist()
    # one row of large logits, so that a log-softmax without the max shift would overflow
    teacher = torch.randn(rows, vocab, generator=gen, dtype=torch.float64) * 3
    teacher[4] += 500.0
    teacher = teacher.tolist()
    targets = [3, IGNORE, 0, 6, 2]  # row 1 is masked
    cases = []
    for temperature in (1.0, 1.5, 4.0, 0.5):
        for alpha in (0.0, 0.5, 0.9, 1.0):
            s = torch.tensor(student, dtype=torch.float64, requires_grad=True)
            t = torch.tensor(teacher, dtype=torch.float64)
            y = torch.tensor(targets)
            keep = y != IGNORE
            ce = F.cross_entropy(s, y, ignore_index=IGNORE)
            kl = F.kl_div(F.log_softmax(s[keep] / temperature, dim=-1), F.log_softmax(t[keep] / temperature, dim=-1),
                          log_target=True, reduction="batchmean")
            loss = alpha * ce + (1 - alpha) * temperature**2 * kl
            loss.backward()
            cases.append({
                "temperature": temperature,
                "alpha": alpha,
                "loss": loss.item(),
                "ce": ce.item(),
                "kl": kl.item(),
                "grad_student": s.grad.flatten().tolist(),
            })
    # the KL alone per row (reduction none, summed over the vocabulary), every row kept, T = 2
    s = torch.tensor(student, dtype=torch.float64)
    t = torch.tensor(teacher, dtype=torch.float64)
    per_row = F.kl_div(F.log_softmax(s / 2, dim=-1), F.log_softmax(t / 2, dim=-1), log_target=True,
                       reduction="none").sum(-1)
    doc = {
        "source": f"torch {torch.__version__}: F.kl_div(log_target=True), F.cross_entropy; tools/golden/distill_kl_fixtures.py",
        "rows": rows,
        "vocab": vocab,
        "student": [x for row in student for x in row],
        "teacher": [x for row in teacher for x in row],
        "targets": targets,
        "cases": cases,
        "kl_per_row_t2": per_row.tolist(),
    }
    OUT.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {OUT} ({len(cases)} cases)")


if __name__ == "__main__":
    main()
