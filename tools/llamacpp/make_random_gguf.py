#!/usr/bin/env python3
"""Writes a random-weight GGUF of a nanoformer config's shape, with a byte-level BPE tokenizer.

The shape comes from a config of configs/ (a SwiGLU + RMSNorm + RoPE one becomes the `llama`
architecture, a GELU + LayerNorm + learned-position one `gpt2`); weights are N(0, std), norm
gains 1 + N(0, 0.1), biases N(0, std). Every 2-D weight is stored as --type (quantised by
gguf.quants, the reference layouts; all of them, as llama-quantize --pure does), while 1-D tensors
(norms, biases) and gpt2's position_embd stay F32 as llama.cpp's convert keeps them; --embd-type
overrides the token embedding (also the output head, tied unless --untied or the config unties it).
The tokenizer is GPT-2-style byte-level BPE (tokenizer.ggml.model = "gpt2"): the 256 byte tokens,
merges learned from --corpus (the repo's README and docs by default), then, once the corpus has
no pair left, merges of existing tokens until the vocabulary is full; special tokens last.

  make_random_gguf.py configs/minimind2-small.json out.gguf --type q8_0
"""
import argparse
import collections
import heapq
import json
import os
import re
import sys
from pathlib import Path

import numpy as np
import gguf
from gguf import GGMLQuantizationType as QT

REPO = Path(__file__).resolve().parents[2]
TYPES = {"f32": QT.F32, "f16": QT.F16, "bf16": QT.BF16, "q8_0": QT.Q8_0, "q4_0": QT.Q4_0,
         "q4_1": QT.Q4_1, "q5_0": QT.Q5_0, "q5_1": QT.Q5_1, "q6_k": QT.Q6_K}
FILE_TYPES = {"f32": gguf.LlamaFileType.ALL_F32, "f16": gguf.LlamaFileType.MOSTLY_F16,
              "bf16": gguf.LlamaFileType.MOSTLY_BF16, "q8_0": gguf.LlamaFileType.MOSTLY_Q8_0,
              "q4_0": gguf.LlamaFileType.MOSTLY_Q4_0, "q4_1": gguf.LlamaFileType.MOSTLY_Q4_1,
              "q5_0": gguf.LlamaFileType.MOSTLY_Q5_0, "q5_1": gguf.LlamaFileType.MOSTLY_Q5_1,
              "q6_k": gguf.LlamaFileType.MOSTLY_Q6_K}
CHATML = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content']"
          " + '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")
