"""Positional encodings: rotary embedding in three layouts with position interpolation and NTK
scaling, sinusoidal and learned absolute positions, ALiBi, T5's bucketed bias and Transformer-XL's
relative score.

Oracles: Hugging Face's own functions where they exist (LLaMA's rotary embedding and
apply_rotary_pos_emb, BLOOM's build_alibi_tensor, T5's _relative_position_bucket); elsewhere
PyTorch written from the reference documents (002's complex-pair RoPE, 003's nanochat rotary,
004's sinusoidal table, 001's Transformer-XL score written out term by term).

Angles and tables are computed in float64 and rounded to the case's dtype, as the C++ side does, so
f32 cases compare the rotation itself; the tables are checked against Hugging Face's float32 ones.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from golden_common import Fixture, randn
from transformers import LlamaConfig
from transformers.models.bloom.modeling_bloom import build_alibi_tensor
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb
from transformers.models.t5.modeling_t5 import T5Attention

ROPE_SHAPE = (2, 2, 4, 8)  # (B, H, T, D)
ROPE_MAX_LEN = 16


def store(fixture: Fixture, case: str, tensors: dict[str, torch.Tensor], **params) -> None:
    """A case without gradients (a bias that depends on nothing learnable, bucket tables)."""
    if case in fixture.cases:
        raise ValueError(f"{fixture.name}: case {case!r} defined twice")
    for role, t in tensors.items():
        fixture.tensors[f"{case}.{role}"] = t.detach().contiguous().clone()
    fixture.cases[case] = params


# ---- RoPE -------------------------------------------------------------------------------------

def rope_angles(positions: torch.Tensor, head_dim: int, theta: float, scaling: str, factor: float) -> torch.Tensor:
    """angle(t, i) = (t / s) theta^(-2i/D) for linear scaling (position interpolation);
    theta' = theta s^(D/(D-2)) for NTK-aware scaling. float64, (len(positions), D/2)."""
    if scaling == "ntk":
        theta = theta * factor ** (head_dim / (head_dim - 2))
    divisor = factor if scaling == "linear" else 1.0
    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    return torch.outer(positions.to(torch.float64) / divisor, inv_freq)


def check_against_hf_tables(head_dim: int, theta: float, scaling: str, factor: float) -> None:
    """Our angle formula gives LLaMA's float32 cos/sin (default and linear rope types)."""
    if scaling == "ntk":
        return  # HF's "dynamic" NTK rescales with the sequence length; the fixed form is checked by formula
    params = {"rope_type": "linear" if scaling == "linear" else "default", "rope_theta": theta}
    if scaling == "linear":
        params["factor"] = factor
    config = LlamaConfig(hidden_size=head_dim * 3, num_attention_heads=3, head_dim=head_dim,
                         max_position_embeddings=ROPE_MAX_LEN, rope_parameters=params)
    positions = torch.arange(ROPE_MAX_LEN)
    hf_cos, hf_sin = LlamaRotaryEmbedding(config)(torch.zeros(1, 1, dtype=torch.float32), positions[None])
    angles = rope_angles(positions, head_dim, theta, scaling, factor)
    ours = torch.cat([angles, angles], dim=-1)
    torch.testing.assert_close(hf_cos[0].double(), ours.cos(), atol=2e-6, rtol=0)
    torch.testing.assert_close(hf_sin[0].double(), ours.sin(), atol=2e-6, rtol=0)


