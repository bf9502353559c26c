#!/usr/bin/env python3
"""A plain numpy forward of a `llama` or `gpt2` GGUF (float64, weights dequantised by gguf.quants),
beside llama.cpp's logits of the same tokens: says what the file means, independently of both
engines, and how far llama.cpp's arithmetic sits from exact.

llama: x = E[t]; per layer x += Wo attn(rope(Wq n(x)), rope(Wk n(x)), Wv n(x)) (RMSNorm n, GQA,
causal, RoPE rotating adjacent pairs (x[2i], x[2i+1]) at theta^(-2i/d)), x += Wd (silu(Wg n(x)) *
Wu n(x)); logits = (output or E) n(x). gpt2: x = E[t] + P[pos]; LayerNorm with bias, fused qkv
with bias, tanh-GELU MLP. --q8-activations rounds each quantised-weight matmul's input to Q8_0
blocks exactly as llama.cpp's AVX2 kernels do, so what is left is float32 vs float64 arithmetic.

  numpy_reference.py model.gguf --random 64 [--q8-activations] [--llamacpp PREFIX.logits.npy]
prints max and mean |numpy - llama.cpp|, the logits' std, and how often the argmax agrees; without
--llamacpp it runs llama.cpp itself (llamacpp_session, f32 KV cache, no flash attention: needs the
llama-cpp venv). Tokens: --random N --seed S, the same ids as logits.py's.
"""
import argparse
import sys
from pathlib import Path

import numpy as np
import gguf


class Weights(dict):
    """name -> float64 matrix (dequantised), with each tensor's GGUF type in .types."""


def load(path):
    r = gguf.GGUFReader(path)
    kv = {f.name: f.contents() for f in r.fields.values() if not f.name.startswith("GGUF.")}
    w = Weights({t.name: gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float64).reshape(
        [int(n) for n in reversed(t.shape)]) for t in r.tensors})
    w.types = {t.name: t.tensor_type for t in r.tensors}
    return kv, w


QUANT_ACTIVATIONS = False  # --q8-activations


def round_q8_0(x):
    """x rounded to Q8_0 blocks of 32 as llama.cpp's AVX2 quantize_row_q8_0 does it: d = amax/127
    (kept as fp16), q = nearest-even(x * (127/amax)); note 127/amax and nearest-even, where the
    reference (gguf.quants, quantize_row_q8_0_ref) has 1/d and half-away-from-zero."""
    b = x.astype(np.float32).reshape(-1, 32)
    amax = np.abs(b).max(-1, keepdims=True)
    d = (amax / np.float32(127)).astype(np.float16).astype(np.float32)
    with np.errstate(divide="ignore"):
        inv = np.where(amax == 0, np.float32(0), np.float32(127) / amax).astype(np.float32)
    return (np.rint(b * inv) * d).astype(np.float64).reshape(x.shape)


def mm(x, w, name):
    """x @ w[name]^T; with QUANT_ACTIVATIONS and a block-quantised weight, x is first rounded to
    Q8_0 blocks as llama.cpp's CPU kernels do (their vec_dot_type for Q8_0 and Q4_0)."""
    if QUANT_ACTIVATIONS and w.types[name] not in (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16,
                                                   gguf.GGMLQuantizationType.BF16):
        x = round_q8_0(x)
    return x @ w[name].T