# GPT-2's pre-tokenizer, without \p{L}/\p{N} (Python's re has neither): words keep their leading space.
PRETOKENIZE = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?[^\s\w]+|\s+(?!\S)|\s+""")


def bytes_to_unicode():
    """GPT-2's map of the 256 bytes to printable characters (so every token is a visible string)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def learn_bpe(text, n_merges):
    """Byte-level BPE: repeatedly merges the most frequent adjacent pair within pre-tokenized words
    (pair counts kept up to date incrementally, a heap with stale entries skipped; ties go to the
    smallest pair, so it is deterministic)."""
    b2u = bytes_to_unicode()
    counts = collections.Counter("".join(b2u[b] for b in w.encode("utf-8")) for w in PRETOKENIZE.findall(text))
    words = [(list(w), n) for w, n in counts.items()]
    pairs = collections.Counter()
    where = collections.defaultdict(set)  # pair -> indices of the words holding it
    for k, (s, n) in enumerate(words):
        for p in zip(s, s[1:]):
            pairs[p] += n
            where[p].add(k)
    heap = [(-n, p) for p, n in pairs.items()]
    heapq.heapify(heap)
    merges = []
    while len(merges) < n_merges and heap:
        neg, (a, b) = heapq.heappop(heap)
        if -neg != pairs.get((a, b), 0) or neg >= 0:
            continue  # stale: the count changed since this entry was pushed
        merges.append((a, b))
        touched = set()
        for k in list(where[(a, b)]):
            s, n = words[k]
            for p in zip(s, s[1:]):
                pairs[p] -= n
                touched.add(p)
            i, out = 0, []
            while i < len(s):
                if i + 1 < len(s) and s[i] == a and s[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(s[i])
                    i += 1
            words[k] = (out, n)
            for p in zip(out, out[1:]):
                pairs[p] += n
                where[p].add(k)
                touched.add(p)
        del pairs[(a, b)], where[(a, b)]
        for p in touched:
            if pairs.get(p, 0) > 0:
                heapq.heappush(heap, (-pairs[p], p))
    return merges


def make_tokenizer(vocab_size, specials, corpus_text):
    """Tokens (256 bytes, merged tokens, specials), merges "a b", token types (1 normal, 3 control)."""
    b2u = bytes_to_unicode()
    tokens = [b2u[b] for b in range(256)]
    n_merges = vocab_size - 256 - len(specials)
    if n_merges < 0:
        sys.exit(f"make_random_gguf: vocab_size {vocab_size} is below the 256 byte tokens + {len(specials)} specials")
    merges = learn_bpe(corpus_text, n_merges)
    learned = len(merges)
    known = set(tokens)
    for a, b in merges:
        known.add(a + b)
        tokens.append(a + b)
    # The corpus ran out of pairs: merge existing tokens (shortest first) into new ones until full.
    bases = tokens[:]
    i = 0
    while len(merges) < n_merges:
        a, b = bases[(i // 256) % len(bases)], bases[i % 256]
        i += 1
        if a + b not in known:
            known.add(a + b)
            merges.append((a, b))
            tokens.append(a + b)
    types = [1] * len(tokens) + [3] * len(specials)
    print(f"tokenizer: {len(tokens) + len(specials)} tokens, {learned} merges learned from the corpus, "
          f"{len(merges) - learned} filled in", file=sys.stderr)
    return tokens + specials, [f"{a} {b}" for a, b in merges], types


def corpus(path):
    if path:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    files = [REPO / "README.md"] + sorted((REPO / "docs").glob("*.md"))
    return "\n".join(f.read_text(encoding="utf-8", errors="replace") for f in files if f.exists())


def architecture(cfg, source):
    if cfg["mlp"] == "swiglu" and cfg["norm"] == "rmsnorm" and cfg["position"] == "rope":
        return "llama"
    if cfg["mlp"] in ("gelu", "gelu_tanh") and cfg["norm"] == "layernorm" and cfg["position"] == "learned":
        return "gpt2"
    sys.exit(f"make_random_gguf: {source}: mlp={cfg['mlp']} norm={cfg['norm']} position={cfg['position']} "
             "is neither llama (swiglu, rmsnorm, rope) nor gpt2 (gelu, layernorm, learned)")


def ffn_hidden(cfg):
    if cfg.get("mlp_hidden"):
        return cfg["mlp_hidden"]
    if cfg["mlp"] != "swiglu":
        return 4 * cfg["dim"]
    m = cfg.get("mlp_multiple_of", 64)
    return m * ((8 * cfg["dim"] // 3 + m - 1) // m)  # nanoformer's swiglu_hidden_dim


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("config", help="a nanoformer config JSON (configs/*.json)")
    ap.add_argument("out", help="the .gguf to write")
    ap.add_argument("--type", default="f32", choices=sorted(TYPES), help="type of every 2-D weight")
    ap.add_argument("--embd-type", choices=sorted(TYPES), help="type of token_embd (default: --type)")
    ap.add_argument("--untied", action="store_true", help="write a separate output.weight (of --type)")
    ap.add_argument("--std", type=float, default=0.02, help="standard deviation of the weights")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--context", type=int, default=0, help="context_length (default: the config's max_seq_len)")
    ap.add_argument("--corpus", help="text to learn the BPE merges from (default: README.md + docs/*.md)")
    a = ap.parse_args()

    cfg = json.loads(Path(a.config).read_text())
    arch = architecture(cfg, a.config)
    dim, n_layers, vocab = cfg["dim"], cfg["n_layers"], cfg["vocab_size"]
    n_heads = cfg["n_heads"]
    n_kv = cfg.get("n_kv_heads") or n_heads
    head_dim = cfg.get("head_dim") or dim // n_heads
    ff = ffn_hidden(cfg)
    ctx = a.context or cfg["max_seq_len"]
    if arch == "gpt2" and n_kv != n_heads:
        sys.exit(f"make_random_gguf: {a.config}: gpt2 has no grouped-query attention (n_kv_heads {n_kv} != n_heads {n_heads})")
    wtype, etype = TYPES[a.type], TYPES[a.embd_type or a.type]
    rng = np.random.default_rng(a.seed)

    def weight(rows, cols):
        return (rng.standard_normal((rows, cols), dtype=np.float32) * a.std).astype(np.float32)

    def vec(n, gain):
        v = rng.standard_normal(n, dtype=np.float32)
        return (1.0 + 0.1 * v if gain else a.std * v).astype(np.float32)

    tmp = a.out + ".tmp"
    w = gguf.GGUFWriter(tmp, arch)
    w.add_name(f"{cfg.get('name', arch)}-random-{a.type}")
    w.add_file_type(FILE_TYPES[a.type])
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    w.add_context_length(ctx)
    w.add_embedding_length(dim)
    w.add_feed_forward_length(ff)
    w.add_block_count(n_layers)
    w.add_head_count(n_heads)
    if arch == "llama":
        w.add_head_count_kv(n_kv)
        w.add_rope_freq_base(float(cfg["rope_theta"]))
        w.add_rope_dimension_count(head_dim)
        w.add_layer_norm_rms_eps(float(cfg["norm_eps"]))
        w.add_key_length(head_dim)
        w.add_value_length(head_dim)
        w.add_vocab_size(vocab)
    else:
        w.add_layer_norm_eps(float(cfg["norm_eps"]))

    specials = ["<|endoftext|>"] if arch == "gpt2" else ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tokens, merges, types = make_tokenizer(vocab, specials, corpus(a.corpus))
    eot = vocab - len(specials)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")  # llama.cpp's name of GPT-2's pre-tokenizer regex
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(eot)
    w.add_eos_token_id(eot if arch == "gpt2" else eot + 2)
    w.add_add_bos_token(False)
    if arch == "llama":
        w.add_chat_template(CHATML)

    def put(name, arr, qtype):
        if arr.ndim == 1 or qtype == QT.F32:
            w.add_tensor(name, arr.astype(np.float32))
        else:
            w.add_tensor(name, gguf.quants.quantize(arr, qtype), raw_dtype=qtype)

    put("token_embd.weight", weight(vocab, dim), etype)
    if arch == "gpt2":
        put("position_embd.weight", weight(ctx, dim), QT.F32)  # F32, as convert_hf_to_gguf keeps it
    for i in range(n_layers):
        p = f"blk.{i}."
        if arch == "llama":
            put(p + "attn_norm.weight", vec(dim, True), QT.F32)
            put(p + "attn_q.weight", weight(n_heads * head_dim, dim), wtype)
            put(p + "attn_k.weight", weight(n_kv * head_dim, dim), wtype)
            put(p + "attn_v.weight", weight(n_kv * head_dim, dim), wtype)
            put(p + "attn_output.weight", weight(dim, n_heads * head_dim), wtype)
            put(p + "ffn_norm.weight", vec(dim, True), QT.F32)
            put(p + "ffn_gate.weight", weight(ff, dim), wtype)
            put(p + "ffn_up.weight", weight(ff, dim), wtype)
            put(p + "ffn_down.weight", weight(dim, ff), wtype)
        else:
            put(p + "attn_norm.weight", vec(dim, True), QT.F32)
            put(p + "attn_norm.bias", vec(dim, False), QT.F32)
            put(p + "attn_qkv.weight", weight(3 * dim, dim), wtype)
            put(p + "attn_qkv.bias", vec(3 * dim, False), QT.F32)
            put(p + "attn_output.weight", weight(dim, dim), wtype)
            put(p + "attn_output.bias", vec(dim, False), QT.F32)
            put(p + "ffn_norm.weight", vec(dim, True), QT.F32)
            put(p + "ffn_norm.bias", vec(dim, False), QT.F32)
            put(p + "ffn_up.weight", weight(ff, dim), wtype)
            put(p + "ffn_up.bias", vec(ff, False), QT.F32)
            put(p + "ffn_down.weight", weight(dim, ff), wtype)
            put(p + "ffn_down.bias", vec(dim, False), QT.F32)
    put("output_norm.weight", vec(dim, True), QT.F32)
    if arch == "gpt2":
        put("output_norm.bias", vec(dim, False), QT.F32)
    if a.untied or not cfg.get("tie_embeddings", True):
        put("output.weight", weight(vocab, dim), wtype)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    os.replace(tmp, a.out)
    print(f"wrote {a.out}: {arch} dim={dim} layers={n_layers} heads={n_heads}/{n_kv} ff={ff} vocab={vocab} "
          f"ctx={ctx} type={a.type} ({os.path.getsize(a.out) / 2**20:.1f} MiB)")


if __name__ == "__main__":
    main()
