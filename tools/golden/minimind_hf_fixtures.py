#!/usr/bin/env python3
"""MiniMind's Hugging Face form (MiniMind2's MiniMindForCausalLM, 2025) for tests/formats/test_minimind_hf.cpp:

    .venv/bin/python tools/golden/minimind_hf_fixtures.py write tests/fixtures/minimind_hf
        writes the fixtures below.
    .venv/bin/python tools/golden/minimind_hf_fixtures.py check DIR
        for every DIR/<case>/ folder nanoformer exported (NF_MINIMIND_HF_EXPORT_DIR=DIR
        build/test_minimind_hf; <case>_sharded/ in shards), loads it with this MiniMindForCausalLM's
        from_pretrained and compares its logits with ours in DIR/<case>.logits.safetensors.

MiniMindConfig / MiniMindForCausalLM below are a PyTorch reimplementation written from the description
of that model (docs/models.md, "Checkpoint formats"): embed_tokens, blocks x + attn(rms(x)),
h + mlp(rms(h)) with GQA attention and rotate_half RoPE (cos/sin = cat(cos(t f), cos(t f)),
f_i = rope_theta^(-2i/head_dim)), SwiGLU down(silu(gate(x)) * up(x)) or the MoE (MoEGate: softmax
scores, top-k, renormalised when top_k > 1 and norm_topk_prob; routed experts weighted, shared experts
added; the sequence-level load-balancing loss in training mode), final RMSNorm, lm_head tied to
embed_tokens, no biases. Each case is saved by transformers' save_pretrained in float16, as MiniMind's
convert_torch2transformers_minimind does (the weights are rounded to float16 first, so the float32
forward below sees exactly the stored values), into <dir>/<case>/ (config.json with auto_map, as
MiniMind's register_for_auto_class writes it, + model.safetensors), and <dir>/<case>.golden.safetensors holds
  ids (2, T) int64, targets (2, T) (ids shifted left, -100 last), logits (2, T, vocab) in eval mode,
  loss = mean cross-entropy of logits[:, t] vs ids[:, t + 1] (+ aux_loss), aux_loss (training mode),
  grad.<name> = d loss / d parameter, for every parameter by its MiniMindForCausalLM name.
Cases: dense and moe (4 routed + 1 shared experts, top-2), hidden 32, 4 heads, 2 kv heads, 2 layers,
vocab 64.
"""
from __future__ import annotations

import math
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import save_file
from torch import nn
from transformers import PretrainedConfig, PreTrainedModel

from hf_fixtures import check, run

T = 8


