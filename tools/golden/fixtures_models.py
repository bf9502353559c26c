"""Whole decoder language models as the reference documents write them, at reduced width and depth
(dim 16, 4 heads, 2 layers, vocab 32, T 8, batch 2), every parameter an input under nanoformer's
DecoderLM names (tok_embeddings.weight, layers.N.attn.q_proj.weight, norm.weight, output.weight):
  gpt2          000 / GPT-2: learned positions, pre-norm LayerNorm, causal MHA with biases,
                GELU (tanh) MLP, final LayerNorm, head tied to the token embedding
  minimind      002 MiniMind2 dense: RMSNorm (eps 1e-5), GQA (2 kv heads) with interleaved RoPE
                (theta 1e6), SwiGLU (multiple_of 8 -> hidden 48), tied head
  minimind_moe  002 MiniMind2-MoE: the same with 4 routed experts (top-2, softmax then top-k,
                renormalised) and 1 shared expert per layer (SwiGLU hidden 16 by mlp_hidden), plus
                the summed load-balancing loss
  nanochat      003: norm after the embedding, parameter-free F.rms_norm, QK norm, rotary by -theta
                (half split), relu^2 MLP, no biases, untied head, logit softcap 15 tanh(z / 15)

Each case's "out" is the training loss: mean cross-entropy over the targets that are not -100
(plus the MoE auxiliary losses, summed over layers); it also stores "logits" (B, T, V), the
"token_loss" and the "aux_loss", and the case parameters hold the model's nanoformer config JSON.
"""
from __future__ import annotations

import json

import torch
import torch.nn.functional as F

from fixtures_blocks import (D, H, attention, attn_params, layer_norm, lin, linear_params, norm_params,
                             rms_norm, rope_half_negative, rope_interleaved)
from fixtures_moe import moe, routing_ok
from golden_common import Fixture, randn

B, T, V, LAYERS = 2, 8, 32, 2
BASE = {"vocab_size": V, "dim": D, "n_layers": LAYERS, "n_heads": H, "max_seq_len": T}


def ids_and_targets() -> tuple[torch.Tensor, torch.Tensor]:
    ids = torch.randint(0, V, (B, T))
    targets = torch.randint(0, V, (B, T))
    targets[0, -2:] = -100  # ignored positions
    targets[1, 3] = -100
    return ids, targets


def loss_of(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1), ignore_index=-100)


def add_case(fx: Fixture, name: str, forward, params: dict, config: dict) -> None:
    """forward(ids, p) -> (logits, aux); the case's out is loss + aux."""
    ids, targets = ids_and_targets()
    kept = {}

    def run(ids, targets, **p):
        logits, aux = forward(ids, p)
        token_loss = loss_of(logits, targets)
        kept.update(logits=logits.detach(), token_loss=token_loss.detach(), aux_loss=aux.detach())
        return token_loss + aux

    fx.case(name, run, {"ids": ids, "targets": targets, **params}, config=json.dumps({**BASE, **config}))
    for role, t in kept.items():
        fx.tensors[f"{name}.{role}"] = t.contiguous().clone()


def layer_params(i: int, attn_bias: bool, n_kv: int, norms: dict, mlp: dict) -> dict:
    p = {}
    for name, bias in norms.items():
        p.update(norm_params(f"layers.{i}.{name}", bias))
    p.update(attn_params(f"layers.{i}.attn", H, n_kv, attn_bias))
    for name, (fan_in, fan_out, bias) in mlp.items():
        p.update(linear_params(f"layers.{i}.mlp.{name}", fan_in, fan_out, bias))
    return p


def gpt2(fx: Fixture) -> None:
    p = {"tok_embeddings.weight": randn(V, D), "pos_embeddings.weight": randn(T, D, scale=0.1),
         **norm_params("norm", True)}
    for i in range(LAYERS):
        p.update(layer_params(i, True, H, {"attn_norm": True, "mlp_norm": True},
                              {"c_fc": (D, 4 * D, True), "c_proj": (4 * D, D, True)}))

    def forward(ids, p):
        x = p["tok_embeddings.weight"][ids] + p["pos_embeddings.weight"][: ids.shape[1]]
        for i in range(LAYERS):
            n = f"layers.{i}"
            x = x + attention(p, f"{n}.attn", layer_norm(p, f"{n}.attn_norm", x), H, H, causal=True)
            h = layer_norm(p, f"{n}.mlp_norm", x)
            x = x + lin(p, f"{n}.mlp.c_proj", F.gelu(lin(p, f"{n}.mlp.c_fc", h), approximate="tanh"))
        return F.linear(layer_norm(p, "norm", x), p["tok_embeddings.weight"]), torch.zeros(())

    add_case(fx, "gpt2", forward, p, {})


MINIMIND = {"n_kv_heads": 2, "norm": "rmsnorm", "norm_eps": 1e-5, "norm_bias": False, "position": "rope",
            "rope_layout": "interleaved", "rope_theta": 1e6, "mlp": "swiglu", "mlp_multiple_of": 8,
            "attention_bias": False, "mlp_bias": False}
SWIGLU_HIDDEN = 48  # 8 * ceil(int(8 * 16 / 3) / 8)
EXPERT_HIDDEN = 16  # the MoE case sets mlp_hidden, keeping its five experts per layer small


def swiglu(p, prefix, x):
    return lin(p, f"{prefix}.w2", F.silu(lin(p, f"{prefix}.w1", x)) * lin(p, f"{prefix}.w3", x))


