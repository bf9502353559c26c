"""Mixture of Experts written from the reference documents: routing by 000 (softmax over the top-k
logits), by 002 (MiniMind's MoEGate: softmax, top-k, optional renormalisation) and by 001 (dense
softmax gating); shared experts added (MiniMind); 002's load-balancing loss
    aux = alpha * E * sum_i f_i P_i,  f_i = fraction of tokens with expert i in their top k,
    P_i = mean softmax probability of expert i,
over the batch or per sequence (averaged). Experts are MiniMind's FeedForward w2(silu(w1 x) * w3 x),
run as 002 does, on the rows each expert was chosen for (output[mask] += w[mask] * expert(x[mask])).

A case stores x, every parameter under its module name (gate.weight, experts.0.w1.weight, ...),
out, aux_loss, grad_out and grad_<name> = d(sum(out * grad_out) + aux_loss) / d<name>."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from golden_common import Fixture, randn

ROUTINGS = ("topk_then_softmax", "softmax_then_topk", "dense")


def expert(t: dict, prefix: str, x: torch.Tensor) -> torch.Tensor:
    return F.linear(F.silu(F.linear(x, t[prefix + "w1.weight"])) * F.linear(x, t[prefix + "w3.weight"]),
                    t[prefix + "w2.weight"])


def moe(t: dict, cfg: dict) -> tuple[torch.Tensor, torch.Tensor]:
    x = t["x"]
    B, T, D = x.shape
    E, k, alpha = cfg["n_experts"], cfg["top_k"], cfg["aux_loss_alpha"]
    xf = x.reshape(-1, D)
    logits = F.linear(xf, t["gate.weight"], t.get("gate.bias"))
    probs = logits.softmax(dim=-1)
    out = torch.zeros_like(xf)
    aux = torch.zeros((), dtype=x.dtype)
    if cfg["routing"] == "dense":
        for e in range(E):
            out = out + probs[:, e:e + 1] * expert(t, f"experts.{e}.", xf)
    else:
        if cfg["routing"] == "topk_then_softmax":
            values, idx = torch.topk(logits, k, dim=-1)
            weights = values.softmax(dim=-1)
        else:
            weights, idx = torch.topk(probs, k, dim=-1)
            if cfg["norm_topk_prob"] and k > 1:
                weights = weights / (weights.sum(dim=-1, keepdim=True) + 1e-20)
        for slot in range(k):
            for e in range(E):
                mask = idx[:, slot] == e
                if mask.any():
                    out = out.index_put((mask,), out[mask] + weights[mask, slot:slot + 1] * expert(t, f"experts.{e}.", xf[mask]))
        if alpha > 0:
            S = B if cfg["seq_aux"] else 1
            chosen = torch.zeros(B * T, E, dtype=x.dtype).scatter_(1, idx, 1.0)  # multi-hot top-k
            f = chosen.view(S, -1, E).mean(dim=1)                                # (S, E)
            P = probs.view(S, -1, E).mean(dim=1)                                 # (S, E)
            aux = alpha * E * (f * P).sum(dim=1).mean()
    for s in range(cfg["n_shared_experts"]):
        out = out + expert(t, f"shared_experts.{s}.", xf)
    return out.view(B, T, D), aux


def routing_ok(t: dict, cfg: dict) -> bool:
    """Top-k must be unambiguous (no near ties at the k-th place) and every expert must get rows."""
    if cfg["routing"] == "dense":
        return True
    logits = F.linear(t["x"].reshape(-1, cfg["dim"]), t["gate.weight"], t.get("gate.bias"))
    ordered = logits.sort(dim=-1, descending=True).values
    k = cfg["top_k"]
    if k < cfg["n_experts"] and (ordered[:, k - 1] - ordered[:, k]).min() < 1e-3:
        return False
    counts = torch.bincount(logits.topk(k, dim=-1).indices.flatten(), minlength=cfg["n_experts"])
    return bool((counts > 0).all())


def fixture() -> Fixture:
    fx = Fixture("moe", seed=34, description=__doc__.split("\n\n")[0])

    def case(name, routing, top_k=2, norm_topk_prob=True, n_shared=0, alpha=0.1, seq_aux=True, gate_bias=False,
             batch=2, seq=5, dim=6, hidden=8, n_experts=4, dtype=torch.float32):
        cfg = {"routing": routing, "dim": dim, "hidden": hidden, "n_experts": n_experts, "top_k": top_k,
               "norm_topk_prob": norm_topk_prob, "n_shared_experts": n_shared, "aux_loss_alpha": alpha,
               "seq_aux": seq_aux, "gate_bias": gate_bias}
        for _ in range(20):  # redraw (deterministically) until the routing is unambiguous
            t = {"x": randn(batch, seq, dim, dtype=dtype), "gate.weight": randn(n_experts, dim, dtype=dtype)}
            if gate_bias:
                t["gate.bias"] = randn(n_experts, dtype=dtype, scale=0.5)
            if routing_ok(t, cfg):
                break
        else:
            raise ValueError(f"moe.{name}: no draw without near ties or idle experts; change the shapes")
        for prefix in [f"experts.{e}." for e in range(n_experts)] + [f"shared_experts.{s}." for s in range(n_shared)]:
            t[prefix + "w1.weight"] = randn(hidden, dim, dtype=dtype, scale=0.4)
            t[prefix + "w3.weight"] = randn(hidden, dim, dtype=dtype, scale=0.4)
            t[prefix + "w2.weight"] = randn(dim, hidden, dtype=dtype, scale=0.4)
        leaves = {key: v.clone().requires_grad_(True) for key, v in t.items()}
        out, aux = moe(leaves, cfg)
        grad_out = torch.randn(out.shape, dtype=dtype)
        ((out * grad_out).sum() + aux).backward()
        stored = dict(t)
        stored.update({"out": out.detach(), "aux_loss": aux.detach(), "grad_out": grad_out})
        for key, leaf in leaves.items():
            stored[f"grad_{key}"] = leaf.grad
        for role, v in stored.items():
            fx.tensors[f"{name}.{role}"] = v.contiguous().clone()
        fx.cases[name] = cfg

    case("minimind_seq_aux_shared", "softmax_then_topk", n_shared=1)
    case("minimind_batch_aux_unnormalised", "softmax_then_topk", norm_topk_prob=False, seq_aux=False)
    case("topk_then_softmax_bias", "topk_then_softmax", gate_bias=True, seq_aux=False, alpha=0.05)
    case("top1_two_shared", "softmax_then_topk", top_k=1, n_shared=2, alpha=0.2)
    case("dense_shared_bias", "dense", n_shared=1, alpha=0.0, gate_bias=True)
    case("minimind_top3_of_5", "softmax_then_topk", top_k=3, n_experts=5, seq=6)
    return fx


def fixtures() -> list[Fixture]:
    return [fixture()]
