#!/usr/bin/env python3
"""The oracle of `nanoformer quantize --type q4_k_m` (and the other K mixes): which type llama-quantize
gives each tensor, recorded for tests/models/test_quantize_mix.cpp.

For a few small shapes (llama-shaped with rows of whole 256-blocks and 16 layers, so that
use_more_bits and the n/8, n/16 cut-offs vary; a Qwen2.5-0.5B-like one whose rows of 896 are not
whole 256-blocks; a gpt2-shaped one with its fused attn_qkv) it writes a random F32 GGUF with
tools/llamacpp/make_random_gguf.py, runs mainline llama.cpp's llama-quantize on it for each mix
(Q4_K_M, Q5_K_M, Q3_K_M, Q4_K_S, Q5_K_S, Q3_K_S), and records every tensor's type and the file's
general.file_type in tests/fixtures/quant/mixes.json (with each shape's nanoformer config, so the
C++ test builds the same model).

With --nanoformer BUILD/nanoformer it also quantises the same F32 files with `nanoformer quantize`
and compares every tensor's bytes with llama-quantize's file, and loads llama-quantize's Q4_K_M,
Q5_K_M and Q3_K_M files: `nanoformer generate -m` on each, and `nanoformer forward`'s logits of the
file against those of the same weights dequantised to f32 (`nanoformer convert --to nanoformer`),
which differ by quantising the activations to Q8_K / Q8_0 only (printed, not stored: the C++ test
needs no llama.cpp).

Run (re-runnable: same seeds, same llama.cpp -> the same JSON):
    python3 tools/quant/make_mix_fixtures.py --llamacpp .cache/peers/llamacpp/bin [--nanoformer build/nanoformer]
(any Python with numpy and gguf==0.19.0; the llama.cpp folder is tools/peers/build_llamacpp.sh's bin/)
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import gguf

ROOT = Path(__file__).resolve().parents[2]
MIXES = ["Q4_K_M", "Q5_K_M", "Q3_K_M", "Q4_K_S", "Q5_K_S", "Q3_K_S"]
BASE = {  # the fields every shape shares (configs/*.json's keys)
    "n_kv_heads": 0, "head_dim": 0, "norm_eps": 1e-05, "norm_placement": "pre", "embedding_norm": False,
    "rope_layout": "interleaved", "rope_theta": 10000.0, "rope_scaling": "none", "rope_scale_factor": 1.0,
    "qk_norm": False, "qk_norm_eps": 1e-06, "mlp_multiple_of": 64, "logit_softcap": 0.0, "dropout": 0.0,
    "residual_dropout": 0.0, "moe": None, "init": "normal", "init_std": 0.02,
}
LLAMA = {"norm": "rmsnorm", "norm_bias": False, "position": "rope", "mlp": "swiglu", "attention_bias": False,
         "mlp_bias": False}
GPT2 = {"norm": "layernorm", "norm_bias": True, "position": "learned", "mlp": "gelu_tanh", "attention_bias": True,
        "mlp_bias": True}
SHAPES = [
    # 16 layers: use_more_bits is layers 0-1, 14-15 and every third between; Q3_K_M's n/16 = 1
    {"name": "llama-256", **BASE, **LLAMA, "vocab_size": 512, "dim": 256, "n_layers": 16, "n_heads": 4,
     "n_kv_heads": 2, "max_seq_len": 64, "mlp_hidden": 256, "tie_embeddings": False},
    # Qwen2.5-0.5B's rows of 896 (3.5 super-blocks: Q4_K -> Q5_0, Q6_K -> Q8_0, ...), its tied head
    # and GQA 14 / 2; ffn_down's rows of 256 are a whole super-block
    {"name": "qwen-896", **BASE, **LLAMA, "vocab_size": 512, "dim": 896, "n_layers": 4, "n_heads": 14,
     "n_kv_heads": 2, "max_seq_len": 64, "mlp_hidden": 256, "tie_embeddings": True},
    # GPT-2: q, k, v as one attn_qkv (attn_v's rules), a tied head, 8 layers
    {"name": "gpt2-256", **BASE, **GPT2, "vocab_size": 512, "dim": 256, "n_layers": 8, "n_heads": 4,
     "max_seq_len": 64, "mlp_hidden": 256, "tie_embeddings": True},
]


def tensor_types(path: Path) -> tuple[dict[str, str], int]:
    r = gguf.GGUFReader(path)
    types = {t.name: t.tensor_type.name.lower() for t in r.tensors}
    field = r.fields["general.file_type"]
    return types, int(field.parts[field.data[0]][0])


def tensor_bytes(path: Path) -> dict[str, bytes]:
    return {t.name: bytes(np.asarray(t.data).tobytes()) for t in gguf.GGUFReader(path).tensors}


def run(cmd: list[str]) -> None:
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")


def read_logits(path: Path) -> np.ndarray:
    """The logits tensor of `nanoformer forward --out` (a safetensors file)."""
    raw = path.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    info = header["logits"]
    assert info["dtype"] == "F32", info
    begin, end = info["data_offsets"]
    return np.frombuffer(raw[8 + n + begin:8 + n + end], dtype="<f4").reshape(info["shape"])


def logits_check(nanoformer: str, gguf_path: Path, work: Path, vocab: int) -> list[tuple[int, float, float]]:
    """For 8 tokens (decode's product: the K types' tiles against Q8_K) and 24 (prefill: W dequantised
    for the K types, the integer GEMM for the 32-value ones): max |logits of the file - logits of its
    weights dequantised to f32| and max |logit|."""
    run([nanoformer, "generate", "-m", str(gguf_path), "--ids", "--prompt-ids", "1 2 3", "-n", "8", "--greedy"])
    dense = work / (gguf_path.stem + "-dense.safetensors")
    run([nanoformer, "convert", str(gguf_path), str(dense), "--to", "nanoformer"])
    results = []
    for n in (8, 24):
        ids = " ".join(str((7 * i + 3) % vocab) for i in range(n))
        out_q, out_f = work / f"{gguf_path.stem}-logits{n}.safetensors", work / f"{gguf_path.stem}-dense-logits{n}.safetensors"
        run([nanoformer, "forward", "--model", str(gguf_path), "--ids", ids, "--out", str(out_q)])
        run([nanoformer, "forward", "--model", str(dense), "--ids", ids, "--out", str(out_f)])
        q, f = read_logits(out_q), read_logits(out_f)
        results.append((n, float(np.max(np.abs(q - f))), float(np.max(np.abs(f)))))
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llamacpp", default=str(ROOT / ".cache/peers/llamacpp/bin"),
                    help="the folder of llama-quantize (tools/peers/build_llamacpp.sh's bin/)")
    ap.add_argument("--out", default=str(ROOT / "tests/fixtures/quant/mixes.json"))
    ap.add_argument("--nanoformer", help="a built nanoformer: also compare its quantize's tensor bytes")
    ap.add_argument("--keep", help="a folder to keep the GGUF files in (default: a temporary one)")
    a = ap.parse_args()
    quantize = Path(a.llamacpp) / "llama-quantize"
    if not quantize.exists():
        sys.exit(f"--llamacpp {a.llamacpp}: no llama-quantize there (tools/peers/build_llamacpp.sh builds it)")
    origin = Path(a.llamacpp).parent / "ORIGIN"
    version = " ".join(origin.read_text().split()[:2]) if origin.exists() else "llama.cpp (unknown commit)"

    work = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="nf-mixes-"))
    work.mkdir(parents=True, exist_ok=True)
    shapes = []
    compared = []
    logit_checks = []
    for seed, cfg in enumerate(SHAPES):
        config = work / f"{cfg['name']}.json"
        config.write_text(json.dumps(cfg, indent=2))
        f32 = work / f"{cfg['name']}-f32.gguf"
        run([sys.executable, str(ROOT / "tools/llamacpp/make_random_gguf.py"), str(config), str(f32), "--seed", str(seed)]
            + ([] if cfg["tie_embeddings"] else ["--untied"]))
        mixes = {}
        for mix in MIXES:
            out = work / f"{cfg['name']}-{mix}.gguf"
            run([str(quantize), str(f32), str(out), mix, "2"])
            types, file_type = tensor_types(out)
            mixes[mix.lower()] = {"file_type": file_type, "tensors": types}
            if a.nanoformer:
                ours = work / f"{cfg['name']}-{mix}-nanoformer.gguf"
                run([a.nanoformer, "quantize", str(f32), str(ours), "--type", mix.lower()])
                theirs_b, ours_b = tensor_bytes(out), tensor_bytes(ours)
                ours_types, ours_ftype = tensor_types(ours)
                same = [n for n in theirs_b if n in ours_b and theirs_b[n] == ours_b[n]]
                differ = [f"{n} ({types[n]} / {ours_types.get(n)})" for n in theirs_b if n not in same]
                compared.append((cfg["name"], mix, len(same), len(theirs_b), differ, file_type, ours_ftype))
            if a.nanoformer and mix in ("Q4_K_M", "Q5_K_M", "Q3_K_M"):
                for n, err, top in logits_check(a.nanoformer, out, work, cfg["vocab_size"]):
                    logit_checks.append((cfg["name"], mix, n, err, top))
        shapes.append({"config": cfg, "mixes": mixes})

    fixture = {"generator": "tools/quant/make_mix_fixtures.py", "llama_cpp": version,
               "gguf_version": gguf.__version__ if hasattr(gguf, "__version__") else "0.19.0", "shapes": shapes}
    Path(a.out).write_text(json.dumps(fixture, indent=1, sort_keys=False) + "\n")
    print(f"wrote {a.out} ({Path(a.out).stat().st_size} bytes): {len(SHAPES)} shapes x {len(MIXES)} mixes, {version}")
    for name, mix, same, total, differ, ftype, ours_ftype in compared:
        print(f"{name:10s} {mix}: {same}/{total} tensors byte-identical to llama-quantize's; general.file_type "
              f"{ftype} / ours {ours_ftype}" + ("" if not differ else "; differ: " + ", ".join(differ[:6])))
    for name, mix, n, err, top in logit_checks:
        print(f"{name:10s} {mix}: llama-quantize's file loads and generates; {n:2d} tokens' logits vs its weights "
              f"dequantised to f32: max |diff| {err:.3g} of max |logit| {top:.3g} ({err / top:.2%})")
    if compared and any(same != total or f != o for _, _, same, total, _, f, o in compared):
        sys.exit("nanoformer quantize differs from llama-quantize")


if __name__ == "__main__":
    main()
