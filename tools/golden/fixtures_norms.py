"""Norms (LayerNorm, RMSNorm in both eps placements), the feed-forward activations (relu^2, the
SwiGLU gate) and the feed-forward modules of the reference documents, built in PyTorch with their
parameters as inputs so that the gradient of every parameter is stored."""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call

from golden_common import Fixture, randn, uniform

DTYPES = ((torch.float32, "f32"), (torch.float64, "f64"))


def module_case(fx: Fixture, case: str, module: nn.Module, x: torch.Tensor, **params) -> None:
    """A case running `module` on x with its parameters replaced by random inputs of the same
    names (roles "x" and each state-dict name), so the fixture holds every parameter's gradient."""
    module.eval()  # dropout off: the C++ side compares in eval mode
    weights = {name: randn(*p.shape, dtype=x.dtype, scale=0.5) for name, p in module.named_parameters()}
    module.to(x.dtype)

    def run(x, **w):
        return functional_call(module, w, (x,))

    fx.case(case, run, {"x": x, **weights}, parameters=sorted(weights), **params)


# ---- norms -----------------------------------------------------------------------------------

def rms_norm_rms_plus_eps(x, weight, eps):
    """Document 001's RMSNorm: x / (RMS(x) + eps) * gamma with RMS(x) = sqrt(mean(x^2))."""
    rms = x.pow(2).mean(-1, keepdim=True).sqrt()
    return x / (rms + eps) * weight


def layer_norm_std_plus_eps(x, weight, bias, eps):
    """Document 001's LayerNorm: gamma * (x - mu) / (sigma + eps) + beta, sigma the biased std."""
    mu = x.mean(-1, keepdim=True)
    sigma = (x - mu).pow(2).mean(-1, keepdim=True).sqrt()
    return weight * (x - mu) / (sigma + eps) + bias


