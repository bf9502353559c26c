"""PyTorch's side of bench/bench_training.cpp (the training benchmark of `make bench`): a full
training step of a preset of configs/ as plain PyTorch (the MiniMind-style model of
torch_models.py: RMSNorm, interleaved RoPE, GQA through F.scaled_dot_product_attention, SwiGLU,
tied head), with nanoGPT's AdamW (lr 6e-4, betas (0.9, 0.95), weight decay 0.1 on tensors of 2 or
more dims), fp32 or under torch.autocast("cpu", dtype=torch.bfloat16); and torch.matmul's speed at
the GEMM shapes the driver passes. Each mode prints one JSON line; bench_training runs this script
in its own process (peak RSS is measured by the driver) and alternates it with ours.

Run alone (the driver passes the same arguments):
    .venv/bin/python tools/bench/torch_training.py train --precision bf16 --threads 2
    .venv/bin/python tools/bench/torch_training.py info
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from torch_models import CONFIGS, LM  # noqa: E402  the same model as the forward/backward benchmark


def autocast(precision: str):
    if precision == "bf16":
        return torch.autocast("cpu", dtype=torch.bfloat16)
    return torch.autocast("cpu", enabled=False)


def train(args) -> dict:
    c = json.loads((CONFIGS / f"{args.preset}.json").read_text())
    torch.manual_seed(1)
    model = LM(c, args.length)
    model.train()
    params = list(model.parameters())
    with torch.no_grad():  # the config's init, as ours: normal(0, init_std) for every matrix
        for p in params:
            if p.dim() >= 2:
                p.normal_(0.0, c["init_std"])
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    optimizer = torch.optim.AdamW(groups, lr=6e-4, betas=(0.9, 0.95), eps=1e-8)
    ids = torch.randint(0, c["vocab_size"], (args.batch, args.length))
    targets = torch.randint(0, c["vocab_size"], (args.batch, args.length))
    seconds = []
    loss = None
    for step in range(args.warmup + args.steps):
        start = time.perf_counter()
        with autocast(args.precision):
            loss = F.cross_entropy(model(ids).flatten(0, 1), targets.flatten())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if step >= args.warmup:
            seconds.append(time.perf_counter() - start)
    return {"tokens_per_s": args.batch * args.length / statistics.median(seconds),
            "step_ms": [1e3 * s for s in seconds], "final_loss": loss.item()}


def gemm_limit(args) -> dict:
    """torch.matmul at each shape [M, N, K, trans_a, trans_b, count, per_head] (per_head: a batch
    of up to 64 such products in one call), FLOP-weighted by count, as the driver's SGEMM limit."""
    dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}[args.dtype]
    seconds = flops = 0.0
    for m, n, k, trans_a, trans_b, count, per_head in json.loads(args.gemms):
        batch = min(count, 64) if per_head else 1
        a = torch.randn(batch, k, m).transpose(1, 2) if trans_a else torch.randn(batch, m, k)
        b = torch.randn(batch, n, k).transpose(1, 2) if trans_b else torch.randn(batch, k, n)
        a, b = a.to(dtype), b.to(dtype)
        if not per_head:
            a, b = a[0], b[0]
        times = []
        for rep in range(args.reps + 1):  # the first run warms up
            start = time.perf_counter()
            torch.matmul(a, b)
            if rep:
                times.append((time.perf_counter() - start) / batch)
        seconds += statistics.median(times) * count
        flops += 2.0 * m * n * k * count
    return {"gflops": flops / seconds / 1e9, "seconds_per_step": seconds}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=["train", "gemm-limit", "info"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--preset", default="minimind2-small")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--length", type=int, default=256)
    ap.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--dtype", choices=["fp32", "bf16"], default="bf16")
    ap.add_argument("--gemms", default="[]", help="JSON list of [M, N, K, trans_a, trans_b, count, per_head]")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.mode == "info":
        result = {"torch": torch.__version__, "threads": torch.get_num_threads(),
                  "cpu_capability": torch.backends.cpu.get_cpu_capability()}
    elif args.mode == "train":
        result = train(args)
    else:
        result = gemm_limit(args)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
