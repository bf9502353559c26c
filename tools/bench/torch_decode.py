"""PyTorch's side of the inference benchmark (bench/bench_inference.cpp): prefill of a prompt and
greedy decoding with a KV cache, batch 1, for a decoder preset of configs/ as plain PyTorch (no
Hugging Face generate loop: the fastest PyTorch baseline, its only Python overhead the per-layer
calls). The model: token embedding (learned positions or interleaved RoPE), pre-norm blocks
(LayerNorm or RMSNorm), attention through F.scaled_dot_product_attention over a preallocated
cache (B, kv_heads, max_len, head_dim) written in place, SwiGLU or GELU-tanh MLP or MiniMind's MoE
(softmax gate, top-k, renormalised, shared experts), tied head. Random weights.

    .venv/bin/python tools/bench/torch_decode.py --preset minimind2-small --prompt 512 --new 256 --threads 2
prints one JSON line: prefill and decode tokens/s, the seconds of each, and the parameter count.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from torch_models import CONFIGS, swiglu_hidden  # noqa: E402  the same presets and MLP width as the other benchmarks


def norm(c: dict) -> nn.Module:
    if c["norm"] == "layernorm":
        return nn.LayerNorm(c["dim"], eps=c["norm_eps"], bias=c["norm_bias"])
    return nn.RMSNorm(c["dim"], eps=c["norm_eps"])


class SwiGLU(nn.Module):
    def __init__(self, d: int, hidden: int):
        super().__init__()
        self.w1, self.w3, self.w2 = nn.Linear(d, hidden, bias=False), nn.Linear(d, hidden, bias=False), nn.Linear(hidden, d, bias=False)

    def forward(self, x):  # w2(silu(w1 x) * w3 x)
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class GeluMLP(nn.Module):
    def __init__(self, d: int, bias: bool):
        super().__init__()
        self.fc, self.proj = nn.Linear(d, 4 * d, bias=bias), nn.Linear(4 * d, d, bias=bias)

    def forward(self, x):
        return self.proj(F.gelu(self.fc(x), approximate="tanh"))


class MoE(nn.Module):
    """MiniMind's MoE: gate softmax, top-k experts renormalised, shared experts always added."""

    def __init__(self, c: dict):
        super().__init__()
        m, d, hidden = c["moe"], c["dim"], swiglu_hidden(c)
        self.top_k, self.norm_topk = m["top_k"], m["norm_topk_prob"]
        self.gate = nn.Linear(d, m["n_experts"], bias=False)
        self.experts = nn.ModuleList(SwiGLU(d, hidden) for _ in range(m["n_experts"]))
        self.shared = nn.ModuleList(SwiGLU(d, hidden) for _ in range(m["n_shared_experts"]))

    def forward(self, x):
        shape = x.shape
        x = x.reshape(-1, shape[-1])
        weights, experts = torch.topk(F.softmax(self.gate(x), dim=-1), self.top_k, dim=-1)
        if self.norm_topk:
            weights = weights / weights.sum(-1, keepdim=True)
        y = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            rows, slot = torch.where(experts == e)
            if rows.numel():
                y.index_add_(0, rows, expert(x[rows]) * weights[rows, slot, None])
        for expert in self.shared:
            y = y + expert(x)
        return y.reshape(shape)