def norms() -> Fixture:
    fx = Fixture("norms", seed=20,
                 description="nn.LayerNorm (affine or not, bias or not), nn.RMSNorm / F.rms_norm (rsqrt form, "
                             "weight or not) and document 001's x / (rms + eps) * weight over the last dim; "
                             "roles x[, weight][, bias], out, grad_out, grad_x[, grad_weight][, grad_bias]")
    for dtype, tag in DTYPES:
        def weight(n):
            return randn(n, dtype=dtype, scale=0.5) + 1.0

        # LayerNorm: nn.LayerNorm itself, with its parameters as inputs
        for name, n, kw in (("layernorm", 16, {}), ("layernorm_no_bias", 16, {"bias": False}),
                            ("layernorm_no_affine", 16, {"elementwise_affine": False}),
                            ("layernorm_wide", 100, {})):
            ln = nn.LayerNorm(n, **kw).to(dtype)
            inputs = {"x": randn(2, 3, n, dtype=dtype)}
            if ln.weight is not None:
                inputs["weight"] = weight(n)
            if ln.bias is not None:
                inputs["bias"] = randn(n, dtype=dtype, scale=0.5)

            def run_ln(x, ln=ln, **p):
                return functional_call(ln, p, (x,))

            fx.case(f"{name}_{tag}", run_ln, inputs, op="layer_norm", eps=ln.eps, dtype=str(dtype))
        # eps comparable to the variance (it must sit under the square root), and a mean of 10 (at 100
        # the f32 mean's own rounding puts torch and us 2e-5 apart; tests/ops/test_norm.cpp covers it)
        fx.case(f"layernorm_eps_{tag}", lambda x, weight, bias: F.layer_norm(x, (16,), weight, bias, eps=1e-2),
                {"x": randn(4, 16, dtype=dtype, scale=0.1), "weight": weight(16), "bias": randn(16, dtype=dtype)},
                op="layer_norm", eps=1e-2, dtype=str(dtype))
        fx.case(f"layernorm_offset_{tag}", lambda x, weight, bias: F.layer_norm(x, (16,), weight, bias),
                {"x": randn(4, 16, dtype=dtype) + 10.0, "weight": weight(16), "bias": randn(16, dtype=dtype)},
                op="layer_norm", eps=1e-5, dtype=str(dtype))

        # RMSNorm, rsqrt form: nn.RMSNorm with weight, F.rms_norm without (nanochat's norm(), default eps)
        for name, n in (("rmsnorm", 16), ("rmsnorm_wide", 100)):
            rn = nn.RMSNorm(n, eps=1e-6).to(dtype)

            def run_rn(x, rn=rn, **p):
                return functional_call(rn, p, (x,))

            fx.case(f"{name}_{tag}", run_rn, {"x": randn(2, 3, n, dtype=dtype), "weight": weight(n)},
                    op="rms_norm", form="rsqrt", eps=1e-6, dtype=str(dtype))
        fx.case(f"rmsnorm_no_weight_{tag}", lambda x: F.rms_norm(x, (x.size(-1),)), {"x": randn(2, 3, 16, dtype=dtype)},
                op="rms_norm", form="rsqrt", eps=torch.finfo(dtype).eps, dtype=str(dtype))
        fx.case(f"rmsnorm_eps_{tag}", lambda x, weight: F.rms_norm(x, (16,), weight, eps=1e-2),
                {"x": randn(4, 16, dtype=dtype, scale=0.1), "weight": weight(16)},
                op="rms_norm", form="rsqrt", eps=1e-2, dtype=str(dtype))

        # document 001's form, eps small and eps comparable to the rms
        for name, eps, scale in (("rmsnorm_rms_plus_eps", 1e-6, 1.0), ("rmsnorm_rms_plus_eps_large_eps", 1e-1, 0.3)):
            fx.case(f"{name}_{tag}", lambda x, weight, eps=eps: rms_norm_rms_plus_eps(x, weight, eps),
                    {"x": randn(2, 3, 16, dtype=dtype, scale=scale), "weight": weight(16)},
                    op="rms_norm", form="rms_plus_eps", eps=eps, dtype=str(dtype))
    # document 001's LayerNorm, eps outside the square root (after the loop: earlier draws unchanged)
    for dtype, tag in DTYPES:
        for name, eps, scale in (("layernorm_std_plus_eps", 1e-5, 1.0), ("layernorm_std_plus_eps_large_eps", 1e-1, 0.3)):
            fx.case(f"{name}_{tag}", lambda x, weight, bias, eps=eps: layer_norm_std_plus_eps(x, weight, bias, eps),
                    {"x": randn(2, 3, 16, dtype=dtype, scale=scale), "weight": randn(16, dtype=dtype, scale=0.5) + 1.0,
                     "bias": randn(16, dtype=dtype, scale=0.5)},
                    op="layer_norm", form="std_plus_eps", eps=eps, dtype=str(dtype))
    return fx


# ---- activations -----------------------------------------------------------------------------

def mlp_activations() -> Fixture:
    fx = Fixture("mlp_activations", seed=21,
                 description="relu_squared(x) = F.relu(x).square() on x (4, 37); swiglu(gate, up) = "
                             "F.silu(gate) * up on (4, 37) with gate over [-20, 20]; roles x | gate, up, out, "
                             "grad_out, grad_x | grad_gate, grad_up")
    for dtype, tag in DTYPES:
        fx.case(f"relu_squared_{tag}", lambda x: F.relu(x).square(), {"x": randn(4, 37, dtype=dtype, scale=2.0)},
                op="relu_squared", dtype=str(dtype))
        fx.case(f"swiglu_{tag}", lambda gate, up: F.silu(gate) * up,
                {"gate": uniform(4, 37, low=-20.0, high=20.0, dtype=dtype), "up": randn(4, 37, dtype=dtype)},
                op="swiglu", dtype=str(dtype))
    return fx


# ---- feed-forward modules --------------------------------------------------------------------

