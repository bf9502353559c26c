"""PyTorch timings for bench/bench_positional.cpp: rotary embedding on q of (B, H, T, D) =
(4, 8, 512, 64) f32 at positions 512..1023, forward and forward + backward, per layout:
half = Hugging Face LLaMA's q * cos + rotate_half(q) * sin (its own rotate_half), interleaved =
002's complex-pair product, half_negative = 003's nanochat rotary.

Prints the median wall time and the mean process CPU time (all threads) per call; on a loaded
machine the CPU time is the steadier of the two. Run right after the C++ benchmark with the same
thread count and compare:
    NANOFORMER_THREADS=2 ./build-bench/bench_positional;  .venv/bin/python tools/bench/torch_positional.py --threads 2
"""
from __future__ import annotations

import argparse
import time

import torch
from torch_baseline import median_ms  # the same timing rule as the other PyTorch baselines
from transformers.models.llama.modeling_llama import rotate_half

B, H, T, D = 4, 8, 512, 64


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2, help="torch threads (match NANOFORMER_THREADS)")
    ap.add_argument("--reps", type=int, default=51, help="timed runs per case; the median is printed")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; median ms of {args.reps} runs")

    inv_freq = 1.0 / 10000 ** (torch.arange(0, D, 2, dtype=torch.float32) / D)
    angles = torch.outer(torch.arange(T, 2 * T, dtype=torch.float32), inv_freq)  # (T, D/2)
    cos_half, sin_half = angles.cos(), angles.sin()
    cos_full, sin_full = torch.cat([cos_half, cos_half], -1)[None, None], torch.cat([sin_half, sin_half], -1)[None, None]
    pos_cis = torch.polar(torch.ones_like(angles), angles)

    def half(q):  # LLaMA / HF
        return q * cos_full + rotate_half(q) * sin_full

    def interleaved(q):  # 002: pairs as complex numbers
        qc = torch.view_as_complex(q.reshape(*q.shape[:-1], -1, 2))
        return torch.view_as_real(qc * pos_cis).flatten(3)

    def half_negative(q):  # 003: nanochat
        q1, q2 = q[..., :D // 2], q[..., D // 2:]
        return torch.cat([q1 * cos_half + q2 * sin_half, q1 * (-sin_half) + q2 * cos_half], -1)

    def wall_and_cpu_ms(fn) -> str:
        cpu = time.process_time()
        wall = median_ms(fn, args.reps)
        cpu = 1e3 * (time.process_time() - cpu) / (args.reps + 1)  # median_ms also runs one warm-up
        return f"{wall:8.3f} ms wall {cpu:8.3f} ms cpu"

    q = torch.randn(B, H, T, D)
    g = torch.randn(B, H, T, D)
    for name, fn in [("interleaved", interleaved), ("half", half), ("half_negative", half_negative)]:
        leaf = q.clone().requires_grad_()

        def fwd_bwd():
            fn(leaf).backward(g)
            leaf.grad = None

        print(f"rope[{name}] (4, 8, 512, 64): forward {wall_and_cpu_ms(lambda: fn(q))}   "
              f"forward+backward {wall_and_cpu_ms(fwd_bwd)}")


if __name__ == "__main__":
    main()