class Block(nn.Module):
    def __init__(self, c: dict):
        super().__init__()
        d, self.h = c["dim"], c["n_heads"]
        self.kv = c["n_kv_heads"] or self.h
        self.hd = c["head_dim"] or d // self.h
        bias = c["attention_bias"]
        self.q = nn.Linear(d, self.h * self.hd, bias=bias)
        self.k = nn.Linear(d, self.kv * self.hd, bias=bias)
        self.v = nn.Linear(d, self.kv * self.hd, bias=bias)
        self.o = nn.Linear(self.h * self.hd, d, bias=bias)
        self.n1, self.n2 = norm(c), norm(c)
        if c["moe"]:
            self.mlp = MoE(c)
        elif c["mlp"] == "swiglu":
            self.mlp = SwiGLU(d, swiglu_hidden(c))
        else:
            self.mlp = GeluMLP(d, c["mlp_bias"])

    def forward(self, x, rope, cache, start: int):
        b, t, _ = x.shape
        h = self.n1(x)
        q = self.q(h).view(b, t, self.h, self.hd)
        k = self.k(h).view(b, t, self.kv, self.hd)
        v = self.v(h).view(b, t, self.kv, self.hd)
        if rope is not None:
            q, k = rope(q, start), rope(k, start)
        k_cache, v_cache = cache
        k_cache[:, :, start:start + t] = k.transpose(1, 2)  # written in place
        v_cache[:, :, start:start + t] = v.transpose(1, 2)
        y = F.scaled_dot_product_attention(q.transpose(1, 2), k_cache[:, :, :start + t], v_cache[:, :, :start + t],
                                           is_causal=t > 1, enable_gqa=self.kv != self.h)
        x = x + self.o(y.transpose(1, 2).reshape(b, t, -1))
        return x + self.mlp(self.n2(x))


def interleaved_rope(head_dim: int, length: int, theta: float):
    freqs = 1.0 / theta ** (torch.arange(0, head_dim, 2).float() / head_dim)
    cis = torch.polar(torch.ones(length, head_dim // 2), torch.outer(torch.arange(length).float(), freqs))

    def rotate(x, start):  # (B, T, H, D): pairs (x[2i], x[2i+1]) times e^(i (start + t) theta_i)
        xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
        return torch.view_as_real(xc * cis[start:start + x.shape[1], None, :]).flatten(3)
    return rotate


class CachedLM(nn.Module):
    def __init__(self, c: dict, max_len: int):
        super().__init__()
        self.c = c
        self.emb = nn.Embedding(c["vocab_size"], c["dim"])
        self.pos = nn.Embedding(c["max_seq_len"], c["dim"]) if c["position"] == "learned" else None
        head_dim = c["head_dim"] or c["dim"] // c["n_heads"]
        self.rope = interleaved_rope(head_dim, max_len, c["rope_theta"]) if c["position"] == "rope" else None
        self.blocks = nn.ModuleList(Block(c) for _ in range(c["n_layers"]))
        self.norm = norm(c)
        kv = c["n_kv_heads"] or c["n_heads"]
        self.caches = [(torch.zeros(1, kv, max_len, head_dim), torch.zeros(1, kv, max_len, head_dim))
                       for _ in range(c["n_layers"])]

    def forward(self, ids, start: int):
        x = self.emb(ids)
        if self.pos is not None:
            x = x + self.pos.weight[start:start + ids.shape[1]]
        for block, cache in zip(self.blocks, self.caches):
            x = block(x, self.rope, cache, start)
        return F.linear(self.norm(x[:, -1:]), self.emb.weight)  # the last position's logits


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="minimind2-small")
    ap.add_argument("--prompt", type=int, default=512)
    ap.add_argument("--new", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    c = json.loads((CONFIGS / f"{args.preset}.json").read_text())
    model = CachedLM(c, args.prompt + args.new).eval()
    ids = torch.randint(0, c["vocab_size"], (1, args.prompt))
    with torch.inference_mode():
        model(ids[:, :16], 0)  # warm-up
        start = time.perf_counter()
        token = model(ids, 0).argmax(-1)
        prefill = time.perf_counter() - start
        start = time.perf_counter()
        for i in range(args.new - 1):
            token = model(token, args.prompt + i).argmax(-1)
        decode = time.perf_counter() - start
    print(json.dumps({"torch": torch.__version__, "parameters": sum(p.numel() for p in model.parameters()),
                      "prefill_s": prefill, "decode_s": decode,
                      "prefill_tokens_per_s": args.prompt / prefill,
                      "decode_tokens_per_s": (args.new - 1) / decode}))


if __name__ == "__main__":
    main()
