#!/usr/bin/env python3
"""Writes the llama.cpp oracle fixtures of tests/formats/test_llamacpp_oracle.cpp (issue 22):
a small LLaMA-style model trained by nanoformer itself, written by nanoformer as Q8_0 and Q4_0
GGUFs, and what llama.cpp computes on those files.

    tools/llamacpp/install.sh    # once: the venv with llama-cpp-python
    .venv-llamacpp/bin/python tools/llamacpp/make_oracle_fixtures.py [--nanoformer build/nanoformer]

Steps (fixed seeds: a rerun writes the same bytes; the nanoformer binary does all but llama.cpp's part):
1. `nanoformer tokenizer train`: a byte-level BPE of 512 ids (<|endoftext|> and 255 merges) on --corpus.
2. `nanoformer train`: the `oracle-tiny` shape below (RMSNorm, RoPE, SwiGLU, GQA 4/2 heads, q / k /
   v / output and FFN biases, tied head; dim 64, 3 layers, context 128) for --steps steps on
   --corpus (its last 5% held out): about 7 minutes on 2 cores.
3. `nanoformer convert ... --to gguf --type q8_0 | q4_0 --tokenizer`: q8_0.gguf, q4_0.gguf (in the
   Q4_0 file the tied embedding / head falls back to Q8_0: its rows of 64 are not Q6_K blocks); and
   each converted again with `--type f32` (its blocks dequantised; not kept), on which llama.cpp
   quantises no activations.
4. The input: the first 64 ids llama.cpp's tokenizer (from the GGUF) gives a passage of the held-out
   text. logits.py (llama.cpp, 2 threads, f32 KV cache, flash attention off) gives the logits of
   that input in one batch and 32 greedy tokens after it, for each of the four files.
5. Kept for the test (small on purpose): expected.json (the passage, the 64 ids, the greedy tokens
   and their text, which rows were kept, llama.cpp's version) and expected.safetensors with, for
   <file> in q8_0, q8_0.f32, q4_0, q4_0.f32: "<file>.logits" (the input's logit rows 0, 8, ..., 56,
   63) and "<file>.greedy_logits" (the rows greedy tokens 0, 8, 16, 24, 31 were taken from, decoded
   one token at a time), f32.
Prints, per file, the logits' std and the smallest top-1 minus top-2 margin of the greedy steps,
which bounds the disagreement the greedy comparison survives.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
import llamacpp_session as lcs  # noqa: E402

# Karpathy's tinyshakespeare (char-rnn's data/tinyshakespeare/input.txt); any text of a few hundred KB works.
DEFAULT_CORPUS = os.environ.get("ORACLE_CORPUS", "/work/shared/data/tinyshakespeare.txt")
TYPES = ["q8_0", "q4_0"]
N_INPUT, N_GREEDY = 64, 32
LOGIT_ROWS = list(range(0, N_INPUT, 8)) + [N_INPUT - 1]
GREEDY_ROWS = list(range(0, N_GREEDY, 8)) + [N_GREEDY - 1]
CONFIG = {
    "name": "oracle-tiny",
    "vocab_size": 512,
    "dim": 64,
    "n_layers": 3,
    "n_heads": 4,
    "n_kv_heads": 2,
    "max_seq_len": 128,
    "norm": "rmsnorm",
    "norm_eps": 1e-5,
    "position": "rope",
    "rope_layout": "interleaved",
    "rope_theta": 10000.0,
    "mlp": "swiglu",
    "mlp_hidden": 192,
    "attention_bias": True,
    "mlp_bias": True,
    "tie_embeddings": True,
}


def run(cmd: list[str]) -> str:
    print("+", " ".join(cmd), flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout}\n{r.stderr}")
    return r.stdout


def write_safetensors(path: Path, tensors: dict[str, np.ndarray]):
    """The safetensors layout by hand (8-byte header length, JSON header, data), keys sorted."""
    header, offset, blobs = {}, 0, []
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name], dtype=np.float32)
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
        blobs.append(a.tobytes())
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))
    os.replace(tmp, path)


def held_out_passage(corpus: Path) -> str:
    """About 1,000 characters from the held-out tail (the last 5%), starting at a line."""
    text = corpus.read_text(encoding="utf-8")
    start = text.index("\n", len(text) - len(text) // 40) + 1
    return text[start:start + 1000]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nanoformer", default=str(REPO / "build/nanoformer"), help="the built CLI")
    ap.add_argument("--corpus", default=DEFAULT_CORPUS, help="training text ($ORACLE_CORPUS; default %(default)s)")
    ap.add_argument("--out", default=str(REPO / "tests/fixtures/llamacpp_oracle"))
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--work", help="keep the intermediate files here (default: a temporary folder)")
    a = ap.parse_args()
    nf, corpus, out = a.nanoformer, Path(a.corpus), Path(a.out)
    if not Path(nf).is_file():
        sys.exit(f"--nanoformer: no file {nf} (build it: cmake --build build --target nanoformer_cli)")
    if not corpus.is_file():
        sys.exit(f"--corpus: no file {corpus} (give any text of a few hundred KB, or set ORACLE_CORPUS)")
    work = Path(a.work) if a.work else Path(tempfile.mkdtemp(prefix="oracle-"))
    work.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)

    tok = work / "tokenizer.json"
    run([nf, "tokenizer", "train", "-i", str(corpus), "-v", str(CONFIG["vocab_size"]), "-s", "<|endoftext|>",
         "--pattern", "gpt2", "-o", str(tok), "-q"])
    config = work / "oracle-tiny.json"
    config.write_text(json.dumps(CONFIG, indent=1))
    run_dir = work / "run"
    shutil.rmtree(run_dir, ignore_errors=True)
    run([nf, "train", "--config", str(config), "--data", str(corpus), "--tokenizer", str(tok), "--val-fraction", "0.05",
         "--context", "128", "--batch-size", "16", "--steps", str(a.steps), "--lr", "3e-3",
         "--warmup", str(min(30, a.steps // 10)),
         "--eval-every", "0", "--seed", str(a.seed), "--data-seed", str(a.seed), "--out", str(run_dir), "-q"])
    ckpt = sorted(run_dir.glob("ckpt_*.safetensors"))[-1]
    print((run_dir / "metrics.jsonl").read_text().strip().splitlines()[-1])

    passage = held_out_passage(corpus)
    meta = {"corpus": corpus.name, "steps": a.steps, "seed": a.seed, "config": CONFIG, "text": passage,
            "logit_rows": LOGIT_ROWS, "greedy_rows": GREEDY_ROWS, "llama_cpp_python": lcs.version(),
            "llama_cpp_settings": "2 threads, KV cache f32, flash attention off, the input in one batch"}
    tensors = {}
    for t in TYPES:
        gguf = out / f"{t}.gguf"
        run([nf, "convert", str(ckpt), str(gguf), "--to", "gguf", "--type", t, "--tokenizer", str(tok)])
        vocab = lcs.Session(gguf, vocab_only=True)
        ids = vocab.tokenize(passage)[:N_INPUT]
        vocab.close()
        assert len(ids) == N_INPUT, f"the passage gives only {len(ids)} tokens"
        assert meta.setdefault("ids", ids) == ids, "the two files tokenize the passage differently"
        # the file itself, and its weights dequantised into an F32 GGUF (llama.cpp then quantises no activations)
        dense = work / f"{t}-f32.gguf"
        run([nf, "convert", str(gguf), str(dense), "--to", "gguf", "--type", "f32"])
        for key, model in ((t, gguf), (f"{t}.f32", dense)):
            prefix = work / key
            run([sys.executable, str(HERE / "logits.py"), str(model), "--tokens", ",".join(map(str, ids)),
                 "--greedy", str(N_GREEDY), "--out", str(prefix)])
            logits = np.load(f"{prefix}.logits.npy")
            greedy_logits = np.load(f"{prefix}.greedy_logits.npy")
            run_info = json.loads(Path(f"{prefix}.json").read_text())
            greedy = run_info["greedy"]
            meta[f"{key}.greedy"], meta[f"{key}.greedy_text"] = greedy, run_info["greedy_text"]
            tensors[f"{key}.logits"] = logits[LOGIT_ROWS]
            tensors[f"{key}.greedy_logits"] = greedy_logits[GREEDY_ROWS]
            top2 = np.sort(greedy_logits, axis=1)[:, -2:]
            margins = top2[:, 1] - top2[:, 0]
            print(f"{key}: {model.stat().st_size} bytes; logits std {logits.std():.3f}, "
                  f"|max| {np.abs(logits).max():.2f}; "
                  f"greedy {greedy}; smallest top-1 - top-2 margin {margins.min():.4f} at step {int(margins.argmin())}")
    (out / "expected.json.tmp").write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n")
    os.replace(out / "expected.json.tmp", out / "expected.json")
    write_safetensors(out / "expected.safetensors", tensors)
    print(f"wrote {out}: {', '.join(sorted(p.name for p in out.iterdir()))} (intermediate files in {work})")


if __name__ == "__main__":
    main()
