"""The encoder-decoder Transformer of reference documents 001 and 004, as a PyTorch reference for
nanoformer's EncoderDecoder (tests/models/test_encoder_decoder.cpp). Regenerate with the other
fixtures:

    .venv/bin/python tools/golden/generate_all.py tests/golden

The layers are torch.nn.TransformerEncoderLayer / TransformerDecoderLayer (relu FFN, batch_first,
norm_first=False for 001's post-norm, True for pre-norm), stacked without torch.nn.Transformer's
final LayerNorms, which 001's post-norm model does not have (with pre-norm the stacks end in one
LayerNorm each, as 004's Pre-LN encoder). Around them, from 001 and 004:
  x_t = sqrt(d) Embedding(u_t) + p_t,  p_(t,2i) = sin(t / 10000^(2i/d)),  p_(t,2i+1) = cos(t / 10000^(2i/d))
(or learned positions), source padding hidden from encoder self-attention and cross-attention,
causal decoder self-attention with target padding, and the pre-softmax linear (no bias), tied to
the target embedding or its own.

Cases (dim 16, 4 heads, FFN 32, source vocab 40, target vocab 48, batch 2, S 7, T 6, the second
source padded after 4 tokens and the second target after 4; targets -100 there and at one more
place; 2 + 2 layers in the first case, 1 + 1 in the variants, so that the file stays small):
  post         001: sinusoidal positions, post-norm, untied head
  shared_tied  one vocabulary of 48 for source and target, one embedding matrix for both and the head
  learned      learned positions (encoder and decoder each their own), head tied to the target embedding
  pre_norm     pre-norm layers and a final LayerNorm after each stack, untied head
Each case stores src, tgt, src_padding, tgt_padding (bool, true = real token), targets, every
parameter under nanoformer's name, "logits" (B, T, 48), "out" = the mean token loss, "grad_out" (a
random scalar) and "grad_<name>" = d(out * grad_out) / d(parameter) for every parameter; its
parameters hold the nanoformer config JSON. The shared_tied case also records "base_parameters":
sum(p.numel()) of this reference built as configs/transformer-base.json says.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

from golden_common import Fixture, randn

B, S, T = 2, 7, 6
SMALL = {"architecture": "encoder_decoder", "src_vocab_size": 40, "tgt_vocab_size": 48, "dim": 16,
         "n_encoder_layers": 2, "n_decoder_layers": 2, "n_heads": 4, "mlp_hidden": 32, "max_seq_len": 8,
         "dropout": 0.0}
ONE_LAYER_EACH = {"n_encoder_layers": 1, "n_decoder_layers": 1}  # the variants: the fixture stays small
BASE_PRESET = Path(__file__).resolve().parents[2] / "configs" / "transformer-base.json"


def sinusoidal_table(max_len: int, d: int) -> torch.Tensor:
    """001: p_(t,2i) = sin(t / 10000^(2i/d)), p_(t,2i+1) = cos(t / 10000^(2i/d)), in f64 then rounded."""
    t = torch.arange(max_len, dtype=torch.float64)[:, None]
    inv_freq = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    pe = torch.zeros(max_len, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(t * inv_freq)
    pe[:, 1::2] = torch.cos(t * inv_freq)
    return pe.float()


class Positions(nn.Module):
    def __init__(self, kind: str, max_len: int, d: int):
        super().__init__()
        if kind == "learned":
            self.weight = nn.Parameter(torch.randn(max_len, d))
        else:
            self.register_buffer("pe", sinusoidal_table(max_len, d))

    def forward(self, x):
        table = self.weight if hasattr(self, "weight") else self.pe
        return x + table[: x.size(1)]


class Reference(nn.Module):
    """001's encoder-decoder Transformer from a nanoformer config dict (defaults as nanoformer's)."""

    def __init__(self, c: dict):
        super().__init__()
        d, pre = c["dim"], c.get("norm_placement", "post") == "pre"
        ffn, eps = c.get("mlp_hidden") or 4 * d, c.get("norm_eps", 1e-5)
        position, max_len = c.get("position", "sinusoidal"), c["max_seq_len"]
        self.scale = math.sqrt(d) if c.get("scale_embeddings", True) else 1.0
        self.src_embed = nn.Embedding(c["src_vocab_size"], d)
        self.tgt_embed = self.src_embed if c.get("share_embeddings", False) else nn.Embedding(c["tgt_vocab_size"], d)
        self.encoder_positions = Positions(position, max_len, d)
        self.decoder_positions = Positions(position, max_len, d)

        def layer(kind):
            return kind(d, c["n_heads"], dim_feedforward=ffn, dropout=c.get("dropout", 0.0), activation="relu",
                        layer_norm_eps=eps, batch_first=True, norm_first=pre)

        self.encoder_layers = nn.ModuleList(layer(nn.TransformerEncoderLayer) for _ in range(c["n_encoder_layers"]))
        self.decoder_layers = nn.ModuleList(layer(nn.TransformerDecoderLayer) for _ in range(c["n_decoder_layers"]))
        self.encoder_norm = nn.LayerNorm(d, eps=eps) if pre else None
        self.decoder_norm = nn.LayerNorm(d, eps=eps) if pre else None
        self.output = nn.Linear(d, c["tgt_vocab_size"], bias=False)
        if c.get("tie_output", True):
            self.output.weight = self.tgt_embed.weight

    def forward(self, src, tgt, src_padding, tgt_padding):
        x = self.encoder_positions(self.src_embed(src) * self.scale)
        for layer in self.encoder_layers:
            x = layer(x, src_key_padding_mask=~src_padding)
        memory = self.encoder_norm(x) if self.encoder_norm is not None else x
        y = self.decoder_positions(self.tgt_embed(tgt) * self.scale)
        future = torch.ones(tgt.size(1), tgt.size(1), dtype=torch.bool).triu(1)  # True = may not attend
        for layer in self.decoder_layers:
            y = layer(y, memory, tgt_mask=future, tgt_key_padding_mask=~tgt_padding,
                      memory_key_padding_mask=~src_padding)
        if self.decoder_norm is not None:
            y = self.decoder_norm(y)
        return self.output(y)


LAYER_NAMES = {"self_attn": "attn", "multihead_attn": "cross_attn", "linear1": "mlp.linear1",
               "linear2": "mlp.linear2", "norm1": "attn_norm"}
ENCODER_NORMS = {"norm2": "mlp_norm"}
DECODER_NORMS = {"norm2": "cross_attn_norm", "norm3": "mlp_norm"}
TOP_NAMES = {"src_embed": "src_embeddings", "tgt_embed": "tgt_embeddings", "output": "output"}


def ours(name: str, t: torch.Tensor) -> dict[str, torch.Tensor]:
    """A reference parameter (or its gradient) under nanoformer's names: in_proj split into q, k, v."""
    parts = name.split(".")
    if parts[0] in TOP_NAMES:
        return {".".join([TOP_NAMES[parts[0]], *parts[1:]]): t}
    if parts[0] not in ("encoder_layers", "decoder_layers"):
        return {name: t}  # positions, final norms
    stack, index, module, leaf = parts[0], parts[1], parts[2], parts[-1]
    norms = ENCODER_NORMS if stack == "encoder_layers" else DECODER_NORMS
    prefix = f"{stack}.{index}.{({**LAYER_NAMES, **norms})[module]}"
    if leaf.startswith("in_proj_"):
        kind = leaf[len("in_proj_"):]
        return {f"{prefix}.{x}_proj.{kind}": chunk for x, chunk in zip("qkv", t.chunk(3, 0))}
    if parts[3:4] == ["out_proj"]:
        return {f"{prefix}.o_proj.{leaf}": t}
    return {f"{prefix}.{leaf}": t}


