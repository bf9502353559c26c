"""PyTorch timings for the configurations of bench/bench_attention.cpp: F.scaled_dot_product_attention,
causal, f32, forward and forward+backward; a sliding window W > 0 as its bool mask (torch's CPU
kernels have no window of their own, so they compute every key and mask).

Run right after the C++ benchmark on the same machine, with the same thread count, and compare medians:
    NANOFORMER_THREADS=2 ./build/bench_attention ...;  .venv/bin/python tools/bench/torch_attention.py --threads 2
"""
from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F

from torch_baseline import median_ms

# (B, H, Hkv, T, D, W), as bench_attention.cpp
SHAPES = [(1, 8, 8, 512, 64, 0), (4, 8, 8, 256, 64, 0), (1, 8, 2, 512, 64, 0), (1, 8, 8, 1024, 64, 0),
          (1, 8, 8, 1024, 64, 128)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=11)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; median ms of {args.reps} runs")
    for b, h, hkv, t, d, w in SHAPES:
        q = torch.randn(b, h, t, d, requires_grad=True)
        k = torch.randn(b, hkv, t, d, requires_grad=True)
        v = torch.randn(b, hkv, t, d, requires_grad=True)
        g = torch.randn(b, h, t, d)
        gqa = h != hkv
        # query i sees keys i - w < j <= i
        window = torch.ones(t, t, dtype=torch.bool).tril() & ~torch.ones(t, t, dtype=torch.bool).tril(-w) if w else None

        def attend():
            return F.scaled_dot_product_attention(q, k, v, attn_mask=window, is_causal=window is None, enable_gqa=gqa)

        def fwd():
            with torch.no_grad():
                attend()

        def fwd_bwd():
            attend().backward(g)
            q.grad = k.grad = v.grad = None

        name = f"B={b} H={h} Hkv={hkv} T={t} D={d} W={w}"
        print(f"sdpa causal forward     {name}: {median_ms(fwd, args.reps):8.2f} ms")
        print(f"sdpa causal fwd+bwd     {name}: {median_ms(fwd_bwd, args.reps):8.2f} ms")


if __name__ == "__main__":
    main()
