#!/usr/bin/env python3
"""The post-training pipeline's table from its `nanoformer eval --json` reports (the chart is
`nanoformer eval --combine`'s, tools/post_training/pipeline.sh). Standard library only.

  python3 tools/post_training/pipeline_report.py REPORTS_DIR --seeds 1 2 3 --table results.md \
      --json results.json [--settings TEXT]

Reads REPORTS_DIR/<seed>_<stage>_exact.json (exact_match, GSM8K layout) and
<seed>_<stage>_preference.json (acc, mc layout) for the stages pretrain, sft, dpo, grpo. The table:
one row per stage, each seed's value, the mean and the sample standard deviation over seeds; then
GRPO's gain in exact match over SFT and over DPO (its own stage) per seed, mean and std, and DPO's gain
in preference accuracy over SFT.
"""
import argparse
import json
import math
import os
import sys

STAGES = ["pretrain", "sft", "dpo", "grpo"]
METRICS = [("exact", "exact_match", "exact match on held-out problems"),
           ("preference", "acc", "preference accuracy (right answer ranked first)")]


def mean_std(values):
    m = sum(values) / len(values)
    s = math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1)) if len(values) > 1 else 0.0
    return m, s


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("reports")
    p.add_argument("--seeds", nargs="+", required=True)
    p.add_argument("--table", required=True)
    p.add_argument("--json", required=True)
    p.add_argument("--settings", default="")
    a = p.parse_args()

    values = {}  # (metric, stage) -> [value per seed]
    for short, key, _ in METRICS:
        for stage in STAGES:
            row = []
            for seed in a.seeds:
                path = os.path.join(a.reports, f"{seed}_{stage}_{short}.json")
                with open(path) as f:
                    v = json.load(f)[key]
                if not math.isfinite(v):
                    sys.exit(f"pipeline_report: {path}: '{key}' is {v}")
                row.append(v)
            values[(short, stage)] = row

    lines = [f"| metric | stage | {' | '.join('seed ' + s for s in a.seeds)} | mean | std |",
             "| --- | --- | " + "---: | " * len(a.seeds) + "---: | ---: |"]
    for short, _, title in METRICS:
        for stage in STAGES:
            row = values[(short, stage)]
            m, s = mean_std(row)
            lines.append(f"| {title} | {stage} | " + " | ".join(f"{v:.3f}" for v in row) + f" | {m:.3f} | {s:.3f} |")
    gains = {
        "grpo_over_sft_exact": [g - s for g, s in zip(values[("exact", "grpo")], values[("exact", "sft")])],
        "grpo_over_dpo_exact": [g - d for g, d in zip(values[("exact", "grpo")], values[("exact", "dpo")])],
        "dpo_over_sft_preference": [d - s for d, s in zip(values[("preference", "dpo")],
                                                          values[("preference", "sft")])],
    }
    lines.append("")
    for name, title in [("grpo_over_sft_exact", "GRPO over SFT, exact match"),
                        ("grpo_over_dpo_exact", "GRPO over DPO (the stage alone), exact match"),
                        ("dpo_over_sft_preference", "DPO over SFT, preference accuracy")]:
        m, s = mean_std(gains[name])
        lines.append(f"- {title}: {' '.join(f'{g:+.3f}' for g in gains[name])} (seeds {' '.join(a.seeds)}): "
                     f"mean {m:+.3f}, std {s:.3f}")
    if a.settings:
        lines += ["", "Settings: " + a.settings + "."]
    text = "\n".join(lines) + "\n"
    with open(a.table + ".tmp", "w") as f:
        f.write(text)
    os.replace(a.table + ".tmp", a.table)
    with open(a.json + ".tmp", "w") as f:
        json.dump({"seeds": a.seeds, "stages": STAGES,
                   "values": {f"{m}/{s}": v for (m, s), v in values.items()}, "gains": gains}, f, indent=1)
    os.replace(a.json + ".tmp", a.json)
    print(text, end="")


if __name__ == "__main__":
    main()
