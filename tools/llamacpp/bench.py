#!/usr/bin/env python3
"""llama.cpp's speed on a GGUF, measured as llama-bench measures it (pp512 and tg128), through
llama-cpp-python's C API: the baseline beside nanoformer's own bench.

prefill: the KV cache cleared, a --prompt-token random prompt decoded in one batch (n_batch 2048,
n_ubatch 512, as llama-bench), timed to llama_synchronize; tokens/s = prompt / seconds.
decode: the cache cleared, a --depth-token random prompt decoded untimed, then --gen tokens, one
llama_decode + llama_synchronize each with a random next token (no sampling: llama-bench's tg);
tokens/s = gen / seconds. One untimed warm-up of each, then --reps runs; the median is the number,
min and max say how noisy the machine was, and cpu_share (the process's CPU seconds over wall
seconds x threads, median) says whether it had its cores: well below 1, other processes had them
and the numbers are the machine's load, not llama.cpp's speed. (llama.cpp's OpenMP threads spin at
barriers, so on an oversubscribed machine 2 threads can be slower than 1; OMP_WAIT_POLICY=passive
makes them sleep instead.) KV cache f16 and flash attention auto by default
(llama-bench's defaults). Prints one JSON object per model:
  {"model", "threads", "prefill_tokens_per_s", "prefill_runs", "decode_tokens_per_s", "decode_runs",
   "prefill_cpu_share", "decode_cpu_share", "prompt", "gen", "depth", "cache_type", "flash_attn",
   "llama_cpp_python"}

  bench.py a.gguf b.gguf --threads 2 --reps 5
"""
import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import llamacpp_session as lcs  # noqa: E402


def timed(fn):
    """(wall seconds, CPU seconds of this process) of fn()."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def prefill_seconds(s, tokens):
    s.clear()
    return timed(lambda: s.decode(tokens, 0))


def decode_seconds(s, depth_tokens, gen_tokens):
    s.clear()
    if depth_tokens:
        s.decode(depth_tokens, 0)
    pos = len(depth_tokens)
    return timed(lambda: [s.decode_one(t, pos + i) for i, t in enumerate(gen_tokens)])


def bench(path, a):
    rng = np.random.default_rng(a.seed)
    s = lcs.Session(path, n_threads=a.threads, n_ctx=max(a.prompt, a.depth + a.gen + 1), n_batch=2048,
                    n_ubatch=512, cache_type=a.cache_type, flash_attn=a.flash_attn, verbose=a.verbose)
    prompt = rng.integers(0, s.n_vocab, a.prompt).tolist()
    depth = rng.integers(0, s.n_vocab, a.depth).tolist()
    gen = rng.integers(0, s.n_vocab, a.gen).tolist()
    prefill_seconds(s, prompt)  # warm-up (page faults, weight repacking, thread start)
    decode_seconds(s, depth, gen[:8])
    pp, tg, pp_share, tg_share = [], [], [], []
    for _ in range(a.reps):  # alternate, so a burst of load on the machine hits both alike
        if a.prompt:
            wall, cpu = prefill_seconds(s, prompt)
            pp.append(a.prompt / wall)
            pp_share.append(cpu / (wall * a.threads))
        if a.gen:
            wall, cpu = decode_seconds(s, depth, gen)
            tg.append(a.gen / wall)
            tg_share.append(cpu / (wall * a.threads))
    s.close()
    median = lambda xs: statistics.median(xs) if xs else None  # noqa: E731
    return {"model": str(path), "threads": a.threads,
            "prefill_tokens_per_s": median(pp), "prefill_runs": [round(x, 1) for x in pp],
            "decode_tokens_per_s": median(tg), "decode_runs": [round(x, 1) for x in tg],
            "prefill_cpu_share": median(pp_share), "decode_cpu_share": median(tg_share),
            "prompt": a.prompt, "gen": a.gen, "depth": a.depth, "cache_type": a.cache_type,
            "flash_attn": a.flash_attn, "llama_cpp_python": lcs.version()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="+", help=".gguf files")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt", type=int, default=512, help="prefill prompt tokens (0: no prefill test)")
    ap.add_argument("--gen", type=int, default=128, help="decoded tokens (0: no decode test)")
    ap.add_argument("--depth", type=int, default=16, help="prompt tokens in the cache before the decode test")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cache-type", default="f16", choices=sorted(lcs.CACHE_TYPES))
    ap.add_argument("--flash-attn", default="auto", choices=sorted(lcs.FLASH_ATTN))
    ap.add_argument("--verbose", action="store_true", help="llama.cpp's log on stderr")
    a = ap.parse_args()
    for flag in ("threads", "reps"):
        if getattr(a, flag) <= 0:
            ap.error(f"--{flag} must be positive, got {getattr(a, flag)}")
    for flag in ("prompt", "gen", "depth"):
        if getattr(a, flag) < 0:
            ap.error(f"--{flag} must be >= 0, got {getattr(a, flag)}")
    for m in a.models:
        if not Path(m).is_file():
            ap.error(f"model: no file {m}")
    for m in a.models:
        r = bench(m, a)
        print(json.dumps(r), flush=True)
        print(f"# {Path(m).name}: prefill {r['prefill_tokens_per_s'] or 0:.1f} tok/s "
              f"(runs {r['prefill_runs']}, cpu share {r['prefill_cpu_share'] or 0:.2f}), decode "
              f"{r['decode_tokens_per_s'] or 0:.1f} tok/s (runs {r['decode_runs']}, cpu share {r['decode_cpu_share'] or 0:.2f})",
              file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
