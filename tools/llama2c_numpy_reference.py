#!/usr/bin/env python3
"""An independent numpy forward of a llama2.c model file, for checking our loader on a real model:

    .venv/bin/python tools/llama2c_numpy_reference.py stories260K.bin /tmp/ref.safetensors
    NF_LLAMA2C_REFERENCE=/tmp/ref.safetensors build/test_llama2c --gtest_filter='*Stories260k*'

Reads the file as run.c does (7-int32 header, fp32 tensors) and, as run.c does, computes the RoPE
angles t / 10000^(2i/hs) itself (in float64) instead of using the file's fp32 freq_cis tables
(`--file-tables` uses them; their rounding alone moves stories260K's logits by ~8e-5). Writes `ids` (1, T) int64 and `logits` (1, T, vocab) float32, computed in float64, with the .bin's
path in the metadata (`bin`). Not part of `make test`: the model file (karpathy/tinyllamas) stays out of the repository.
"""
from __future__ import annotations

import argparse

import numpy as np
from safetensors.numpy import save_file


def read_model(path: str):
    raw = open(path, "rb").read()
    dim, hidden, n_layers, n_heads, n_kv, vocab, seq_len = np.frombuffer(raw[:28], dtype="<i4").tolist()
    shared, vocab, hs = vocab > 0, abs(vocab), dim // n_heads
    floats = np.frombuffer(raw[28:], dtype="<f4").astype(np.float64)
    pos = 0

    def take(*shape):
        nonlocal pos
        n = int(np.prod(shape))
        out = floats[pos:pos + n].reshape(shape)
        pos += n
        return out

    w = {"tok": take(vocab, dim), "rms_att": take(n_layers, dim), "wq": take(n_layers, n_heads * hs, dim),
         "wk": take(n_layers, n_kv * hs, dim), "wv": take(n_layers, n_kv * hs, dim),
         "wo": take(n_layers, dim, n_heads * hs), "rms_ffn": take(n_layers, dim), "w1": take(n_layers, hidden, dim),
         "w2": take(n_layers, dim, hidden), "w3": take(n_layers, hidden, dim), "rms_final": take(dim),
         "cos": take(seq_len, hs // 2), "sin": take(seq_len, hs // 2)}
    w["wcls"] = w["tok"] if shared else take(vocab, dim)
    assert pos == floats.size, f"{path}: {floats.size - pos} floats left over"
    return w, n_heads, n_kv


def rmsnorm(x, weight):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-5) * weight


def rope(x, cos, sin):  # x (T, heads, hs): rotate the pairs (2i, 2i+1)
    out = np.empty_like(x)
    c, s = cos[:, None, :], sin[:, None, :]
    out[..., 0::2] = x[..., 0::2] * c - x[..., 1::2] * s
    out[..., 1::2] = x[..., 0::2] * s + x[..., 1::2] * c
    return out


def forward(ids, w, n_heads, n_kv, file_tables=False):
    x = w["tok"][ids]
    n, dim = x.shape
    hs = dim // n_heads
    angle = np.arange(n)[:, None] / 10000.0 ** (np.arange(0, hs, 2) / hs)
    cos, sin = (w["cos"][:n], w["sin"][:n]) if file_tables else (np.cos(angle), np.sin(angle))
    future = np.triu(np.ones((n, n), dtype=bool), 1)
    for layer in range(w["wq"].shape[0]):
        h = rmsnorm(x, w["rms_att"][layer])
        q = rope((h @ w["wq"][layer].T).reshape(n, n_heads, hs), cos, sin)
        k = rope((h @ w["wk"][layer].T).reshape(n, n_kv, hs), cos, sin)
        v = (h @ w["wv"][layer].T).reshape(n, n_kv, hs)
        out = np.empty((n, n_heads, hs))
        for head in range(n_heads):
            kv = head // (n_heads // n_kv)
            scores = q[:, head] @ k[:, kv].T / np.sqrt(hs)
            scores[future] = -np.inf
            p = np.exp(scores - scores.max(-1, keepdims=True))
            out[:, head] = (p / p.sum(-1, keepdims=True)) @ v[:, kv]
        x = x + out.reshape(n, dim) @ w["wo"][layer].T
        h = rmsnorm(x, w["rms_ffn"][layer])
        a = h @ w["w1"][layer].T
        x = x + (a / (1 + np.exp(-a)) * (h @ w["w3"][layer].T)) @ w["w2"][layer].T
    return rmsnorm(x, w["rms_final"]) @ w["wcls"].T


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bin")
    parser.add_argument("out")
    # at 512 tokens (the full context) fp32 rounding alone, PyTorch's as much as ours, reaches ~1.1e-4
    parser.add_argument("--tokens", type=int, default=256, help="length of the random id sequence")
    parser.add_argument("--file-tables", action="store_true", help="RoPE from the file's freq_cis tables")
    args = parser.parse_args()
    w, n_heads, n_kv = read_model(args.bin)
    ids = np.random.default_rng(0).integers(0, w["tok"].shape[0], size=args.tokens)
    logits = forward(ids, w, n_heads, n_kv, args.file_tables)
    save_file({"ids": ids[None].astype(np.int64), "logits": logits[None].astype(np.float32)}, args.out,
              metadata={"bin": args.bin})
    print(f"{args.bin}: {args.tokens} tokens, logits {logits.shape}, |logits| max {np.abs(logits).max():.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
