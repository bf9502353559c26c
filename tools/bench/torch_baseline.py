"""PyTorch timings for the configurations of bench/bench_{matmul,softmax,cross_entropy,elementwise}.cpp.

Run right after `make bench` on the same machine, with the same thread count, and compare medians:
    NANOFORMER_THREADS=2 ./build/bench_softmax ...;  .venv/bin/python tools/bench/torch_baseline.py --threads 2
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F


def median_ms(fn, reps: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return 1e3 * statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=11)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; median ms of {args.reps} runs")

    for m, n, k in [(2048, 512, 512), (2048, 1408, 512), (2048, 6400, 512), (2048, 2048, 2048)]:
        a, b = torch.randn(m, k), torch.randn(k, n)
        ms = median_ms(lambda: a @ b, args.reps)
        print(f"matmul M={m} N={n} K={k}: {ms:8.2f} ms  {2 * m * n * k / ms / 1e6:7.1f} GFLOP/s")
        w = torch.randn(n, k)
        print(f"linear M={m} N={n} K={k}: {median_ms(lambda: F.linear(a, w), args.reps):8.2f} ms")

    for rows, cols in [(4096, 2048), (512, 50304)]:
        x = torch.randn(rows, cols)
        y = torch.softmax(x, -1)
        g = torch.randn(rows, cols)
        print(f"softmax ({rows}, {cols}): {median_ms(lambda: torch.softmax(x, -1), args.reps):8.2f} ms")
        print(f"log_softmax ({rows}, {cols}): {median_ms(lambda: torch.log_softmax(x, -1), args.reps):8.2f} ms")
        backward = lambda: torch._softmax_backward_data(g, y, -1, torch.float32)  # noqa: E731
        print(f"softmax backward ({rows}, {cols}): {median_ms(backward, args.reps):8.2f} ms")

    for n, c in [(4096, 6400), (1024, 50304)]:
        logits = torch.randn(n, c, requires_grad=True)
        target = torch.randint(0, c, (n,))

        def fwd_bwd():
            F.cross_entropy(logits, target).backward()
            logits.grad = None

        print(f"cross_entropy fwd+bwd ({n}, {c}): {median_ms(fwd_bwd, args.reps):8.2f} ms")

    x = torch.randn(2048, 2048)
    g = torch.randn(2048, 2048)
    for approx in ("none", "tanh"):
        print(f"gelu[{approx}] forward (2048, 2048): {median_ms(lambda: F.gelu(x, approximate=approx), args.reps):8.2f} ms")
        xg = x.clone().requires_grad_()

        def gelu_bwd():
            torch.ops.aten.gelu_backward(g, xg, approximate=approx)

        print(f"gelu[{approx}] backward (2048, 2048): {median_ms(gelu_bwd, args.reps):8.2f} ms")


if __name__ == "__main__":
    main()