def rmsnorm(x, g, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * g


def layernorm(x, g, b, eps):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * g + b


def attention(q, k, v, n_heads, n_kv):
    """q: T x (H*D), k/v: T x (Hkv*D); causal softmax(q k^T / sqrt(D)) v per head, GQA."""
    t, hd = q.shape
    d = hd // n_heads
    q = q.reshape(t, n_heads, d)
    k = np.repeat(k.reshape(t, n_kv, d), n_heads // n_kv, axis=1)
    v = np.repeat(v.reshape(t, n_kv, d), n_heads // n_kv, axis=1)
    s = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(d)
    s = s + np.triu(np.full((t, t), -np.inf), 1)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return np.einsum("hqk,khd->qhd", p, v).reshape(t, hd)


def rope(x, n_heads, theta):
    t, hd = x.shape
    d = hd // n_heads
    x = x.reshape(t, n_heads, d // 2, 2)
    ang = np.arange(t)[:, None] * theta ** (-np.arange(0, d, 2) / d)[None, :]
    c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    a, b = x[..., 0], x[..., 1]
    return np.stack([a * c - b * s, a * s + b * c], -1).reshape(t, hd)


def forward_llama(kv, w, tokens):
    a = "llama."
    nh, nkv = kv[a + "attention.head_count"], kv[a + "attention.head_count_kv"]
    eps, theta = kv[a + "attention.layer_norm_rms_epsilon"], kv[a + "rope.freq_base"]
    x = w["token_embd.weight"][tokens]
    for i in range(kv[a + "block_count"]):
        p = f"blk.{i}."
        h = rmsnorm(x, w[p + "attn_norm.weight"], eps)
        q = rope(mm(h, w, p + "attn_q.weight"), nh, theta)
        k = rope(mm(h, w, p + "attn_k.weight"), nkv, theta)
        x = x + mm(attention(q, k, mm(h, w, p + "attn_v.weight"), nh, nkv), w, p + "attn_output.weight")
        h = rmsnorm(x, w[p + "ffn_norm.weight"], eps)
        g = mm(h, w, p + "ffn_gate.weight")
        x = x + mm(g / (1 + np.exp(-g)) * mm(h, w, p + "ffn_up.weight"), w, p + "ffn_down.weight")
    x = rmsnorm(x, w["output_norm.weight"], eps)
    return mm(x, w, "output.weight" if "output.weight" in w else "token_embd.weight")


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def forward_gpt2(kv, w, tokens):
    a = "gpt2."
    nh, eps = kv[a + "attention.head_count"], kv[a + "attention.layer_norm_epsilon"]
    x = w["token_embd.weight"][tokens] + w["position_embd.weight"][: len(tokens)]
    for i in range(kv[a + "block_count"]):
        p = f"blk.{i}."
        h = layernorm(x, w[p + "attn_norm.weight"], w[p + "attn_norm.bias"], eps)
        q, k, v = np.split(mm(h, w, p + "attn_qkv.weight") + w[p + "attn_qkv.bias"], 3, axis=-1)
        x = x + mm(attention(q, k, v, nh, nh), w, p + "attn_output.weight") + w[p + "attn_output.bias"]
        h = layernorm(x, w[p + "ffn_norm.weight"], w[p + "ffn_norm.bias"], eps)
        u = gelu_tanh(mm(h, w, p + "ffn_up.weight") + w[p + "ffn_up.bias"])
        x = x + mm(u, w, p + "ffn_down.weight") + w[p + "ffn_down.bias"]
    x = layernorm(x, w["output_norm.weight"], w["output_norm.bias"], eps)
    return mm(x, w, "output.weight" if "output.weight" in w else "token_embd.weight")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--random", type=int, default=64, metavar="N", help="N random token ids")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--llamacpp", help="llama.cpp's logits of the same tokens (logits.py's PREFIX.logits.npy)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--q8-activations", action="store_true",
                    help="round the input of each quantised-weight matmul to Q8_0 blocks, as llama.cpp does")
    a = ap.parse_args()
    global QUANT_ACTIVATIONS
    QUANT_ACTIVATIONS = a.q8_activations
    kv, w = load(a.model)
    arch = kv["general.architecture"]
    forward = {"llama": forward_llama, "gpt2": forward_gpt2}.get(arch)
    if forward is None:
        sys.exit(f"numpy_reference: {a.model}: architecture {arch!r} is neither llama nor gpt2")
    vocab = w["token_embd.weight"].shape[0]
    tokens = np.random.default_rng(a.seed).integers(0, vocab, a.random).tolist()
    ref = forward(kv, w, tokens)
    if a.llamacpp:
        theirs = np.load(a.llamacpp)
    else:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import llamacpp_session as lcs
        s = lcs.Session(a.model, n_threads=a.threads, n_ctx=max(256, len(tokens)), n_batch=len(tokens),
                        n_ubatch=len(tokens), cache_type="f32", flash_attn="off")
        theirs = s.decode(tokens, 0, all_logits=True)
        s.close()
    if theirs.shape != ref.shape:
        sys.exit(f"numpy_reference: llama.cpp's logits are {theirs.shape}, numpy's {ref.shape}")
    err = np.abs(theirs - ref)
    print(f"{a.model} ({arch}, {len(tokens)} tokens, seed {a.seed}{', q8_0 activations' if a.q8_activations else ''}): max |llama.cpp - numpy| = {err.max():.3g}, "
          f"mean {err.mean():.3g}, logits std {ref.std():.3g} (max error / std = {err.max() / ref.std():.3g}); "
          f"argmax agrees at {np.mean(theirs.argmax(-1) == ref.argmax(-1)) * 100:.0f}% of positions")


if __name__ == "__main__":
    main()
