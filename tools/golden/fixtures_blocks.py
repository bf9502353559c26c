"""Transformer blocks as the reference documents write them, and as PyTorch's own layers compute
them, with every parameter an input (so the gradients of all of them are checked).

Parameter roles carry nanoformer's dotted names (e.g. "attn.q_proj.weight"); the C++ test loads
them into the block by name. Blocks:
  gpt2        000's GPT2Block: pre-norm LayerNorm, causal MHA with biases, Linear-GELU-Linear (4d)
  minimind    002's MiniMindBlock: pre-norm RMSNorm, GQA with interleaved RoPE (theta 1e6), SwiGLU
  nanochat    003's Block: parameter-free F.rms_norm, rotary by -theta (half split), QK norm, MQA,
              relu^2 MLP, no biases
  encoder     torch.nn.TransformerEncoderLayer (post-norm, ReLU FFN) with a key padding mask
  decoder     torch.nn.TransformerDecoderLayer (post-norm) with causal self-attention, a memory
              padding mask and cross-attention
  sandwich    001's Sandwich-Norm: x + LN(Sublayer(LN(x)))
  deepnorm    001's DeepNorm: LN(alpha x + Sublayer(x)), alpha = (2N)^(1/4) for N = 6 layers
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from golden_common import Fixture, randn

B, T, D, H = 2, 5, 16, 4


def linear_params(name: str, fan_in: int, fan_out: int, bias: bool) -> dict[str, torch.Tensor]:
    p = {f"{name}.weight": randn(fan_out, fan_in, scale=1 / math.sqrt(fan_in))}
    if bias:
        p[f"{name}.bias"] = randn(fan_out, scale=0.1)
    return p


def norm_params(name: str, bias: bool) -> dict[str, torch.Tensor]:
    p = {f"{name}.weight": 1 + randn(D, scale=0.1)}
    if bias:
        p[f"{name}.bias"] = randn(D, scale=0.1)
    return p


def attn_params(name: str, n_heads: int, n_kv: int, bias: bool) -> dict[str, torch.Tensor]:
    hd = D // n_heads
    p = {}
    p.update(linear_params(f"{name}.q_proj", D, n_heads * hd, bias))
    p.update(linear_params(f"{name}.k_proj", D, n_kv * hd, bias))
    p.update(linear_params(f"{name}.v_proj", D, n_kv * hd, bias))
    p.update(linear_params(f"{name}.o_proj", n_heads * hd, D, bias))
    return p


def lin(p, name, x):
    return F.linear(x, p[f"{name}.weight"], p.get(f"{name}.bias"))


def attention(p, name, x, n_heads, n_kv, causal, ctx=None, rotate=None, qk_norm=False, key_padding=None):
    """(B, T, D) -> (B, T, D): project, split heads, rotate, attend (softmax(q k^T / sqrt(hd)) v), merge."""
    ctx = x if ctx is None else ctx
    b, t, _ = x.shape
    s = ctx.shape[1]
    hd = D // n_heads
    q = lin(p, f"{name}.q_proj", x).view(b, t, n_heads, hd)
    k = lin(p, f"{name}.k_proj", ctx).view(b, s, n_kv, hd)
    v = lin(p, f"{name}.v_proj", ctx).view(b, s, n_kv, hd)
    if rotate is not None:
        q, k = rotate(q), rotate(k)
    if qk_norm:
        q, k = F.rms_norm(q, (hd,)), F.rms_norm(k, (hd,))
    q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
    k = k.repeat_interleave(n_heads // n_kv, dim=1)
    v = v.repeat_interleave(n_heads // n_kv, dim=1)
    scores = q @ k.transpose(-1, -2) / math.sqrt(hd)
    if causal:
        scores = scores + torch.triu(torch.full((t, s), float("-inf"), dtype=x.dtype), diagonal=1)
    if key_padding is not None:  # (B, S) true = real token
        scores = scores.masked_fill(~key_padding[:, None, None, :], float("-inf"))
    y = torch.softmax(scores, dim=-1) @ v
    return lin(p, f"{name}.o_proj", y.transpose(1, 2).reshape(b, t, n_heads * hd))


def rope_interleaved(theta: float):
    """002: pairs (x[2i], x[2i+1]) as complex numbers times e^(i m theta^(-2i/d))."""
    def rotate(x):  # (B, T, H, hd)
        hd = x.shape[-1]
        freqs = 1.0 / (theta ** (torch.arange(0, hd, 2)[: hd // 2].double() / hd))
        angles = torch.outer(torch.arange(x.shape[1]).double(), freqs)
        cis = torch.polar(torch.ones_like(angles), angles).to(torch.complex64)
        xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
        return torch.view_as_real(xc * cis[None, :, None, :]).flatten(3).type_as(x)
    return rotate


def rope_half_negative(theta: float):
    """003: x1, x2 = halves; y1 = x1 cos + x2 sin, y2 = -x1 sin + x2 cos."""
    def rotate(x):
        hd = x.shape[-1]
        inv = 1.0 / (theta ** (torch.arange(0, hd, 2).double() / hd))
        angles = torch.outer(torch.arange(x.shape[1]).double(), inv).float()
        cos, sin = angles.cos()[None, :, None, :], angles.sin()[None, :, None, :]
        d = hd // 2
        x1, x2 = x[..., :d], x[..., d:]
        return torch.cat([x1 * cos + x2 * sin, x1 * (-sin) + x2 * cos], 3)
    return rotate


def layer_norm(p, name, x, eps=1e-5):
    return F.layer_norm(x, (D,), p[f"{name}.weight"], p.get(f"{name}.bias"), eps)


def rms_norm(p, name, x, eps=1e-5):
    return p[f"{name}.weight"] * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def gpt2(fx: Fixture) -> None:
    p = {**norm_params("attn_norm", True), **attn_params("attn", H, H, True),
         **norm_params("mlp_norm", True), **linear_params("mlp.c_fc", D, 4 * D, True),
         **linear_params("mlp.c_proj", 4 * D, D, True)}

    def block(x, **p):
        x = x + attention(p, "attn", layer_norm(p, "attn_norm", x), H, H, causal=True)
        return x + lin(p, "mlp.c_proj", F.gelu(lin(p, "mlp.c_fc", layer_norm(p, "mlp_norm", x))))

    fx.case("gpt2", block, {"x": randn(B, T, D), **p}, n_heads=H)


def minimind(fx: Fixture) -> None:
    n_kv, hidden = 2, 48  # hidden = 8 * ceil(int(2 * 4 * 16 / 3) / 8)
    p = {**norm_params("attn_norm", False), **attn_params("attn", H, n_kv, False),
         **norm_params("mlp_norm", False), **linear_params("mlp.w1", D, hidden, False),
         **linear_params("mlp.w2", hidden, D, False), **linear_params("mlp.w3", D, hidden, False)}

    def block(x, **p):
        h = x + attention(p, "attn", rms_norm(p, "attn_norm", x), H, n_kv, causal=True, rotate=rope_interleaved(1e6))
        f = rms_norm(p, "mlp_norm", h)
        return h + lin(p, "mlp.w2", F.silu(lin(p, "mlp.w1", f)) * lin(p, "mlp.w3", f))

    fx.case("minimind", block, {"x": randn(B, T, D), **p}, n_heads=H, n_kv_heads=n_kv, hidden=hidden, multiple_of=8)


def nanochat(fx: Fixture) -> None:
    p = {**attn_params("attn", H, 1, False), **linear_params("mlp.c_fc", D, 4 * D, False),
         **linear_params("mlp.c_proj", 4 * D, D, False)}

    def norm(x):
        return F.rms_norm(x, (x.size(-1),))

    def block(x, **p):
        x = x + attention(p, "attn", norm(x), H, 1, causal=True, rotate=rope_half_negative(10000.0), qk_norm=True)
        return x + lin(p, "mlp.c_proj", F.relu(lin(p, "mlp.c_fc", norm(x))).square())

    fx.case("nanochat", block, {"x": randn(B, T, D), **p}, n_heads=H, n_kv_heads=1)


def torch_layer_params(layer: nn.Module, rename: dict[str, str]) -> dict[str, torch.Tensor]:
    """A PyTorch layer's state dict in our names: in_proj_* split into q/k/v."""
    out = {}
    for name, t in layer.state_dict().items():
        prefix, _, leaf = name.rpartition(".")
        if leaf.startswith("in_proj_"):
            kind = leaf[len("in_proj_"):]
            for part, chunk in zip(("q_proj", "k_proj", "v_proj"), t.chunk(3, 0)):
                out[f"{rename[prefix]}.{part}.{kind}"] = chunk.clone()
        else:
            out[f"{rename[prefix]}.{leaf}"] = t.clone()
    return out