class MiniMindConfig(PretrainedConfig):
    model_type = "minimind"

    def __init__(self, dropout=0.0, bos_token_id=1, eos_token_id=2, hidden_act="silu", hidden_size=512,
                 intermediate_size=None, max_position_embeddings=32768, num_attention_heads=8, num_hidden_layers=8,
                 num_key_value_heads=2, vocab_size=6400, rms_norm_eps=1e-5, rope_theta=1e6,
                 inference_rope_scaling=False, flash_attn=True, use_moe=False, num_experts_per_tok=2,
                 n_routed_experts=4, n_shared_experts=1, scoring_func="softmax", aux_loss_alpha=0.1, seq_aux=True,
                 norm_topk_prob=True, **kwargs):
        super().__init__(bos_token_id=bos_token_id, eos_token_id=eos_token_id, **kwargs)
        self.dropout, self.hidden_act, self.hidden_size = dropout, hidden_act, hidden_size
        # None: 8/3 hidden rounded up to a multiple of 64
        self.intermediate_size = intermediate_size or 64 * math.ceil(int(hidden_size * 8 / 3) / 64)
        self.max_position_embeddings, self.num_attention_heads = max_position_embeddings, num_attention_heads
        self.num_hidden_layers, self.num_key_value_heads, self.vocab_size = num_hidden_layers, num_key_value_heads, vocab_size
        self.rms_norm_eps, self.rope_theta, self.flash_attn = rms_norm_eps, rope_theta, flash_attn
        self.inference_rope_scaling = inference_rope_scaling
        self.use_moe, self.num_experts_per_tok, self.n_routed_experts = use_moe, num_experts_per_tok, n_routed_experts
        self.n_shared_experts, self.scoring_func, self.aux_loss_alpha = n_shared_experts, scoring_func, aux_loss_alpha
        self.seq_aux, self.norm_topk_prob = seq_aux, norm_topk_prob
        self.tie_word_embeddings = True  # lm_head is embed_tokens (transformers 5 ties on load only when set)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(dim))

    def forward(self, x):  # weight * x / sqrt(mean(x^2) + eps)
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rotate_half(x):  # cat(-x2, x1)
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Attention(nn.Module):
    def __init__(self, c: MiniMindConfig):
        super().__init__()
        self.heads, self.kv_heads = c.num_attention_heads, c.num_key_value_heads
        self.head_dim = c.hidden_size // c.num_attention_heads
        self.q_proj = nn.Linear(c.hidden_size, self.heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(c.hidden_size, self.kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(c.hidden_size, self.kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.heads * self.head_dim, c.hidden_size, bias=False)

    def forward(self, x, cos, sin):
        B, L, _ = x.shape
        q = self.q_proj(x).view(B, L, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(B, L, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(B, L, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        rep = self.heads // self.kv_heads  # GQA: each kv head serves `rep` query heads
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        scores = scores + torch.full((L, L), float("-inf")).triu(1)
        out = scores.softmax(dim=-1) @ v
        return self.o_proj(out.transpose(1, 2).reshape(B, L, -1))


class FeedForward(nn.Module):
    def __init__(self, c: MiniMindConfig):
        super().__init__()
        self.gate_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.down_proj = nn.Linear(c.intermediate_size, c.hidden_size, bias=False)
        self.up_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)

    def forward(self, x):  # down(silu(gate(x)) * up(x))
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class MoEGate(nn.Module):
    def __init__(self, c: MiniMindConfig):
        super().__init__()
        self.c = c
        self.weight = nn.Parameter(torch.empty(c.n_routed_experts, c.hidden_size))

    def forward(self, x):
        B, L, D = x.shape
        c, E, k = self.c, self.c.n_routed_experts, self.c.num_experts_per_tok
        scores = F.linear(x.reshape(-1, D), self.weight).softmax(dim=-1)  # (B L, E)
        weight, idx = torch.topk(scores, k, dim=-1)
        if k > 1 and c.norm_topk_prob:
            weight = weight / (weight.sum(dim=-1, keepdim=True) + 1e-20)
        aux = scores.new_zeros(())
        if self.training and c.aux_loss_alpha > 0:
            if c.seq_aux:  # ce(b, e) = picks of e in sequence b / (L k / E); aux = mean_b sum_e ce P(b, e) alpha
                ce = torch.zeros(B, E).scatter_add_(1, idx.view(B, -1), torch.ones(B, L * k)) / (L * k / E)
                aux = (ce * scores.view(B, L, E).mean(dim=1)).sum(dim=1).mean() * c.aux_loss_alpha
            else:  # f_e = mean one-hot(picks) E, P_e = mean score; aux = sum f P alpha
                f = F.one_hot(idx.view(-1), E).float().mean(0) * E
                aux = (scores.mean(0) * f).sum() * c.aux_loss_alpha
        return idx, weight, aux


class MOEFeedForward(nn.Module):
    def __init__(self, c: MiniMindConfig):
        super().__init__()
        self.experts = nn.ModuleList(FeedForward(c) for _ in range(c.n_routed_experts))
        self.gate = MoEGate(c)
        self.shared_experts = nn.ModuleList(FeedForward(c) for _ in range(c.n_shared_experts))
        self.aux_loss = None

    def forward(self, x):
        B, L, D = x.shape
        idx, weight, self.aux_loss = self.gate(x)
        flat = x.reshape(-1, D)
        y = torch.zeros_like(flat)
        for slot in range(idx.shape[1]):  # sum over the token's picks of weight * expert(x)
            for e, expert in enumerate(self.experts):
                rows = (idx[:, slot] == e).nonzero().flatten()
                if len(rows):
                    y = y.index_add(0, rows, weight[rows, slot:slot + 1] * expert(flat[rows]))
        y = y.view(B, L, D)
        for expert in self.shared_experts:  # shared experts: added unweighted
            y = y + expert(x)
        return y


class Block(nn.Module):
    def __init__(self, c: MiniMindConfig):
        super().__init__()
        self.self_attn = Attention(c)
        self.input_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.mlp = MOEFeedForward(c) if c.use_moe else FeedForward(c)

    def forward(self, x, cos, sin):
        h = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return h + self.mlp(self.post_attention_layernorm(h))


class MiniMindModel(nn.Module):
    def __init__(self, c: MiniMindConfig):
        super().__init__()
        self.c = c
        self.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size)
        self.layers = nn.ModuleList(Block(c) for _ in range(c.num_hidden_layers))
        self.norm = RMSNorm(c.hidden_size, c.rms_norm_eps)

    def forward(self, ids):
        head_dim = self.c.hidden_size // self.c.num_attention_heads
        f = 1.0 / self.c.rope_theta ** (torch.arange(0, head_dim, 2).float() / head_dim)  # theta^(-2i/head_dim)
        angles = torch.outer(torch.arange(ids.shape[1]).float(), f)
        cos, sin = torch.cat([angles.cos()] * 2, dim=-1), torch.cat([angles.sin()] * 2, dim=-1)
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x, cos, sin)
        aux = sum((layer.mlp.aux_loss for layer in self.layers if self.c.use_moe), x.new_zeros(()))
        return self.norm(x), aux


class MiniMindForCausalLM(PreTrainedModel):
    config_class = MiniMindConfig
    _tied_weights_keys = {"lm_head.weight": "model.embed_tokens.weight"}

    def __init__(self, config: MiniMindConfig):
        super().__init__(config)
        self.model = MiniMindModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.model.embed_tokens.weight = self.lm_head.weight  # always tied
        self.post_init()

    def forward(self, ids):
        hidden, aux = self.model(ids)
        return self.lm_head(hidden), aux


CASES = {
    "dense": dict(intermediate_size=32),
    "moe": dict(intermediate_size=8, use_moe=True, num_experts_per_tok=2, n_routed_experts=4, n_shared_experts=1,
                aux_loss_alpha=0.1, seq_aux=True, norm_topk_prob=True),
}
AUTO_MAP = {"AutoConfig": "model_minimind.MiniMindConfig", "AutoModelForCausalLM": "model_minimind.MiniMindForCausalLM"}


def randomise(model: nn.Module, gen: torch.Generator) -> None:
    """Unit-scale weights rounded to float16 (what the saved folder holds); norms near 1, the gate at 0.5."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen)
            value = 1 + 0.1 * noise if "norm" in name else (0.5 if name.endswith("gate.weight") else 0.15) * noise
            p.copy_(value.half().float())


def routing_ok(model: MiniMindForCausalLM, ids: torch.Tensor) -> bool:
    """Every routed expert of every layer gets tokens, and no token has a near tie at its k-th gate score."""
    scores = []
    hooks = [layer.mlp.gate.register_forward_hook(lambda gate, args, out: scores.append(
        F.linear(args[0].reshape(-1, args[0].shape[-1]), gate.weight).softmax(-1))) for layer in model.model.layers]
    with torch.no_grad():
        model(ids)
    for h in hooks:
        h.remove()
    k, E = model.config.num_experts_per_tok, model.config.n_routed_experts
    ordered = [s.sort(-1, descending=True).values for s in scores]
    used = [torch.bincount(s.topk(k, -1).indices.flatten(), minlength=E) for s in scores]
    return min((o[:, k - 1] - o[:, k]).min().item() for o in ordered) > 2e-3 and all(bool((u > 0).all()) for u in used)


def write_case(out_dir: Path, case: str, options: dict, gen: torch.Generator) -> None:
    config = MiniMindConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                            vocab_size=64, max_position_embeddings=16, **options)
    config.auto_map = AUTO_MAP
    torch.manual_seed(0)
    model = MiniMindForCausalLM(config)
    for _ in range(50):  # redraw (deterministically) until the routing is unambiguous
        randomise(model, gen)
        ids = torch.randint(0, config.vocab_size, (2, T), generator=gen)
        if not config.use_moe or routing_ok(model, ids):
            break
    else:
        raise ValueError(f"{case}: no draw with every expert used and no near ties")
    model.eval()
    with torch.no_grad():
        logits, _ = model(ids)
    model.train()  # the load-balancing loss is a training-mode loss (no dropout here)
    train_logits, aux = model(ids)
    targets = torch.cat([ids[:, 1:], torch.full((2, 1), -100)], dim=1)  # the next token; none after the last
    token_loss = F.cross_entropy(train_logits.reshape(-1, config.vocab_size), targets.reshape(-1), ignore_index=-100)
    loss = token_loss + aux
    loss.backward()
    golden = {"ids": ids, "targets": targets, "logits": logits, "loss": loss.detach(), "aux_loss": aux.detach()}
    golden.update({f"grad.{n}": p.grad for n, p in model.named_parameters()})
    save_file({k: v.contiguous() for k, v in golden.items()}, str(out_dir / f"{case}.golden.safetensors"))
    model.half().save_pretrained(out_dir / case)
    size = sum(f.stat().st_size for f in (out_dir / case).iterdir())
    print(f"{case}: folder {size} bytes, |logits| max {logits.abs().max():.3f}, loss {loss.item():.4f}, "
          f"aux {aux.item():.4f}")


def oracle_model(path: Path):
    """(class name, ids -> logits) of the folder loaded by this MiniMindForCausalLM."""
    model = MiniMindForCausalLM.from_pretrained(path).float().eval()
    return "MiniMindForCausalLM", lambda ids: model(ids)[0]


def write(out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    gen = torch.Generator().manual_seed(5)
    for case, options in CASES.items():
        write_case(out_dir, case, options, gen)


if __name__ == "__main__":
    raise SystemExit(run(__doc__, write, lambda out_dir: check(out_dir, oracle_model)))
