"""Attention: F.scaled_dot_product_attention (masks, GQA/MQA, scale, fully masked rows, sliding windows) and the
multi-head attention module (torch.nn.MultiheadAttention, and a nanochat-style GQA + QK-norm layer
written from the reference formulas)."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.func import functional_call

from golden_common import Fixture, randn


def sdpa_fixture() -> Fixture:
    fx = Fixture("attention", seed=11,
                 description="F.scaled_dot_product_attention(q, k, v, attn_mask, is_causal, scale, enable_gqa); "
                             "roles q, k, v, [mask (bool: true = attend, or additive)], [key_padding (bool (B, Tk), "
                             "true = real key)], out, grad_out, grad_q, grad_k, grad_v, [grad_mask]")

    def add(case, q_shape, kv_shape, dtype=torch.float32, causal=False, mask=None, key_padding=None,
            causal_mask=False, scale=None):
        """causal: torch's is_causal (Tq == Tk). causal_mask: an explicit bottom-right causal mask for
        Tq != Tk, which our `causal` flag must reproduce without a mask."""
        inputs = {"q": randn(*q_shape, dtype=dtype), "k": randn(*kv_shape, dtype=dtype),
                  "v": randn(*kv_shape, dtype=dtype)}
        if mask is not None:
            inputs["mask"] = mask
        if key_padding is not None:
            inputs["key_padding"] = key_padding
        tq, tk = q_shape[2], kv_shape[2]
        gqa = q_shape[1] != kv_shape[1]

        def fn(q, k, v, mask=None, key_padding=None):
            attn_mask = mask
            if key_padding is not None:
                attn_mask = key_padding[:, None, None, :]
            if causal_mask:
                attn_mask = torch.ones(tq, tk, dtype=torch.bool).tril(diagonal=tk - tq)
            return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=causal, scale=scale,
                                                  enable_gqa=gqa)

        fx.case(case, fn, inputs, causal=causal or causal_mask, scale=scale, dtype=str(dtype))

    add("mha", (2, 3, 7, 8), (2, 3, 7, 8))
    add("causal", (2, 2, 9, 8), (2, 2, 9, 8), causal=True)
    bool_mask = torch.rand(1, 2, 5, 11) < 0.7
    bool_mask[0, 1, 3] = False  # a row with every key masked: torch gives zeros
    add("bool_mask_cross", (1, 2, 5, 8), (1, 2, 11, 8), mask=bool_mask)
    add("additive_mask", (2, 2, 6, 8), (2, 2, 6, 8), mask=randn(2, 1, 6, 6))
    add("key_padding", (3, 2, 6, 8), (3, 2, 6, 8),
        key_padding=torch.tensor([[True] * 6, [True] * 4 + [False] * 2, [True] + [False] * 5]))
    add("gqa_causal", (1, 6, 10, 8), (1, 2, 10, 8), causal=True)
    add("mqa_cross", (2, 4, 3, 8), (2, 1, 12, 8))
    add("causal_bottom_right", (1, 2, 4, 8), (1, 2, 9, 8), causal_mask=True)
    add("scale_causal", (1, 2, 8, 8), (1, 2, 8, 8), causal=True, scale=0.5)
    add("long_gqa_causal_across_tiles", (1, 2, 130, 8), (1, 1, 130, 8), causal=True)
    add("f64_gqa_causal", (2, 4, 7, 6), (2, 2, 7, 6), dtype=torch.float64, causal=True)
    return fx


def window_mask(tq: int, tk: int, window: int) -> torch.Tensor:
    """(tq, tk) bool, true = attend: query i, whose diagonal key is d = i + tk - tq (bottom-right),
    sees key j iff d - window < j <= d (transformers' sliding_window, flash-attn's window_size =
    (window - 1, 0))."""
    ones = torch.ones(tq, tk, dtype=torch.bool)
    return ones.tril(diagonal=tk - tq) & ~ones.tril(diagonal=tk - tq - window)


def sdpa_window_fixture() -> Fixture:
    fx = Fixture("attention_window", seed=13,
                 description="sliding-window attention: F.scaled_dot_product_attention(q, k, v, attn_mask = the "
                             "window's bool mask (and-ed with [mask], [key_padding]; an additive [mask] gets -inf "
                             "outside the window), scale, enable_gqa); cases give causal = true and window; roles as "
                             "the attention fixture")

    def add(case, q_shape, kv_shape, window, dtype=torch.float32, mask=None, key_padding=None, scale=None):
        inputs = {"q": randn(*q_shape, dtype=dtype), "k": randn(*kv_shape, dtype=dtype),
                  "v": randn(*kv_shape, dtype=dtype)}
        if mask is not None:
            inputs["mask"] = mask
        if key_padding is not None:
            inputs["key_padding"] = key_padding
        keep = window_mask(q_shape[2], kv_shape[2], window)
        gqa = q_shape[1] != kv_shape[1]

        def fn(q, k, v, mask=None, key_padding=None):
            attn_mask = keep
            if key_padding is not None:
                attn_mask = attn_mask & key_padding[:, None, None, :]
            if mask is not None and mask.dtype == torch.bool:
                attn_mask = attn_mask & mask
            elif mask is not None:
                attn_mask = mask.masked_fill(~attn_mask, float("-inf"))
            return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, scale=scale, enable_gqa=gqa)

        fx.case(case, fn, inputs, causal=True, window=window, scale=scale, dtype=str(dtype))

    add("w1_self", (2, 2, 9, 8), (2, 2, 9, 8), 1)
    add("w3_self_gqa", (1, 4, 10, 8), (1, 2, 10, 8), 3)
    add("w7_across_tiles_gqa", (1, 2, 150, 8), (1, 1, 150, 8), 7)
    add("w64_across_tiles", (1, 1, 200, 8), (1, 1, 200, 8), 64)
    add("w128_across_tiles", (1, 1, 270, 4), (1, 1, 270, 4), 128)
    add("w5_cached_suffix_gqa", (1, 4, 4, 8), (1, 2, 12, 8), 5)
    add("w6_decode_one_token_mqa", (2, 4, 1, 16), (2, 1, 20, 16), 6)
    add("w4_key_padding_scale", (2, 2, 8, 8), (2, 2, 8, 8), 4,
        key_padding=torch.tensor([[True] * 8, [True] * 3 + [False] + [True] * 4]), scale=0.5)
    add("w5_bool_mask", (1, 2, 9, 8), (1, 2, 9, 8), 5, mask=torch.rand(1, 2, 9, 9) < 0.8)
    add("w3_additive_mask", (2, 2, 7, 8), (2, 2, 7, 8), 3, mask=randn(2, 1, 7, 7))
    add("w4_f64_gqa", (2, 4, 9, 6), (2, 2, 9, 6), 4, dtype=torch.float64)
    return fx


def module_fixture() -> Fixture:
    fx = Fixture("multihead_attention", seed=12,
                 description="multi-head attention layers: torch.nn.MultiheadAttention (batch_first, in_proj split "
                             "into q/k/v_proj, out_proj as o_proj) and a nanochat-style layer (no biases, GQA, QK "
                             "norm = F.rms_norm over head_dim with eps 1e-6, causal SDPA); roles x, [context], "
                             "[key_padding], <parameter names as ours>, out, [weights], grads")

    def mha_case(case, dim, heads, t, context_len=None, causal=False, key_padding=None):
        params = {}
        for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
            params[f"{name}.weight"] = randn(dim, dim, scale=dim ** -0.5)
            params[f"{name}.bias"] = randn(dim, scale=0.1)
        inputs = {"x": randn(2, t, dim)}
        if context_len is not None:
            inputs["context"] = randn(2, context_len, dim)
        if key_padding is not None:
            inputs["key_padding"] = key_padding
        inputs.update(params)
        mha = torch.nn.MultiheadAttention(dim, heads, bias=True, batch_first=True)
        weights = {}

        def fn(**a):
            state = {"in_proj_weight": torch.cat([a["q_proj.weight"], a["k_proj.weight"], a["v_proj.weight"]]),
                     "in_proj_bias": torch.cat([a["q_proj.bias"], a["k_proj.bias"], a["v_proj.bias"]]),
                     "out_proj.weight": a["o_proj.weight"], "out_proj.bias": a["o_proj.bias"]}
            src = a.get("context", a["x"])
            blocked = torch.ones(t, t, dtype=torch.bool).triu(1) if causal else None
            padding = ~a["key_padding"] if "key_padding" in a else None
            out, w = functional_call(mha, state, (a["x"], src, src),
                                     {"attn_mask": blocked, "is_causal": causal, "key_padding_mask": padding,
                                      "need_weights": True, "average_attn_weights": False})
            weights["w"] = w.detach()
            return out

        fx.case(case, fn, inputs, dim=dim, n_heads=heads, n_kv_heads=heads, bias=True, causal=causal,
                qk_norm=False, head_dim=0, scale=None)
        fx.tensors[f"{case}.weights"] = weights["w"].contiguous().clone()

    mha_case("mha_self", 16, 4, 5)
    mha_case("mha_causal", 16, 4, 6, causal=True)
    mha_case("mha_key_padding", 16, 2, 5, key_padding=torch.tensor([[True] * 5, [True] * 3 + [False] * 2]))
    mha_case("mha_cross", 16, 4, 4, context_len=7)

    def nanochat_case(case, dim, heads, kv_heads, head_dim, t, scale=None):
        inputs = {"x": randn(2, t, dim),
                  "q_proj.weight": randn(heads * head_dim, dim, scale=dim ** -0.5),
                  "k_proj.weight": randn(kv_heads * head_dim, dim, scale=dim ** -0.5),
                  "v_proj.weight": randn(kv_heads * head_dim, dim, scale=dim ** -0.5),
                  "o_proj.weight": randn(dim, heads * head_dim, scale=(heads * head_dim) ** -0.5)}

        def fn(**a):
            b = a["x"].shape[0]
            q = F.linear(a["x"], a["q_proj.weight"]).view(b, t, heads, head_dim).transpose(1, 2)
            k = F.linear(a["x"], a["k_proj.weight"]).view(b, t, kv_heads, head_dim).transpose(1, 2)
            v = F.linear(a["x"], a["v_proj.weight"]).view(b, t, kv_heads, head_dim).transpose(1, 2)
            q, k = F.rms_norm(q, (head_dim,), eps=1e-6), F.rms_norm(k, (head_dim,), eps=1e-6)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale, enable_gqa=kv_heads != heads)
            return F.linear(y.transpose(1, 2).reshape(b, t, heads * head_dim), a["o_proj.weight"])

        fx.case(case, fn, inputs, dim=dim, n_heads=heads, n_kv_heads=kv_heads, bias=False, causal=True,
                qk_norm=True, head_dim=head_dim, scale=scale)

    nanochat_case("qk_norm_gqa", 16, 4, 2, 4, 7)
    nanochat_case("qk_norm_mqa_head_dim_scale", 12, 2, 1, 8, 5, scale=0.25)
    return fx


def fixtures() -> list[Fixture]:
    return [sdpa_fixture(), sdpa_window_fixture(), module_fixture()]