def load_into(layer: nn.Module, rename: dict[str, str], p: dict[str, torch.Tensor]) -> None:
    """Writes our-named tensors p (leaves) back as the layer's parameters, keeping the graph."""
    for name, mod in layer.named_modules():
        if isinstance(mod, nn.MultiheadAttention):
            ours = rename[name]
            del mod.in_proj_weight, mod.in_proj_bias
            mod.in_proj_weight = torch.cat([p[f"{ours}.{x}_proj.weight"] for x in "qkv"])
            mod.in_proj_bias = torch.cat([p[f"{ours}.{x}_proj.bias"] for x in "qkv"])
            del mod.out_proj.weight, mod.out_proj.bias
            mod.out_proj.weight = p[f"{ours}.o_proj.weight"]
            mod.out_proj.bias = p[f"{ours}.o_proj.bias"]
        elif isinstance(mod, (nn.Linear, nn.LayerNorm)) and name in rename and not name.endswith("out_proj"):
            del mod.weight, mod.bias
            mod.weight = p[f"{rename[name]}.weight"]
            mod.bias = p[f"{rename[name]}.bias"]


ENCODER_NAMES = {"self_attn": "attn", "self_attn.out_proj": "attn.o_proj", "linear1": "mlp.linear1",
                 "linear2": "mlp.linear2", "norm1": "attn_norm", "norm2": "mlp_norm"}
