"""PyTorch timings for the configurations of bench/bench_norms.cpp: F.rms_norm, F.layer_norm and
F.silu(a) * b, forward and forward + backward.

Run right after bench_norms on the same machine, with the same thread count, and compare medians:
    NANOFORMER_THREADS=2 ./build/bench_norms ...;  .venv/bin/python tools/bench/torch_norms.py --threads 2
"""
from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F
from torch_baseline import median_ms  # same directory: the shared warm-up + median timer

EPS = 1e-5


def median_us(fn, reps: int) -> float:
    return 1e3 * median_ms(fn, reps)


def forward_backward(fn, leaves):
    """fn() then backward with a fixed upstream gradient, dropping the leaves' gradients after."""
    dy = torch.randn_like(fn())

    def run():
        fn().backward(dy)
        for t in leaves:
            t.grad = None

    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=21)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; median us of {args.reps} runs")

    for rows, d in [(2048, 512), (2048, 768)]:
        x = torch.randn(rows, d, requires_grad=True)
        w = torch.randn(d, requires_grad=True)
        b = torch.randn(d, requires_grad=True)
        rms = lambda: F.rms_norm(x, (d,), w, eps=EPS)  # noqa: E731
        ln = lambda: F.layer_norm(x, (d,), w, b, eps=EPS)  # noqa: E731
        with torch.no_grad():
            print(f"rms_norm forward ({rows}, {d}): {median_us(rms, args.reps):10.1f} us")
            print(f"layer_norm forward ({rows}, {d}): {median_us(ln, args.reps):10.1f} us")
        print(f"rms_norm fwd+bwd ({rows}, {d}): {median_us(forward_backward(rms, [x, w]), args.reps):10.1f} us")
        print(f"layer_norm fwd+bwd ({rows}, {d}): {median_us(forward_backward(ln, [x, w, b]), args.reps):10.1f} us")

    rows, hidden = 2048, 1408
    a = torch.randn(rows, hidden, requires_grad=True)
    u = torch.randn(rows, hidden, requires_grad=True)
    swiglu = lambda: F.silu(a) * u  # noqa: E731
    with torch.no_grad():
        print(f"silu(a) * b forward ({rows}, {hidden}): {median_us(swiglu, args.reps):10.1f} us")
    print(f"silu(a) * b fwd+bwd ({rows}, {hidden}): {median_us(forward_backward(swiglu, [a, u]), args.reps):10.1f} us")


if __name__ == "__main__":
    main()
