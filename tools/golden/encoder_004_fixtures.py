#!/usr/bin/env python3
"""Fixtures of document 004's full encoder for tests/models/test_encoder_model.cpp (PyTorch is the oracle).

    .venv/bin/python tools/golden/encoder_004_fixtures.py tests/fixtures/encoder

The modules below are document 004's TransformerEncoder, rewritten from its description: token
embedding scaled by sqrt(d_model), sinusoidal positions, dropout, then Post-LN blocks
(norm(x + dropout(sublayer(x)))) or Pre-LN blocks with a final LayerNorm; multi-head attention with
biases whose mask (B, 1, 1, T) fills padded keys with -1e9; the FFN linear2(dropout(relu(linear1(x)))).
For each placement (post, pre) it writes tests/fixtures/encoder/004_<placement>.safetensors holding
  ids, mask (2, T) int64 (the second row padded after 5 tokens), weight (2, T, 16): a fixed random tensor,
  out (2, T, 16): the encoder's output in eval mode,
  param.<name> and grad.<name> for every parameter (004's names): its value and the gradient of
  sum(out * weight).
vocab 32, d_model 16, 2 heads, d_ff 32, 2 layers, max_seq_len 16; weights at unit scale (LayerNorm
weights 1 + 0.1 noise) so that every part of the block matters.
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import save_file
from torch import nn

T = 8
REAL_IN_SECOND_ROW = 5


class FeedForwardNetwork(nn.Module):
    def __init__(self, d_model: int, d_ff: int, dropout: float):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.linear2(self.dropout(F.relu(self.linear1(x))))


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, num_heads: int, dropout: float):
        super().__init__()
        self.num_heads, self.d_k = num_heads, d_model // num_heads
        self.W_q, self.W_k = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.W_v, self.W_o = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, mask):
        b, t, d = x.shape
        q, k, v = (w(x).view(b, t, self.num_heads, self.d_k).transpose(1, 2) for w in (self.W_q, self.W_k, self.W_v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        scores = scores.masked_fill(mask == 0, -1e9)
        weights = self.dropout(F.softmax(scores, dim=-1))
        return self.W_o((weights @ v).transpose(1, 2).contiguous().view(b, t, d))


class Block(nn.Module):
    def __init__(self, d_model: int, num_heads: int, d_ff: int, dropout: float, pre_ln: bool):
        super().__init__()
        self.self_attention = MultiHeadAttention(d_model, num_heads, dropout)
        self.feed_forward = FeedForwardNetwork(d_model, d_ff, dropout)
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.pre_ln = pre_ln

    def forward(self, x, mask):
        if self.pre_ln:
            x = x + self.dropout(self.self_attention(self.norm1(x), mask))
            return x + self.dropout(self.feed_forward(self.norm2(x)))
        x = self.norm1(x + self.dropout(self.self_attention(x, mask)))
        return self.norm2(x + self.dropout(self.feed_forward(x)))


class TransformerEncoder(nn.Module):
    def __init__(self, vocab_size, d_model, num_heads, d_ff, num_layers, max_seq_len, dropout, pre_ln):
        super().__init__()
        self.d_model = d_model
        self.embedding = nn.Embedding(vocab_size, d_model)
        pe = torch.zeros(max_seq_len, d_model)
        position = torch.arange(0, max_seq_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2], pe[:, 1::2] = torch.sin(position * div_term), torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0))
        self.layers = nn.ModuleList([Block(d_model, num_heads, d_ff, dropout, pre_ln) for _ in range(num_layers)])
        self.dropout = nn.Dropout(dropout)
        self.final_norm = nn.LayerNorm(d_model) if pre_ln else None

    def forward(self, ids, mask):
        x = self.embedding(ids) * math.sqrt(self.d_model)
        x = self.dropout(x + self.pe[:, : ids.size(1)])
        for layer in self.layers:
            x = layer(x, mask)
        return self.final_norm(x) if self.final_norm is not None else x


def write(out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    gen = torch.Generator().manual_seed(4)
    for placement in ("post", "pre"):
        torch.manual_seed(0)
        model = TransformerEncoder(32, 16, 2, 32, 2, 16, 0.1, placement == "pre").eval()
        with torch.no_grad():
            for name, p in model.named_parameters():
                noise = torch.randn(p.shape, generator=gen)
                p.copy_(1 + 0.1 * noise if "norm" in name and name.endswith("weight") else 0.3 * noise)
        ids = torch.randint(0, 32, (2, T), generator=gen)
        mask = torch.ones(2, T, dtype=torch.long)
        mask[1, REAL_IN_SECOND_ROW:] = 0
        out = model(ids, mask[:, None, None, :])
        weight = torch.randn(out.shape, generator=gen)
        (out * weight).sum().backward()
        tensors = {"ids": ids, "mask": mask, "weight": weight, "out": out.detach()}
        for name, p in model.named_parameters():
            tensors[f"param.{name}"] = p.detach().clone()
            tensors[f"grad.{name}"] = p.grad
        path = out_dir / f"004_{placement}.safetensors"
        save_file(tensors, str(path))
        print(f"{path}: {path.stat().st_size} bytes, |out| max {out.abs().max():.3f}")


if __name__ == "__main__":
    torch.set_num_threads(1)
    write(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("tests/fixtures/encoder"))
