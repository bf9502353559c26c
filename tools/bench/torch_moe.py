"""PyTorch timings for the configurations of bench/bench_moe.cpp (conv2d, MoE forward + backward,
LoRA forward). Run right after ./build-bench/bench_moe with the same thread count:
    NANOFORMER_THREADS=2 ./build-bench/bench_moe;  .venv/bin/python tools/bench/torch_moe.py --threads 2
"""
from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F
from torch_baseline import median_ms


def swiglu(ws, x):
    w1, w2, w3 = ws
    return F.linear(F.silu(F.linear(x, w1)) * F.linear(x, w3), w2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=11)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; median ms of {args.reps} runs")

    for name, (B, C, H, O, k, s, p) in {"3x3 (8, 64, 32, 32) -> 64": (8, 64, 32, 64, 3, 1, 1),
                                        "patchify (8, 3, 64, 64) k8 s8 -> 192": (8, 3, 64, 192, 8, 8, 0)}.items():
        x, w = torch.randn(B, C, H, H), torch.randn(O, C, k, k)
        with torch.no_grad():
            print(f"conv2d {name}: {median_ms(lambda: F.conv2d(x, w, None, s, p), args.reps):8.2f} ms")

    T, D, Hd, E, K = 512, 256, 512, 8, 2
    gate = torch.empty(E, D).uniform_(-D ** -0.5, D ** -0.5).requires_grad_()
    experts = [[torch.empty(o, i).uniform_(-i ** -0.5, i ** -0.5).requires_grad_() for o, i in ((Hd, D), (D, Hd), (Hd, D))]
               for _ in range(E)]
    x = torch.randn(T, D, requires_grad=True)

    def moe_grouped():  # tokens sorted by expert, one call per expert (as ours)
        probs = F.linear(x, gate).softmax(-1)
        w, idx = probs.topk(K, -1)
        w = w / (w.sum(-1, keepdim=True) + 1e-20)
        flat = idx.flatten()
        order = flat.argsort(stable=True)
        counts = torch.bincount(flat, minlength=E).tolist()
        tokens = order // K
        outs, start = [], 0
        for e, n in enumerate(counts):
            sel = tokens[start:start + n]
            outs.append(swiglu(experts[e], x[sel]) * w.flatten()[order[start:start + n]].unsqueeze(1))
            start += n
        y = torch.zeros_like(x).index_add(0, tokens, torch.cat(outs))
        y.sum().backward()

    print(f"MoE grouped fwd+bwd (512, 256) E8 top2: {median_ms(moe_grouped, args.reps):8.2f} ms")

    base = torch.randn(512, 512)
    bias = torch.randn(512)
    A, Bm = torch.randn(16, 512), torch.randn(512, 16)
    xl = torch.randn(2048, 512)
    merged = base + 2.0 * Bm @ A
    with torch.no_grad():
        print(f"LoRA unmerged fwd (2048, 512) r16: "
              f"{median_ms(lambda: F.linear(xl, base, bias) + (xl @ A.T @ Bm.T) * 2.0, args.reps):8.2f} ms")
        print(f"LoRA merged fwd (2048, 512): {median_ms(lambda: F.linear(xl, merged, bias), args.reps):8.2f} ms")


if __name__ == "__main__":
    main()
