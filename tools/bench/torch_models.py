"""PyTorch timings for bench/bench_models.cpp: the same presets (read from configs/) as plain
PyTorch modules (F.scaled_dot_product_attention, F.layer_norm / F.rms_norm, GELU-tanh or SwiGLU,
learned positions or interleaved RoPE, tied head), forward under no_grad and a training step's
forward + backward.

Run right after bench_models on the same machine, with the same thread count, and compare medians:
    NANOFORMER_THREADS=2 ./build-bench/bench_models;  .venv/bin/python tools/bench/torch_models.py --threads 2
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch_baseline import median_ms  # same directory: the shared warm-up + median timer

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
CASES = [("llama2c-stories260k", 8, 256), ("gpt-mini", 4, 256), ("minimind2-small", 1, 256)]


def swiglu_hidden(c: dict) -> int:
    if c["mlp_hidden"]:
        return c["mlp_hidden"]
    m = c["mlp_multiple_of"]
    return m * -(-int(8 * c["dim"] / 3) // m)


class Block(nn.Module):
    def __init__(self, c: dict):
        super().__init__()
        d, self.h = c["dim"], c["n_heads"]
        self.kv = c["n_kv_heads"] or self.h
        self.hd = d // self.h
        self.c = c
        bias = c["attention_bias"]
        self.q = nn.Linear(d, self.h * self.hd, bias=bias)
        self.k = nn.Linear(d, self.kv * self.hd, bias=bias)
        self.v = nn.Linear(d, self.kv * self.hd, bias=bias)
        self.o = nn.Linear(self.h * self.hd, d, bias=bias)
        self.n1, self.n2 = norm(c), norm(c)
        if c["mlp"] == "swiglu":
            hidden = swiglu_hidden(c)
            self.w1, self.w3 = nn.Linear(d, hidden, bias=False), nn.Linear(d, hidden, bias=False)
            self.w2 = nn.Linear(hidden, d, bias=False)
        else:
            self.fc, self.proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def mlp(self, x):
        if self.c["mlp"] == "swiglu":
            return self.w2(F.silu(self.w1(x)) * self.w3(x))
        return self.proj(F.gelu(self.fc(x), approximate="tanh"))

    def forward(self, x, rope):
        b, t, _ = x.shape
        h = self.n1(x)
        q = self.q(h).view(b, t, self.h, self.hd)
        k = self.k(h).view(b, t, self.kv, self.hd)
        v = self.v(h).view(b, t, self.kv, self.hd)
        if rope is not None:
            q, k = rope(q), rope(k)
        y = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True,
                                           enable_gqa=self.kv != self.h)
        x = x + self.o(y.transpose(1, 2).reshape(b, t, -1))
        return x + self.mlp(self.n2(x))


def norm(c: dict) -> nn.Module:
    if c["norm"] == "layernorm":
        return nn.LayerNorm(c["dim"], eps=c["norm_eps"])
    return nn.RMSNorm(c["dim"], eps=c["norm_eps"])


def interleaved_rope(head_dim: int, length: int, theta: float):
    freqs = 1.0 / theta ** (torch.arange(0, head_dim, 2).float() / head_dim)
    cis = torch.polar(torch.ones(length, head_dim // 2), torch.outer(torch.arange(length).float(), freqs))

    def rotate(x):  # (B, T, H, D): pairs (x[2i], x[2i+1]) times e^(i t theta_i)
        xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
        return torch.view_as_real(xc * cis[: x.shape[1], None, :]).flatten(3)
    return rotate


class LM(nn.Module):
    def __init__(self, c: dict, length: int):
        super().__init__()
        self.emb = nn.Embedding(c["vocab_size"], c["dim"])
        self.pos = nn.Embedding(c["max_seq_len"], c["dim"]) if c["position"] == "learned" else None
        self.rope = (interleaved_rope(c["dim"] // c["n_heads"], length, c["rope_theta"])
                     if c["position"] == "rope" else None)
        self.blocks = nn.ModuleList(Block(c) for _ in range(c["n_layers"]))
        self.norm = norm(c)

    def forward(self, ids):
        x = self.emb(ids)
        if self.pos is not None:
            x = x + self.pos.weight[: ids.shape[1]]
        for block in self.blocks:
            x = block(x, self.rope)
        return F.linear(self.norm(x), self.emb.weight)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; median ms of {args.reps} runs")
    for preset, b, t in CASES:
        c = json.loads((CONFIGS / f"{preset}.json").read_text())
        model = LM(c, t)
        ids = torch.randint(0, c["vocab_size"], (b, t))
        targets = torch.randint(0, c["vocab_size"], (b, t))

        def forward():
            with torch.no_grad():
                model(ids)

        def train_step():
            F.cross_entropy(model(ids).flatten(0, 1), targets.flatten()).backward()
            model.zero_grad(set_to_none=True)

        print(f"{preset} B={b} T={t}: forward {median_ms(forward, args.reps):8.2f} ms, "
              f"train step {median_ms(train_step, args.reps):8.2f} ms")


if __name__ == "__main__":
    main()