def swiglu_params(prefix: str, hidden: int = SWIGLU_HIDDEN) -> dict:
    return {**linear_params(f"{prefix}.w1", D, hidden, False),
            **linear_params(f"{prefix}.w2", hidden, D, False),
            **linear_params(f"{prefix}.w3", D, hidden, False)}


def minimind_forward(mlp):
    """002's MiniMindLM: embedding, blocks (x + attn(rms(x)); h + ffn(rms(h))), rms, tied head."""
    rotate = rope_interleaved(1e6)

    def forward(ids, p):
        x = p["tok_embeddings.weight"][ids]
        aux = torch.zeros(())
        for i in range(LAYERS):
            n = f"layers.{i}"
            x = x + attention(p, f"{n}.attn", rms_norm(p, f"{n}.attn_norm", x), H, 2, causal=True, rotate=rotate)
            y, layer_aux = mlp(p, n, rms_norm(p, f"{n}.mlp_norm", x))
            x, aux = x + y, aux + layer_aux
        return F.linear(rms_norm(p, "norm", x), p["tok_embeddings.weight"]), aux

    return forward


def minimind_params(mlp_params) -> dict:
    p = {"tok_embeddings.weight": randn(V, D), **norm_params("norm", False)}
    for i in range(LAYERS):
        p.update(layer_params(i, False, 2, {"attn_norm": False, "mlp_norm": False}, {}))
        p.update(mlp_params(f"layers.{i}.mlp"))
    return p


def minimind(fx: Fixture) -> None:
    forward = minimind_forward(lambda p, n, h: (swiglu(p, f"{n}.mlp", h), torch.zeros(())))
    add_case(fx, "minimind", forward, minimind_params(swiglu_params), MINIMIND)


MOE = {"n_experts": 4, "n_shared_experts": 1, "top_k": 2, "routing": "softmax_then_topk", "norm_topk_prob": True,
       "gate_bias": False, "aux_loss_alpha": 0.1, "seq_aux": True}


def minimind_moe(fx: Fixture) -> None:
    def moe_params(prefix: str) -> dict:
        p = linear_params(f"{prefix}.gate", D, MOE["n_experts"], False)
        for e in range(MOE["n_experts"]):
            p.update(swiglu_params(f"{prefix}.experts.{e}", EXPERT_HIDDEN))
        p.update(swiglu_params(f"{prefix}.shared_experts.0", EXPERT_HIDDEN))
        return p

    routing_clear = []

    def moe_layer(p, n, h):
        prefix = f"{n}.mlp."
        t = {k[len(prefix):]: v for k, v in p.items() if k.startswith(prefix)}
        t["x"] = h
        routing_clear.append(routing_ok(t, {**MOE, "dim": D}))
        return moe(t, MOE)

    forward = minimind_forward(moe_layer)
    while True:  # redraw until every layer's top-2 is unambiguous and every expert gets tokens
        p = minimind_params(moe_params)
        state = torch.get_rng_state()
        ids, _ = ids_and_targets()
        routing_clear.clear()
        with torch.no_grad():
            forward(ids, p)
        if all(routing_clear):
            torch.set_rng_state(state)  # add_case draws these same ids again
            break
    add_case(fx, "minimind_moe", forward, p, {**MINIMIND, "mlp_hidden": EXPERT_HIDDEN, "moe": MOE})


NANOCHAT_EPS = torch.finfo(torch.float32).eps
NANOCHAT_CONFIG = {"n_kv_heads": 2, "norm": "rmsnorm_no_weight", "norm_eps": NANOCHAT_EPS, "norm_bias": False,
                   "embedding_norm": True, "position": "rope", "rope_layout": "half_negative", "qk_norm": True,
                   "qk_norm_eps": NANOCHAT_EPS, "mlp": "relu2", "attention_bias": False, "mlp_bias": False,
                   "tie_embeddings": False, "logit_softcap": 15.0, "init": "nanochat"}


def nanochat_params() -> dict[str, torch.Tensor]:
    p = {"tok_embeddings.weight": randn(V, D), **linear_params("output", D, V, False)}
    for i in range(LAYERS):
        p.update(layer_params(i, False, 2, {}, {"c_fc": (D, 4 * D, False), "c_proj": (4 * D, D, False)}))
    return p


def nanochat_forward(ids: torch.Tensor, p: dict) -> tuple[torch.Tensor, torch.Tensor]:
    rotate = rope_half_negative(10000.0)

    def norm(x):
        return F.rms_norm(x, (x.size(-1),))

    x = norm(p["tok_embeddings.weight"][ids])
    for i in range(LAYERS):
        n = f"layers.{i}"
        x = x + attention(p, f"{n}.attn", norm(x), H, 2, causal=True, rotate=rotate, qk_norm=True)
        x = x + lin(p, f"{n}.mlp.c_proj", F.relu(lin(p, f"{n}.mlp.c_fc", norm(x))).square())
    logits = lin(p, "output", norm(x))
    return 15 * torch.tanh(logits / 15), torch.zeros(())


def nanochat(fx: Fixture) -> None:
    add_case(fx, "nanochat", nanochat_forward, nanochat_params(), NANOCHAT_CONFIG)


def fixtures() -> list[Fixture]:
    fx = Fixture("models", seed=70, description=__doc__.splitlines()[0])
    for build in (gpt2, minimind, minimind_moe, nanochat):
        build(fx)
    return [fx]
