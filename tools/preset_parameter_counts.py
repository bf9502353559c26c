#!/usr/bin/env python3
"""PyTorch's parameter count of every preset in configs/, beside nanoformer's.

    .venv/bin/python tools/preset_parameter_counts.py [--nanoformer build/nanoformer]

Each preset is built on the meta device (no memory is allocated) by a PyTorch implementation:
transformers' own class where it has one (GPT2LMHeadModel, LlamaForCausalLM for llama2.c,
BertModel with its pooler, ViTForImageClassification) and otherwise the module structure the reference documents
give (002's MiniMind Transformer, dense and MoE; 003's nanochat GPT; 001's encoder-decoder on
torch.nn.TransformerEncoderLayer / TransformerDecoderLayer). The count is sum(p.numel()) over
model.parameters(), which lists a tied tensor once. With --nanoformer, each preset's
`nanoformer inspect` line `parameters: N` is read too; the script prints a markdown table and
exits 1 on any mismatch.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import torch
from torch import nn

ROOT = Path(__file__).resolve().parent.parent


def numel(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def swiglu_hidden(c: dict) -> int:
    """002's FeedForward width: 4 dim, two thirds of it, rounded up to multiple_of."""
    if c.get("mlp_hidden", 0):
        return c["mlp_hidden"]
    hidden = int(2 * 4 * c["dim"] / 3)
    m = c.get("mlp_multiple_of", 64)
    return m * ((hidden + m - 1) // m)


# ---- transformers' classes ---------------------------------------------------------------------

def gpt2(c: dict) -> nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel
    return GPT2LMHeadModel(GPT2Config(vocab_size=c["vocab_size"], n_embd=c["dim"], n_layer=c["n_layers"],
                                      n_head=c["n_heads"], n_positions=c["max_seq_len"],
                                      n_inner=c.get("mlp_hidden") or None))


def llama(c: dict) -> nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM
    return LlamaForCausalLM(LlamaConfig(
        vocab_size=c["vocab_size"], hidden_size=c["dim"], intermediate_size=swiglu_hidden(c),
        num_hidden_layers=c["n_layers"], num_attention_heads=c["n_heads"],
        num_key_value_heads=c.get("n_kv_heads") or c["n_heads"], max_position_embeddings=c["max_seq_len"],
        tie_word_embeddings=c.get("tie_embeddings", True)))


def qwen2(c: dict) -> nn.Module:
    from transformers import Qwen2Config, Qwen2ForCausalLM
    return Qwen2ForCausalLM(Qwen2Config(
        vocab_size=c["vocab_size"], hidden_size=c["dim"], intermediate_size=swiglu_hidden(c),
        num_hidden_layers=c["n_layers"], num_attention_heads=c["n_heads"],
        num_key_value_heads=c.get("n_kv_heads") or c["n_heads"], max_position_embeddings=c["max_seq_len"],
        tie_word_embeddings=c.get("tie_embeddings", True)))


def bert(c: dict) -> nn.Module:
    from transformers import BertConfig, BertModel
    return BertModel(BertConfig(vocab_size=c["vocab_size"], hidden_size=c["dim"], num_hidden_layers=c["n_layers"],
                                num_attention_heads=c["n_heads"], intermediate_size=c.get("mlp_hidden") or 4 * c["dim"],
                                max_position_embeddings=c["max_seq_len"], type_vocab_size=c["type_vocab_size"]),
                     add_pooling_layer=c.get("pooler", False))


def vit(c: dict) -> nn.Module:
    from transformers import ViTConfig, ViTForImageClassification
    return ViTForImageClassification(ViTConfig(
        image_size=c["image_size"], patch_size=c["patch_size"], num_channels=c.get("in_channels", 3),
        hidden_size=c["dim"], num_hidden_layers=c["n_layers"], num_attention_heads=c["n_heads"],
        intermediate_size=c.get("mlp_hidden") or 4 * c["dim"], num_labels=c["n_classes"]))


# ---- the reference documents' structures ---------------------------------------------------------

class MiniMindFeedForward(nn.Module):  # 002: w2(silu(w1 x) * w3 x)
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.w1, self.w2, self.w3 = (nn.Linear(dim, hidden, bias=False), nn.Linear(hidden, dim, bias=False),
                                     nn.Linear(dim, hidden, bias=False))


class MiniMindMoE(nn.Module):  # 002: MoEGate(weight (n_routed, dim)), routed and shared experts
    def __init__(self, dim: int, hidden: int, routed: int, shared: int):
        super().__init__()
        self.experts = nn.ModuleList(MiniMindFeedForward(dim, hidden) for _ in range(routed))
        self.gate = nn.Linear(dim, routed, bias=False)
        self.shared_experts = nn.ModuleList(MiniMindFeedForward(dim, hidden) for _ in range(shared))


class MiniMindBlock(nn.Module):
    def __init__(self, c: dict):
        super().__init__()
        dim, heads = c["dim"], c["n_heads"]
        kv, head_dim = c.get("n_kv_heads") or heads, dim // heads
        self.attention = nn.Module()
        self.attention.wq = nn.Linear(dim, heads * head_dim, bias=False)
        self.attention.wk = nn.Linear(dim, kv * head_dim, bias=False)
        self.attention.wv = nn.Linear(dim, kv * head_dim, bias=False)
        self.attention.wo = nn.Linear(heads * head_dim, dim, bias=False)
        self.attention_norm, self.ffn_norm = nn.RMSNorm(dim), nn.RMSNorm(dim)
        moe = c.get("moe")
        self.feed_forward = (MiniMindMoE(dim, swiglu_hidden(c), moe["n_experts"], moe["n_shared_experts"]) if moe
                             else MiniMindFeedForward(dim, swiglu_hidden(c)))


def minimind(c: dict) -> nn.Module:  # 002's Transformer: the output head is tok_embeddings' weight
    m = nn.Module()
    m.tok_embeddings = nn.Embedding(c["vocab_size"], c["dim"])
    m.layers = nn.ModuleList(MiniMindBlock(c) for _ in range(c["n_layers"]))
    m.norm = nn.RMSNorm(c["dim"])
    m.output = nn.Linear(c["dim"], c["vocab_size"], bias=False)
    m.output.weight = m.tok_embeddings.weight
    return m


def nanochat(c: dict) -> nn.Module:  # 003's GPT: parameter-free norms, relu^2 MLP of 4 dim, untied head
    dim, heads = c["dim"], c["n_heads"]
    kv, head_dim = c.get("n_kv_heads") or heads, dim // heads
    m = nn.Module()
    m.transformer = nn.Module()
    m.transformer.wte = nn.Embedding(c["vocab_size"], dim)
    m.transformer.h = nn.ModuleList()
    for _ in range(c["n_layers"]):
        block = nn.Module()
        block.attn = nn.Module()
        block.attn.c_q = nn.Linear(dim, heads * head_dim, bias=False)
        block.attn.c_k = nn.Linear(dim, kv * head_dim, bias=False)
        block.attn.c_v = nn.Linear(dim, kv * head_dim, bias=False)
        block.attn.c_proj = nn.Linear(dim, dim, bias=False)
        block.mlp = nn.Module()
        block.mlp.c_fc = nn.Linear(dim, 4 * dim, bias=False)
        block.mlp.c_proj = nn.Linear(4 * dim, dim, bias=False)
        m.transformer.h.append(block)
    m.lm_head = nn.Linear(dim, c["vocab_size"], bias=False)
    return m


def encoder_decoder(c: dict) -> nn.Module:  # 001 on torch.nn.TransformerEncoderLayer / DecoderLayer
    sys.path.insert(0, str(ROOT / "tools" / "golden"))
    from fixtures_encoder_decoder import Reference
    return Reference(c)


BUILDERS = {
    "gpt2-124m": gpt2, "gpt-mini": gpt2,
    "minimind2-small": minimind, "minimind2": minimind, "minimind2-moe": minimind,
    "nanochat-d20": nanochat, "nanochat-d6": nanochat,
    "llama2c-stories260k": llama,
    "qwen2.5-0.5b": qwen2,
    "transformer-base": encoder_decoder,
    "bert-base": bert,
    "vit-tiny": vit,
}
# The figures the documents quote.
QUOTED = {"gpt2-124m": "124M", "minimind2-small": "26M", "minimind2": "104M", "minimind2-moe": "145M",
          "llama2c-stories260k": "260K", "qwen2.5-0.5b": "0.49B (494,032,768: Qwen2.5-0.5B)",
          "transformer-base": "65M (001's table, base model)",
          "bert-base": "110M (BERT-base)", "vit-tiny": "5.7M (DeiT-Ti / timm vit_tiny_patch16_224)"}


def nanoformer_count(binary: str, preset: str) -> int:
    out = subprocess.run([binary, "inspect", preset], check=True, capture_output=True, text=True, cwd=ROOT).stdout
    return int(next(line for line in out.splitlines() if line.startswith("parameters: ")).split()[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nanoformer", help="the nanoformer binary, to compare with `inspect`")
    args = parser.parse_args()
    presets = sorted(p.stem for p in (ROOT / "configs").glob("*.json"))
    missing = [p for p in presets if p not in BUILDERS]
    if missing:
        print(f"no PyTorch builder for: {', '.join(missing)}", file=sys.stderr)
        return 1
    print("| preset | PyTorch sum(p.numel()) | nanoformer inspect | the documents |")
    print("| --- | --- | --- | --- |")
    bad = 0
    for preset in presets:
        config = json.loads((ROOT / "configs" / f"{preset}.json").read_text())
        with torch.device("meta"):
            torch_count = numel(BUILDERS[preset](config))
        ours = nanoformer_count(args.nanoformer, preset) if args.nanoformer else None
        bad += ours is not None and ours != torch_count
        mark = "" if ours is None else f"{ours:,}" + ("" if ours == torch_count else " MISMATCH")
        print(f"| `{preset}` | {torch_count:,} | {mark} | {QUOTED.get(preset, '-')} |")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