DECODER_NAMES = {"self_attn": "attn", "self_attn.out_proj": "attn.o_proj",
                 "multihead_attn": "cross_attn", "multihead_attn.out_proj": "cross_attn.o_proj",
                 "linear1": "mlp.linear1", "linear2": "mlp.linear2",
                 "norm1": "attn_norm", "norm2": "cross_attn_norm", "norm3": "mlp_norm"}


def encoder(fx: Fixture) -> None:
    layer = nn.TransformerEncoderLayer(D, H, dim_feedforward=2 * D, dropout=0.0, batch_first=True)
    layer.eval()
    p = torch_layer_params(layer, ENCODER_NAMES)
    padding = torch.tensor([[True] * T, [True] * (T - 2) + [False] * 2])

    def block(x, key_padding, **p):
        load_into(layer, ENCODER_NAMES, p)
        return layer(x, src_key_padding_mask=~key_padding)

    fx.case("encoder", block, {"x": randn(B, T, D), "key_padding": padding, **p}, n_heads=H, ffn=2 * D)


def decoder(fx: Fixture) -> None:
    layer = nn.TransformerDecoderLayer(D, H, dim_feedforward=2 * D, dropout=0.0, batch_first=True)
    layer.eval()
    p = torch_layer_params(layer, DECODER_NAMES)
    S = 6
    memory_padding = torch.tensor([[True] * S, [True] * (S - 3) + [False] * 3])

    def block(x, memory, memory_padding, **p):
        load_into(layer, DECODER_NAMES, p)
        causal = nn.Transformer.generate_square_subsequent_mask(T)
        return layer(x, memory, tgt_mask=causal, memory_key_padding_mask=~memory_padding)

    fx.case("decoder", block, {"x": randn(B, T, D), "memory": randn(B, S, D), "memory_padding": memory_padding, **p},
            n_heads=H, ffn=2 * D)


def sandwich_and_deepnorm(fx: Fixture) -> None:
    def sublayers(p, x, norm_in):
        return (lambda h: attention(p, "attn", norm_in("attn_norm", h), H, H, causal=True),
                lambda h: lin(p, "mlp.c_proj", F.gelu(lin(p, "mlp.c_fc", norm_in("mlp_norm", h)))))

    base = {**norm_params("attn_norm", True), **attn_params("attn", H, H, True),
            **norm_params("mlp_norm", True), **linear_params("mlp.c_fc", D, 4 * D, True),
            **linear_params("mlp.c_proj", 4 * D, D, True)}
    p = {**base, **norm_params("attn_out_norm", True), **norm_params("mlp_out_norm", True)}

    def sandwich(x, **p):  # x + LN_out(f(LN_in(x)))
        attn, mlp = sublayers(p, x, lambda n, h: layer_norm(p, n, h))
        x = x + layer_norm(p, "attn_out_norm", attn(x))
        return x + layer_norm(p, "mlp_out_norm", mlp(x))

    fx.case("sandwich", sandwich, {"x": randn(B, T, D), **p}, n_heads=H)

    n_layers = 6
    alpha = (2 * n_layers) ** 0.25
    p = dict(base)

    def deepnorm(x, **p):  # LN(alpha x + f(x))
        attn, mlp = sublayers(p, x, lambda n, h: h)
        x = layer_norm(p, "attn_norm", alpha * x + attn(x))
        return layer_norm(p, "mlp_norm", alpha * x + mlp(x))

    fx.case("deepnorm", deepnorm, {"x": randn(B, T, D), **p}, n_heads=H, n_layers=n_layers, alpha=alpha)


def fixtures() -> list[Fixture]:
    fx = Fixture("blocks", seed=40, description=__doc__.splitlines()[0])
    for build in (gpt2, minimind, nanochat, encoder, decoder, sandwich_and_deepnorm):
        build(fx)
    return [fx]
