"""The load test's chart (tools/serve/load_test.py --plot): for each configuration (clients, prompt
and system prompt words), a bar per engine of the median over rounds of output tokens/s, time to
first token p99 and peak resident memory, in three panels."""
import statistics

PANELS = (("output_tokens_per_s", "output tokens/s (all streams)", 1.0),
          ("ttft_p99_s", "time to first token p99 (s)", 1.0),
          ("peak_rss_mib", "peak resident memory (MiB)", 1.0))
NAMES = {"ours": "nanoformer", "ours-noprefix": "nanoformer, no prefix cache", "llamacpp": "llama.cpp llama-server",
         "ik_llama": "ik_llama.cpp llama-server"}


def write_load_chart(path, results, engines, subtitle):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    configs = sorted({(r["clients"], r["prompt_words"], r["system_words"]) for r in results},
                     key=lambda c: (c[2], c[1], c[0]))
    labels = [f"{c} clients\n{p} words" + (f"\n+{s} system" if s else "") for c, p, s in configs]
    fig, axes = plt.subplots(1, len(PANELS), figsize=(5.2 * len(PANELS), 4.6))
    width = 0.8 / len(engines)
    for ax, (key, title, scale) in zip(axes, PANELS):
        for e, engine in enumerate(engines):
            values = []
            for c in configs:
                runs = [r[key] * scale for r in results
                        if r["engine"] == engine and (r["clients"], r["prompt_words"], r["system_words"]) == c]
                values.append(statistics.median(runs) if runs else 0)
            xs = [i + (e - (len(engines) - 1) / 2) * width for i in range(len(configs))]
            bars = ax.bar(xs, values, width, label=NAMES.get(engine, engine))
            ax.bar_label(bars, fmt="%.3g" if key == "ttft_p99_s" else "%.0f", fontsize=7)
        ax.set_xticks(range(len(configs)), labels, fontsize=8)
        ax.set_title(title, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="upper center", ncol=len(engines), fontsize=9, bbox_to_anchor=(0.5, 0.94))
    fig.suptitle(f"Serving many streams: nanoformer beside llama-server ({subtitle})", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.88))
    fig.savefig(path, dpi=110)
    plt.close(fig)
