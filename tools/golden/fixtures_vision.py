"""conv2d from F.conv2d over stride / padding / dilation / groups, and the ViT patch embedding of
reference 000 (section 4.4), written from its formula: unfold into P x P patches, flatten each as
(channel, row, column), project with a Linear."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from golden_common import Fixture, randn


def conv2d() -> Fixture:
    fx = Fixture("conv2d", seed=31,
                 description="F.conv2d(x, weight, bias, stride, padding, dilation, groups); "
                             "roles x, weight[, bias], out, grad_out, grad_x, grad_weight[, grad_bias]")

    def case(name, x_shape, w_shape, bias=True, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1,
             dtype=torch.float32):
        def op(x, weight, bias=None):
            return F.conv2d(x, weight, bias, stride, padding, dilation, groups)
        inputs = {"x": randn(*x_shape, dtype=dtype), "weight": randn(*w_shape, dtype=dtype, scale=0.5)}
        if bias:
            inputs["bias"] = randn(w_shape[0], dtype=dtype)
        fx.case(name, op, inputs, stride=list(stride), padding=list(padding), dilation=list(dilation), groups=groups)

    case("basic_pad1", (2, 3, 7, 6), (4, 3, 3, 3), padding=(1, 1))
    case("stride2_rect_kernel_no_bias", (2, 3, 8, 7), (5, 3, 3, 2), bias=False, stride=(2, 2), padding=(1, 2))
    case("dilation2", (1, 2, 9, 8), (3, 2, 3, 3), padding=(2, 2), dilation=(2, 2))
    case("groups2", (2, 4, 6, 6), (6, 2, 3, 3), stride=(1, 2), padding=(1, 1), groups=2)
    case("depthwise", (2, 3, 7, 7), (3, 1, 3, 3), stride=(2, 2), padding=(1, 1), groups=3)
    case("patchify_k4_s4", (2, 3, 8, 8), (5, 3, 4, 4), stride=(4, 4))
    case("mixed_f64", (2, 4, 7, 6), (4, 2, 2, 3), stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2,
         dtype=torch.float64)
    return fx


def patch_embed() -> Fixture:
    fx = Fixture("patch_embed", seed=32,
                 description="PatchEmbedding of reference 000: x (B, C, S, S) -> patches (B, (S/P)^2, C*P*P) "
                             "flattened as (channel, row, column) -> Linear; roles x, proj.weight, proj.bias, "
                             "out, grad_out and their grads")

    def case(name, batch, channels, img, patch, dim, dtype=torch.float32):
        def op(**t):
            x = t["x"]
            B, C = x.shape[:2]
            p = x.unfold(2, patch, patch).unfold(3, patch, patch)  # (B, C, S/P, S/P, P, P)
            p = p.contiguous().view(B, C, -1, patch, patch).permute(0, 2, 1, 3, 4).reshape(B, -1, C * patch * patch)
            return F.linear(p, t["proj.weight"], t["proj.bias"])
        fx.case(name, op, {"x": randn(batch, channels, img, img, dtype=dtype),
                           "proj.weight": randn(dim, channels * patch * patch, dtype=dtype, scale=0.2),
                           "proj.bias": randn(dim, dtype=dtype)},
                img_size=img, patch_size=patch, in_channels=channels, embed_dim=dim)

    case("img8_patch4", 2, 3, 8, 4, 5)
    case("img6_patch2", 1, 2, 6, 2, 4)
    return fx


def fixtures() -> list[Fixture]:
    return [conv2d(), patch_embed()]
