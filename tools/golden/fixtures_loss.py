"""cross_entropy with every reduction, ignored rows and a custom ignore_index."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from golden_common import Fixture, randn


def fixtures() -> list[Fixture]:
    fx = Fixture("cross_entropy", seed=3,
                 description="cross_entropy(logits (N, C), target (N) i64, ignore_index, reduction); "
                             "roles logits, target, out, grad_out, grad_logits")
    n, c = 6, 5
    # rows 1 and 4 carry ignore_index -100: they add nothing to the loss, the mean divides by 4
    target = torch.tensor([3, -100, 0, 4, -100, 1], dtype=torch.int64)
    for reduction in ("mean", "sum", "none"):
        logits = randn(n, c, scale=2.0)
        fx.case(f"f32_{reduction}",
                lambda logits, target, reduction=reduction: F.cross_entropy(logits, target, reduction=reduction),
                {"logits": logits, "target": target}, ignore_index=-100, reduction=reduction)
    # a class index used as ignore_index: every row whose target is 2 is skipped
    target2 = torch.tensor([2, 0, 2, 1, 4, 3], dtype=torch.int64)
    fx.case("f32_ignore_class2_mean",
            lambda logits, target: F.cross_entropy(logits, target, ignore_index=2),
            {"logits": randn(n, c, scale=2.0), "target": target2}, ignore_index=2, reduction="mean")
    fx.case("f32_large_logits_mean", lambda logits, target: F.cross_entropy(logits, target),
            {"logits": randn(n, c, scale=40.0), "target": torch.tensor([0, 1, 2, 3, 4, 0])},
            ignore_index=-100, reduction="mean")
    fx.case("f64_mean", lambda logits, target: F.cross_entropy(logits, target),
            {"logits": randn(n, c, dtype=torch.float64, scale=2.0), "target": target},
            ignore_index=-100, reduction="mean")
    return [fx]
