#!/usr/bin/env python3
"""Before/after of one Google Benchmark program: an older build's and this build's, alternating.

Each round runs both binaries (the first side swaps each round, so load from other work hits both
alike) with --benchmark_out as JSON, and takes each benchmark's speed: items_per_second, else
bytes_per_second, else runs per second of real time. Prints per benchmark the medians over the rounds, the median of the
per-round ratios after / before, and the spread of ours, (max - min) / median.
    scripts/compare-bench.py BEFORE_BINARY AFTER_BINARY [--rounds 5] [-- extra benchmark flags]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def run(binary, flags):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        done = subprocess.run([binary, f"--benchmark_out={out.name}", "--benchmark_out_format=json", *flags],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            sys.exit(f"compare-bench: {binary} failed ({done.returncode}):\n{done.stderr}")
        text = open(out.name).read()
    if not text:
        sys.exit(f"compare-bench: {binary} ran no benchmark (its filter matched none?)")
    report = json.loads(text)
    speeds = {}
    for b in report["benchmarks"]:
        if b.get("run_type") == "aggregate":
            continue
        ns_per_unit = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[b.get("time_unit", "ns")]
        speeds[b["name"]] = (b.get("items_per_second") or b.get("bytes_per_second") or
                             1e9 / (b["real_time"] * ns_per_unit))
    return speeds


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("before")
    p.add_argument("after")
    p.add_argument("--rounds", type=int, default=5)
    argv = sys.argv[1:]
    flags = argv[argv.index("--") + 1:] if "--" in argv else []
    a = p.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    a.flags = flags
    for binary in (a.before, a.after):
        if not os.access(binary, os.X_OK):
            sys.exit(f"compare-bench: {binary} is not an executable benchmark")
    before, after, ratios = {}, {}, {}
    for r in range(a.rounds):
        sides = [("before", a.before), ("after", a.after)]
        if r % 2:
            sides.reverse()
        got = {name: run(binary, a.flags) for name, binary in sides}
        for bench, speed in got["after"].items():
            if bench not in got["before"]:
                continue
            before.setdefault(bench, []).append(got["before"][bench])
            after.setdefault(bench, []).append(speed)
            ratios.setdefault(bench, []).append(speed / got["before"][bench])
        print(f"round {r + 1} of {a.rounds} done", file=sys.stderr)
    if not ratios:
        sys.exit("compare-bench: the two programs share no benchmark name")
    width = max(len(b) for b in ratios)
    print(f"{os.path.basename(a.after)}: speed (items/s, bytes/s or runs/s) before ({a.before}) and after, "
          f"{a.rounds} rounds alternating")
    print(f"{'benchmark':<{width}} {'before':>12} {'after':>12} {'after/bef.':>10} {'spread':>8}")
    for bench in ratios:
        mid = statistics.median(after[bench])
        spread = (max(after[bench]) - min(after[bench])) / mid if mid else 0.0
        print(f"{bench:<{width}} {statistics.median(before[bench]):12.4g} {mid:12.4g} "
              f"{statistics.median(ratios[bench]):9.3f}x {100 * spread:7.1f}%")


if __name__ == "__main__":
    main()