class FeedForwardNetwork(nn.Module):
    """Documents 001/004: x -> linear1 -> relu -> dropout -> linear2."""

    def __init__(self, dim, hidden, bias=True, dropout=0.1):
        super().__init__()
        self.linear1 = nn.Linear(dim, hidden, bias=bias)
        self.linear2 = nn.Linear(hidden, dim, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.linear2(self.dropout(F.relu(self.linear1(x))))


class GeluMLP(nn.Module):
    """GPT-2 (document 000's block MLP): c_fc -> gelu -> c_proj -> dropout."""

    def __init__(self, dim, hidden, approximate, bias=True, dropout=0.1):
        super().__init__()
        self.c_fc = nn.Linear(dim, hidden, bias=bias)
        self.c_proj = nn.Linear(hidden, dim, bias=bias)
        self.act = nn.GELU(approximate=approximate)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.act(self.c_fc(x))))


class MiniMindFeedForward(nn.Module):
    """Document 002: w2(silu(w1 x) * w3 x), hidden = multiple_of * ceil(int(8 dim / 3) / multiple_of)."""

    def __init__(self, dim, hidden, bias=False, dropout=0.1):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=bias)
        self.w2 = nn.Linear(hidden, dim, bias=bias)
        self.w3 = nn.Linear(dim, hidden, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(self.w2(F.silu(self.w1(x)) * self.w3(x)))


class NanochatMLP(nn.Module):
    """Document 003: c_proj(relu(c_fc x)^2), 4 dim hidden, no bias."""

    def __init__(self, dim, hidden, bias=False):
        super().__init__()
        self.c_fc = nn.Linear(dim, hidden, bias=bias)
        self.c_proj = nn.Linear(hidden, dim, bias=bias)

    def forward(self, x):
        return self.c_proj(F.relu(self.c_fc(x)).square())


def minimind_hidden(dim: int, multiple_of: int) -> int:
    hidden = int(2 * 4 * dim / 3)
    return multiple_of * math.ceil(hidden / multiple_of)


def mlp() -> Fixture:
    fx = Fixture("mlp", seed=22,
                 description="feed-forward modules with their reference parameter names, run in eval mode on "
                             "x (2, 3, dim) with random parameters; roles x and the state-dict names, out, "
                             "grad_out, grad_x and grad_<parameter>; params: kind, dim, hidden (0 = derived), "
                             "multiple_of, bias")
    dim = 10
    for dtype, tag in ((torch.float32, "f32"),):  # modules hold f32 parameters
        x = randn(2, 3, dim, dtype=dtype)
        module_case(fx, f"relu_{tag}", FeedForwardNetwork(dim, 4 * dim), x,
                    kind="relu", dim=dim, hidden=0, multiple_of=64, bias=True, dropout=0.1)
        module_case(fx, f"relu_hidden_{tag}", FeedForwardNetwork(dim, 24, bias=False), x,
                    kind="relu", dim=dim, hidden=24, multiple_of=64, bias=False, dropout=0.1)
        module_case(fx, f"gelu_{tag}", GeluMLP(dim, 4 * dim, "none"), x,
                    kind="gelu", dim=dim, hidden=0, multiple_of=64, bias=True, dropout=0.1)
        module_case(fx, f"gelu_tanh_{tag}", GeluMLP(dim, 4 * dim, "tanh"), x,
                    kind="gelu_tanh", dim=dim, hidden=0, multiple_of=64, bias=True, dropout=0.1)
        module_case(fx, f"swiglu_{tag}", MiniMindFeedForward(dim, minimind_hidden(dim, 8)), x,
                    kind="swiglu", dim=dim, hidden=0, multiple_of=8, bias=False, dropout=0.1,
                    derived_hidden=minimind_hidden(dim, 8))
        module_case(fx, f"swiglu_bias_{tag}", MiniMindFeedForward(dim, 20, bias=True), x,
                    kind="swiglu", dim=dim, hidden=20, multiple_of=64, bias=True, dropout=0.0)
        module_case(fx, f"relu2_{tag}", NanochatMLP(dim, 4 * dim), x,
                    kind="relu2", dim=dim, hidden=0, multiple_of=64, bias=False, dropout=0.0)
    return fx


def fixtures() -> list[Fixture]:
    return [norms(), mlp_activations(), mlp()]