def rope_half_hf(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """LLaMA: x cos + rotate_half(x) sin with full-width (T, D) tables, x (B, H, T, D)."""
    full_cos = torch.cat([cos, cos], dim=-1)[None].expand(x.shape[0], -1, -1)
    full_sin = torch.cat([sin, sin], dim=-1)[None].expand(x.shape[0], -1, -1)
    q_embed, _ = apply_rotary_pos_emb(x, x, full_cos, full_sin, unsqueeze_dim=1)
    return q_embed


def rope_interleaved_002(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """002 (MiniMind): channel pairs as complex numbers times pos_cis, on (B, T, H, D)."""
    xt = x.transpose(1, 2)
    pos_cis = torch.complex(cos, sin)  # polar(1, angle), from the rounded tables
    xc = torch.view_as_complex(xt.reshape(*xt.shape[:-1], -1, 2))
    shape = [d if i == 1 or i == xc.ndim - 1 else 1 for i, d in enumerate(xc.shape)]
    out = torch.view_as_real(xc * pos_cis.view(*shape)).flatten(3)
    return out.transpose(1, 2)


def rope_half_negative_003(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """003 (nanochat): y1 = x1 cos + x2 sin, y2 = -x1 sin + x2 cos, on (B, T, H, D)."""
    xt = x.transpose(1, 2)
    c, s = cos[None, :, None, :], sin[None, :, None, :]
    d = xt.shape[3] // 2
    x1, x2 = xt[..., :d], xt[..., d:]
    out = torch.cat([x1 * c + x2 * s, x1 * (-s) + x2 * c], 3)
    return out.transpose(1, 2)


ROPE_LAYOUTS = {"interleaved": (rope_interleaved_002, 1e6), "half": (rope_half_hf, 1e4),
                "half_negative": (rope_half_negative_003, 1e4)}


def rope_fixture() -> Fixture:
    fx = Fixture("rope", seed=61, description="RoPE: interleaved (002), half (HF LLaMA), half_negative (003); "
                                               "none / linear (PI) / ntk scaling; offsets")
    for layout, (apply, theta) in ROPE_LAYOUTS.items():
        for scaling, factor in [("none", 1.0), ("linear", 2.0), ("ntk", 4.0)]:
            check_against_hf_tables(ROPE_SHAPE[-1], theta, scaling, factor)
            for offset in (0, 7):
                for dtype in (torch.float32, torch.float64):
                    if dtype == torch.float64 and (scaling, offset) != ("ntk", 7):
                        continue
                    T = ROPE_SHAPE[2]
                    angles = rope_angles(torch.arange(offset, offset + T), ROPE_SHAPE[-1], theta, scaling, factor)
                    cos, sin = angles.cos().to(dtype), angles.sin().to(dtype)
                    name = f"{layout}_{scaling}_offset{offset}" + ("_f64" if dtype == torch.float64 else "")
                    fx.case(name, lambda x, c=cos, s=sin, f=apply: f(x, c, s), {"x": randn(*ROPE_SHAPE, dtype=dtype)},
                            layout=layout, theta=theta, scaling=scaling, factor=factor, offset=offset,
                            max_len=ROPE_MAX_LEN)
    return fx


# ---- absolute positions ------------------------------------------------------------------------

def sinusoidal_table_004(max_len: int, d_model: int) -> torch.Tensor:
    """004's SinusoidalPositionalEncoding table in float64: (1, max_len, d_model)."""
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)
    position = torch.arange(0, max_len, dtype=torch.float64).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float64) * (-math.log(10000.0) / d_model))
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe.unsqueeze(0)


def absolute_fixture() -> Fixture:
    fx = Fixture("absolute_position", seed=62, description="sinusoidal (004, optional sqrt(d) input scale) and "
                                                            "learned absolute positions with offsets")
    B, T, D, max_len = 2, 5, 8, 12
    for scale_input in (False, True):
        for offset in (0, 6):
            for dtype in (torch.float32, torch.float64):
                if dtype == torch.float64 and not (scale_input and offset == 6):
                    continue
                pe = sinusoidal_table_004(max_len, D).to(torch.float32).to(dtype)

                def sinusoidal(x, pe=pe, offset=offset, scale_input=scale_input):
                    x = x * math.sqrt(D) if scale_input else x
                    return x + pe[:, offset:offset + x.size(1), :]

                name = f"sinusoidal_scale{int(scale_input)}_offset{offset}" + ("_f64" if dtype == torch.float64 else "")
                fx.case(name, sinusoidal, {"x": randn(B, T, D, dtype=dtype)}, kind="sinusoidal",
                        scale_input=scale_input, offset=offset, max_len=max_len, dim=D)
    for offset in (0, 4):
        fx.case(f"learned_offset{offset}", lambda x, weight, offset=offset: x + weight[offset:offset + x.size(1)],
                {"x": randn(B, T, D), "weight": randn(max_len, D)}, kind="learned", offset=offset, max_len=max_len,
                dim=D)
    return fx


# ---- ALiBi -------------------------------------------------------------------------------------

def alibi_fixture() -> Fixture:
    fx = Fixture("alibi", seed=63, description="ALiBi -m|i-j| with BLOOM's slopes (build_alibi_tensor) for "
                                                "4, 6, 8, 12 heads; BLOOM's own tensor for the causal equivalence")
    for heads in (4, 6, 8, 12):
        for q_offset, k_offset, Tq, Tk in [(0, 0, 5, 5), (4, 0, 3, 7)]:
            bloom = build_alibi_tensor(torch.ones(1, Tk, dtype=torch.long), heads, torch.float32)  # (H, 1, Tk) m j
            slopes = bloom[:, 0, 1].double()  # m_h * 1
            i = torch.arange(q_offset, q_offset + Tq)[:, None]
            j = torch.arange(k_offset, k_offset + Tk)[None, :]
            bias = (-slopes[:, None, None] * (i - j).abs()).unsqueeze(0).to(torch.float32)
            store(fx, f"heads{heads}_q{q_offset}_k{k_offset}", {"slopes": slopes, "out": bias, "bloom": bloom},
                  heads=heads, q_offset=q_offset, k_offset=k_offset, tq=Tq, tk=Tk)
    return fx


# ---- T5 bias -----------------------------------------------------------------------------------