def randomise(model: nn.Module, d: int) -> None:
    """Non-trivial values everywhere: norms near 1 / 0, biases small, embeddings ~ normal(0, d^-1/2),
    the layers' matrices as torch initialised them."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name and name.endswith("weight"):
                p.copy_(1 + randn(*p.shape, scale=0.1))
            elif p.dim() == 1:
                p.copy_(randn(*p.shape, scale=0.1))
            elif "embed" in name or "positions" in name:
                p.copy_(randn(*p.shape, scale=d ** -0.5))


def add_case(fx: Fixture, name: str, overrides: dict, **extra) -> None:
    config = {**SMALL, **overrides}
    model = Reference(config)
    model.train()  # dropout is 0; training mode keeps torch off its fused inference path
    randomise(model, config["dim"])
    src = torch.randint(0, config["src_vocab_size"], (B, S))
    tgt = torch.randint(0, config["tgt_vocab_size"], (B, T))
    targets = torch.randint(0, config["tgt_vocab_size"], (B, T))
    src_padding = torch.ones(B, S, dtype=torch.bool)
    src_padding[1, 4:] = False
    tgt_padding = torch.ones(B, T, dtype=torch.bool)
    tgt_padding[1, 4:] = False
    targets[1, 4:] = -100
    targets[0, 2] = -100
    logits = model(src, tgt, src_padding, tgt_padding)
    loss = F.cross_entropy(logits.reshape(-1, config["tgt_vocab_size"]), targets.reshape(-1), ignore_index=-100)
    grad_out = torch.randn(())
    loss.backward(grad_out)
    stored = {"src": src, "tgt": tgt, "src_padding": src_padding, "tgt_padding": tgt_padding, "targets": targets,
              "logits": logits.detach(), "out": loss.detach(), "grad_out": grad_out}
    for pname, p in model.named_parameters():
        stored.update(ours(pname, p.detach()))
        stored.update({f"grad_{k}": v for k, v in ours(pname, p.grad).items()})
    for role, t in stored.items():
        fx.tensors[f"{name}.{role}"] = t.contiguous().clone()
    fx.cases[name] = {"config": json.dumps(config), **extra}


def transformer_base_parameters() -> int:
    """sum(p.numel()) of the reference built as the transformer-base preset says (shared parameters once)."""
    return sum(p.numel() for p in Reference(json.loads(BASE_PRESET.read_text())).parameters())


def fixtures() -> list[Fixture]:
    fx = Fixture("encoder_decoder", seed=71, description=__doc__.splitlines()[0])
    add_case(fx, "post", {"tie_output": False})
    add_case(fx, "shared_tied", {**ONE_LAYER_EACH, "src_vocab_size": 48, "share_embeddings": True, "tie_output": True},
             base_parameters=transformer_base_parameters())
    add_case(fx, "learned", {**ONE_LAYER_EACH, "position": "learned", "tie_output": True})
    add_case(fx, "pre_norm", {**ONE_LAYER_EACH, "norm_placement": "pre", "tie_output": False})
    return [fx]
