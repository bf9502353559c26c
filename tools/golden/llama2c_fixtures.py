#!/usr/bin/env python3
"""Writes the llama2.c fixtures of tests/formats/test_llama2c.cpp into tests/fixtures/llama2c/:

    .venv/bin/python tools/golden/llama2c_fixtures.py tests/fixtures/llama2c

For a tied and an untied tiny random LLaMA, `<name>.bin` in llama2.c's model-file format and
`<name>.logits.safetensors` holding `ids` (1, T) int64 and the `logits` (1, T, vocab) of llama2.c's
forward (run.c) computed here in float64 with PyTorch, straight from the format's description:

    header: 7 int32 dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size (< 0: separate
    classifier), seq_len; then fp32 (out, in) matrices: tok_embeddings (V, D), rms_att (L, D),
    wq (L, H hs, D), wk (L, KV hs, D), wv (L, KV hs, D), wo (L, D, H hs), rms_ffn (L, D),
    w1 (L, F, D), w2 (L, D, F), w3 (L, F, D), rms_final (D), freq_cis_real (S, hs/2),
    freq_cis_imag (S, hs/2), [wcls (V, D)].
    forward: x = emb[id]; per layer x += wo attn(rope(wq n1(x)), rope(wk n1(x)), wv n1(x)),
    x += w2 (silu(w1 n2(x)) * w3 n2(x)); logits = wcls rmsnorm(x); rmsnorm eps 1e-5; RoPE rotates
    the pairs (2i, 2i+1) of each head by t * theta^(-2i/hs), theta 10000 (the freq_cis tables).

The freq_cis tables are written as cos / sin evaluated in float64 and rounded to float32.
"""
from __future__ import annotations

import argparse
import struct
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file

CASES = {
    # name: (dim, hidden, n_layers, n_heads, n_kv_heads, vocab, seq_len, tied)
    "tiny_tied": (16, 40, 2, 4, 2, 32, 16, True),
    "tiny_untied": (24, 32, 2, 4, 4, 40, 12, False),
}
T = 10


def freq_tables(seq_len: int, hs: int) -> tuple[np.ndarray, np.ndarray]:
    angle = np.arange(seq_len, dtype=np.float64)[:, None] / 10000.0 ** (np.arange(0, hs, 2, dtype=np.float64) / hs)
    return np.cos(angle).astype(np.float32), np.sin(angle).astype(np.float32)


def random_weights(dim, hidden, n_layers, n_heads, n_kv, vocab, tied, gen) -> dict[str, torch.Tensor]:
    hs = dim // n_heads
    r = lambda *shape, s=0.3: (torch.randn(*shape, generator=gen) * s).float()  # noqa: E731
    w = {
        "tok": r(vocab, dim, s=1.0),
        "rms_att": 1 + r(n_layers, dim, s=0.1),
        "wq": r(n_layers, n_heads * hs, dim), "wk": r(n_layers, n_kv * hs, dim), "wv": r(n_layers, n_kv * hs, dim),
        "wo": r(n_layers, dim, n_heads * hs),
        "rms_ffn": 1 + r(n_layers, dim, s=0.1),
        "w1": r(n_layers, hidden, dim), "w2": r(n_layers, dim, hidden), "w3": r(n_layers, hidden, dim),
        "rms_final": 1 + r(dim, s=0.1),
    }
    w["wcls"] = w["tok"] if tied else r(vocab, dim)
    return w


def write_bin(path: Path, header: tuple, w: dict, tables: tuple[np.ndarray, np.ndarray], tied: bool) -> None:
    with open(path, "wb") as f:
        f.write(struct.pack("<7i", *header))
        for key in ["tok", "rms_att", "wq", "wk", "wv", "wo", "rms_ffn", "w1", "w2", "w3", "rms_final"]:
            f.write(w[key].numpy().astype("<f4").tobytes())
        for table in tables:
            f.write(table.astype("<f4").tobytes())
        if not tied:
            f.write(w["wcls"].numpy().astype("<f4").tobytes())


def rmsnorm(x, weight):
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-5) * weight


def rope_interleaved(x, cos, sin):  # x (T, heads, hs), cos/sin (T, hs/2)
    even, odd = x[..., 0::2], x[..., 1::2]
    c, s = cos[:, None, :], sin[:, None, :]
    return torch.stack([even * c - odd * s, even * s + odd * c], dim=-1).flatten(-2)


def forward(ids, w, n_heads, n_kv, tables):
    w = {k: v.double() for k, v in w.items()}
    cos, sin = (torch.from_numpy(t).double()[: len(ids)] for t in tables)
    x = w["tok"][ids]
    n, dim = x.shape
    hs = dim // n_heads
    mask = torch.ones(n, n, dtype=torch.bool).tril()
    for l in range(w["wq"].shape[0]):
        h = rmsnorm(x, w["rms_att"][l])
        q = rope_interleaved((h @ w["wq"][l].T).view(n, n_heads, hs), cos, sin)
        k = rope_interleaved((h @ w["wk"][l].T).view(n, n_kv, hs), cos, sin)
        v = (h @ w["wv"][l].T).view(n, n_kv, hs)
        k, v = (t.repeat_interleave(n_heads // n_kv, dim=1) for t in (k, v))
        scores = torch.einsum("thd,shd->hts", q, k) / hs ** 0.5
        att = scores.masked_fill(~mask, float("-inf")).softmax(-1)
        x = x + torch.einsum("hts,shd->thd", att, v).reshape(n, dim) @ w["wo"][l].T
        h = rmsnorm(x, w["rms_ffn"][l])
        x = x + (torch.nn.functional.silu(h @ w["w1"][l].T) * (h @ w["w3"][l].T)) @ w["w2"][l].T
    return rmsnorm(x, w["rms_final"]) @ w["wcls"].T


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir", type=Path)
    args = parser.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    gen = torch.Generator().manual_seed(7)
    for name, (dim, hidden, n_layers, n_heads, n_kv, vocab, seq_len, tied) in CASES.items():
        w = random_weights(dim, hidden, n_layers, n_heads, n_kv, vocab, tied, gen)
        tables = freq_tables(seq_len, dim // n_heads)
        header = (dim, hidden, n_layers, n_heads, n_kv, vocab if tied else -vocab, seq_len)
        write_bin(args.out_dir / f"{name}.bin", header, w, tables, tied)
        ids = torch.randint(0, vocab, (T,), generator=gen)
        logits = forward(ids, w, n_heads, n_kv, tables).float()
        save_file({"ids": ids[None].contiguous(), "logits": logits[None].contiguous()},
                  str(args.out_dir / f"{name}.logits.safetensors"))
        print(name, (args.out_dir / f"{name}.bin").stat().st_size, "bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
