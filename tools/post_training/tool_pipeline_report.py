#!/usr/bin/env python3
"""The tool-use pipeline's table from its `nanoformer eval --json` reports
(tools/post_training/tool_pipeline.sh). Standard library only.

  python3 tools/post_training/tool_pipeline_report.py REPORTS_DIR --seeds 1 2 3 --table results.md \
      --json results.json [--settings TEXT]

Reads REPORTS_DIR/<seed>_<stage>_with.json (exact match with the calculator answering) and
<seed>_<stage>_without.json (without it) for the stages sft and grpo. The table: one row per stage
and way of scoring, each seed's value, the mean and the sample standard deviation over seeds; then
with minus without per stage, and GRPO's gain over SFT with the calculator.
"""
import argparse
import json
import os

from pipeline_report import mean_std

STAGES = ["sft", "grpo"]
WAYS = [("with", "with the calculator"), ("without", "without a tool")]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("reports")
    p.add_argument("--seeds", nargs="+", required=True)
    p.add_argument("--table", required=True)
    p.add_argument("--json", required=True)
    p.add_argument("--settings", default="")
    a = p.parse_args()
    values = {}  # (way, stage) -> [exact match per seed]
    for way, _ in WAYS:
        for stage in STAGES:
            values[(way, stage)] = []
            for seed in a.seeds:
                with open(os.path.join(a.reports, f"{seed}_{stage}_{way}.json")) as f:
                    values[(way, stage)].append(json.load(f)["exact_match"])
    seeds = " | ".join(f"seed {s}" for s in a.seeds)
    lines = [f"| stage | scored | {seeds} | mean | std |", "| --- | --- |" + " ---: |" * (len(a.seeds) + 2)]
    for stage in STAGES:
        for way, name in WAYS:
            v = values[(way, stage)]
            m, s = mean_std(v)
            lines.append(f"| {stage} | {name} | " + " | ".join(f"{x:.3f}" for x in v) + f" | {m:.3f} | {s:.3f} |")
    summary = {}
    for stage in STAGES:
        gain = [w - o for w, o in zip(values[("with", stage)], values[("without", stage)])]
        m, s = mean_std(gain)
        summary[f"{stage}_with_minus_without"] = {"per_seed": gain, "mean": m, "std": s}
        lines.append(f"| {stage} | with minus without | " + " | ".join(f"{x:+.3f}" for x in gain) + f" | {m:+.3f} | {s:.3f} |")
    gain = [g - f for g, f in zip(values[("with", "grpo")], values[("with", "sft")])]
    m, s = mean_std(gain)
    summary["grpo_minus_sft_with"] = {"per_seed": gain, "mean": m, "std": s}
    lines.append("| GRPO - SFT | with the calculator | " + " | ".join(f"{x:+.3f}" for x in gain) + f" | {m:+.3f} | {s:.3f} |")
    if a.settings:
        lines += ["", a.settings]
    with open(a.table, "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(a.json, "w") as f:
        json.dump({"values": {f"{w}/{s}": v for (w, s), v in values.items()}, "summary": summary,
                   "settings": a.settings}, f, indent=1)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