def t5_fixture() -> Fixture:
    fx = Fixture("t5_bias", seed=64, description="T5 relative bias: HF's _relative_position_bucket over a sweep "
                                                  "of distances; the bias and its weight gradient, both directions")
    relative = torch.arange(-160, 161, dtype=torch.int32)
    for num_buckets, max_distance in [(32, 128), (16, 64), (8, 20), (2, 8)]:
        for bidirectional in (True, False):
            if bidirectional and num_buckets < 4:
                continue
            buckets = T5Attention._relative_position_bucket(relative, bidirectional, num_buckets, max_distance)
            store(fx, f"buckets_{num_buckets}_{max_distance}_{'bi' if bidirectional else 'causal'}",
                  {"relative": relative, "buckets": buckets.to(torch.int32)}, num_buckets=num_buckets,
                  max_distance=max_distance, bidirectional=bidirectional)
    heads = 4
    for bidirectional in (True, False):
        for q_offset, k_offset, Tq, Tk in [(0, 0, 6, 6), (9, 0, 4, 13)]:
            num_buckets, max_distance = 8, 12

            def bias(weight, Tq=Tq, Tk=Tk, q_offset=q_offset, k_offset=k_offset, bidirectional=bidirectional):
                # as T5Attention.compute_bias: memory position - context position, buckets, embedding, permute
                context = torch.arange(q_offset, q_offset + Tq)[:, None]
                memory = torch.arange(k_offset, k_offset + Tk)[None, :]
                buckets = T5Attention._relative_position_bucket(memory - context, bidirectional, num_buckets,
                                                                max_distance)
                return F.embedding(buckets, weight).permute([2, 0, 1]).unsqueeze(0)

            fx.case(f"bias_{'bi' if bidirectional else 'causal'}_q{q_offset}_k{k_offset}", bias,
                    {"weight": randn(num_buckets, heads)}, heads=heads, num_buckets=num_buckets,
                    max_distance=max_distance, bidirectional=bidirectional, q_offset=q_offset, k_offset=k_offset,
                    tq=Tq, tk=Tk)
    return fx


# ---- Transformer-XL ----------------------------------------------------------------------------

def xl_sinusoid(d: torch.Tensor, dim: int) -> torch.Tensor:
    """r_d = [sin(d f), cos(d f)], f_i = 10000^(-2i/dim) (Transformer-XL's order), float64."""
    inv_freq = 1.0 / 10000 ** (torch.arange(0.0, dim, 2.0, dtype=torch.float64) / dim)
    angle = d.to(torch.float64)[..., None] * inv_freq
    return torch.cat([angle.sin(), angle.cos()], dim=-1)


def xl_full_score(q, k, u, v, w_r, q_offset, k_offset, dim):
    """001's score written out term by term, for every (i, j) at once, times 1/sqrt(D):
    A_ij = q_i k_j + q_i (W_R r_{i-j}) + u k_j + v (W_R r_{i-j})."""
    B, H, Tq, D = q.shape
    Hkv, Tk = k.shape[1], k.shape[2]
    k = k.repeat_interleave(H // Hkv, dim=1)
    i = torch.arange(q_offset, q_offset + Tq)[:, None]
    j = torch.arange(k_offset, k_offset + Tk)[None, :]
    r = xl_sinusoid(i - j, dim).to(q.dtype)                 # (Tq, Tk, dim)
    p = (r @ w_r.t()).view(Tq, Tk, H, D)                    # W_R r_{i-j} per head
    content = torch.einsum("bhid,bhjd->bhij", q, k)
    position = torch.einsum("bhid,ijhd->bhij", q, p)
    global_content = torch.einsum("hd,bhjd->bhj", u, k)[:, :, None, :]
    global_position = torch.einsum("hd,ijhd->hij", v, p)[None]
    return (content + position + global_content + global_position) / math.sqrt(D)


def xl_fixture() -> Fixture:
    fx = Fixture("xl_relative", seed=65, description="Transformer-XL relative score (001), every term written "
                                                      "out: content, position, u, v; memory offsets, GQA")
    dim, H, D = 6, 3, 4
    for name, B, Hkv, Tq, Tk, q_offset, k_offset in [
        ("memory", 2, 3, 4, 7, 3, 0),
        ("same_positions", 1, 3, 5, 5, 0, 0),
        ("keys_ahead", 2, 3, 3, 4, 0, 2),
        ("gqa", 2, 1, 4, 6, 2, 0),
        ("single_query", 1, 3, 1, 6, 5, 0),
    ]:
        inputs = {"q": randn(B, H, Tq, D), "k": randn(B, Hkv, Tk, D), "u": randn(H, D), "v": randn(H, D),
                  "w_r": randn(H * D, dim, scale=0.5)}
        fx.case(name, lambda q, k, u, v, w_r, qo=q_offset, ko=k_offset: xl_full_score(q, k, u, v, w_r, qo, ko, dim),
                inputs, dim=dim, heads=H, head_dim=D, q_offset=q_offset, k_offset=k_offset)
    return fx


def fixtures() -> list[Fixture]:
    return [rope_fixture(), absolute_fixture(), alibi_fixture(), t5_fixture(), xl_fixture()]
