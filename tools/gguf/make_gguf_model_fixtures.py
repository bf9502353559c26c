#!/usr/bin/env python3
"""Writes the GGUF model fixtures of tests/formats/test_gguf_checkpoint.cpp: two tiny random models
written by the `gguf` Python package's GGUFWriter (llama.cpp's reference writer), the logits a numpy
forward pass computes from the same weights, and the ids Hugging Face `tokenizers` gives some texts
with the same vocabulary and merges:

    bash scripts/install-python.sh && .venv/bin/python tools/gguf/make_gguf_model_fixtures.py tests/fixtures/gguf_model

- llama.gguf: the `llama` architecture as convert_hf_to_gguf.py writes it, with grouped-query
  attention (4 heads, 2 KV heads), q / k / v biases but no output bias (Qwen's pattern), rope.freq_base
  50000, an untied head; layer 0 and the token embedding in F16, layer 1 and the head in Q8_0
  (gguf.quants), norms and biases in F32.
- gpt2.gguf: the `gpt2` architecture: learned positions, LayerNorm with biases, a fused attn_qkv,
  GELU (tanh); the token embedding (the tied head) in Q8_0, the layers in F16; no tokenizer.
- llama.gguf embeds tests/fixtures/tokenizer/hf_gpt2.json's vocabulary and merges (600 tokens; its special
  tokens <|endoftext|>, <|im_start|>, <|im_end|> as CONTROL tokens; its two added tokens with
  lstrip / single_word dropped, as GGUF cannot express them), pre-tokenizer gpt-2.
- expected.safetensors: "<model>.ids" (T,) int64 and "<model>.logits" (T, 600) f32: the logits of a
  numpy float64 forward pass over the dequantised weights (written here from llama.cpp's graphs:
  llama.cpp's RoPE mode 0 rotates adjacent pairs (x[2i], x[2i+1]) by pos * freq_base^(-2i/d); no
  llama.cpp is run). nanoformer's q8_0 products quantise activations per block of 32 (as llama.cpp
  does), so the test's tolerance allows that.
- tokenizer.json: {"texts": [...], "ids": [[...]]}, the ids of tokenizers.Tokenizer.encode over the
  same vocabulary, merges and special tokens.
Re-running it rewrites the same bytes (fixed seeds).
"""
from __future__ import annotations

import argparse
import json
import struct
from pathlib import Path

import gguf
import numpy as np
from gguf import GGMLQuantizationType as Q
from tokenizers import Tokenizer

REPO = Path(__file__).resolve().parents[2]
TOKENIZER_JSON = REPO / "tests/fixtures/tokenizer/hf_gpt2.json"
TEXTS = [
    "Hello world, the cat sat on the mat.",
    "<|im_start|>user\nWhat is 12 + 30?<|im_end|>\n<|im_start|>assistant\n",
    "  leading spaces and trailing   ",
    "naïve café, 机器学习 and emoji 🙂<|endoftext|>",
    "It's they'll we'd I'm you've 1234567",
]


def tokenizer_parts():
    """hf_gpt2.json without the added tokens GGUF cannot express; its tokens, types, merges."""
    spec = json.loads(TOKENIZER_JSON.read_text())
    spec["added_tokens"] = [t for t in spec["added_tokens"] if not (t["lstrip"] or t["rstrip"] or t["single_word"])]
    vocab = spec["model"]["vocab"]
    tokens = [None] * len(vocab)
    for token, i in vocab.items():
        tokens[i] = token
    types = [gguf.TokenType.NORMAL] * len(tokens)
    for t in spec["added_tokens"]:
        tokens[t["id"]] = t["content"]
        types[t["id"]] = gguf.TokenType.CONTROL if t["special"] else gguf.TokenType.USER_DEFINED
    merges = [m if isinstance(m, str) else " ".join(m) for m in spec["model"]["merges"]]
    return Tokenizer.from_str(json.dumps(spec)), tokens, types, merges


def add_tokenizer(w: gguf.GGUFWriter, tokens, types, merges):
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(0)
    w.add_eos_token_id(2)
    w.add_add_bos_token(False)


def stored(w: np.ndarray, qtype: Q) -> tuple[np.ndarray, np.ndarray]:
    """(what the writer stores, the float64 values it stands for)."""
    w = w.astype(np.float32)
    if qtype == Q.F32:
        return w, w.astype(np.float64)
    if qtype == Q.F16:
        h = w.astype(np.float16)
        return h, h.astype(np.float64)
    blocks = gguf.quants.quantize(w, qtype)
    return blocks, gguf.quants.dequantize(blocks, qtype).astype(np.float64)


class Model:
    """A GGUFWriter plus the float64 weights it was given, by GGUF name."""

    def __init__(self, path: Path, arch: str):
        self.writer = gguf.GGUFWriter(str(path), arch)
        self.weights: dict[str, np.ndarray] = {}

    def tensor(self, name: str, value: np.ndarray, qtype: Q = Q.F32):
        data, exact = stored(value, qtype)
        self.writer.add_tensor(name, data, raw_dtype=None if qtype in (Q.F32, Q.F16) else qtype)
        self.weights[name] = exact

    def write(self):
        self.writer.write_header_to_file()
        self.writer.write_kv_data_to_file()
        self.writer.write_tensors_to_file()
        self.writer.close()


def rms_norm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def layer_norm(x, w, b, eps):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def rope_adjacent(x, base):
    """llama.cpp's RoPE mode 0 over x (T, H, D): pairs (x[2i], x[2i+1]) rotated by t base^(-2i/D)."""
    t_len, _, d = x.shape
    theta = base ** (-np.arange(0, d, 2) / d)
    angle = np.arange(t_len)[:, None] * theta[None, :]  # (T, D/2)
    cos, sin = np.cos(angle)[:, None, :], np.sin(angle)[:, None, :]
    even, odd = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out


def attention(q, k, v):
    """Causal softmax attention, q (T, H, D), k / v (T, Hkv, D); head h reads kv head h // (H / Hkv)."""
    t_len, heads, d = q.shape
    group = heads // k.shape[1]
    out = np.empty_like(q)
    mask = np.triu(np.full((t_len, t_len), -np.inf), 1)
    for h in range(heads):
        scores = q[:, h] @ k[:, h // group].T / np.sqrt(d) + mask
        p = np.exp(scores - scores.max(axis=-1, keepdims=True))
        out[:, h] = (p / p.sum(axis=-1, keepdims=True)) @ v[:, h // group]
    return out


def silu(x):
    return x / (1 + np.exp(-x))


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def make_llama(path: Path, tok, rng) -> Model:
    vocab, dim, layers, heads, kv_heads, ffn, ctx, eps, base = 600, 32, 2, 4, 2, 64, 64, 1e-5, 50000.0
    hd = dim // heads
    m = Model(path, "llama")
    w = m.writer
    w.add_name("tiny-llama")
    w.add_block_count(layers)
    w.add_context_length(ctx)
    w.add_embedding_length(dim)
    w.add_feed_forward_length(ffn)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_rope_freq_base(base)
    w.add_layer_norm_rms_eps(eps)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0)
    w.add_vocab_size(vocab)
    w.add_rope_dimension_count(hd)
    add_tokenizer(w, *tok)
    m.tensor("token_embd.weight", rng.normal(0, 0.5, (vocab, dim)), Q.F16)
    for layer in range(layers):
        qt = Q.F16 if layer == 0 else Q.Q8_0
        b = f"blk.{layer}."
        m.tensor(b + "attn_norm.weight", 1 + rng.normal(0, 0.1, dim))
        m.tensor(b + "attn_q.weight", rng.normal(0, 0.2, (heads * hd, dim)), qt)
        m.tensor(b + "attn_q.bias", rng.normal(0, 0.1, heads * hd))
        m.tensor(b + "attn_k.weight", rng.normal(0, 0.2, (kv_heads * hd, dim)), qt)
        m.tensor(b + "attn_k.bias", rng.normal(0, 0.1, kv_heads * hd))
        m.tensor(b + "attn_v.weight", rng.normal(0, 0.2, (kv_heads * hd, dim)), qt)
        m.tensor(b + "attn_v.bias", rng.normal(0, 0.1, kv_heads * hd))
        m.tensor(b + "attn_output.weight", rng.normal(0, 0.2, (dim, heads * hd)), qt)
        m.tensor(b + "ffn_norm.weight", 1 + rng.normal(0, 0.1, dim))
        m.tensor(b + "ffn_gate.weight", rng.normal(0, 0.2, (ffn, dim)), qt)
        m.tensor(b + "ffn_up.weight", rng.normal(0, 0.2, (ffn, dim)), qt)
        m.tensor(b + "ffn_down.weight", rng.normal(0, 0.2, (dim, ffn)), qt)
    m.tensor("output_norm.weight", 1 + rng.normal(0, 0.1, dim))
    m.tensor("output.weight", rng.normal(0, 0.2, (vocab, dim)), Q.Q8_0)
    m.write()
    m.forward = lambda ids: llama_forward(m.weights, ids, layers, heads, kv_heads, eps, base)
    return m


def llama_forward(W, ids, layers, heads, kv_heads, eps, base):
    x = W["token_embd.weight"][ids]
    t_len, dim = x.shape
    hd = dim // heads
    for layer in range(layers):
        b = f"blk.{layer}."
        h = rms_norm(x, W[b + "attn_norm.weight"], eps)
        q = (h @ W[b + "attn_q.weight"].T + W[b + "attn_q.bias"]).reshape(t_len, heads, hd)
        k = (h @ W[b + "attn_k.weight"].T + W[b + "attn_k.bias"]).reshape(t_len, kv_heads, hd)
        v = (h @ W[b + "attn_v.weight"].T + W[b + "attn_v.bias"]).reshape(t_len, kv_heads, hd)
        a = attention(rope_adjacent(q, base), rope_adjacent(k, base), v).reshape(t_len, dim)
        x = x + a @ W[b + "attn_output.weight"].T
        h = rms_norm(x, W[b + "ffn_norm.weight"], eps)
        x = x + (silu(h @ W[b + "ffn_gate.weight"].T) * (h @ W[b + "ffn_up.weight"].T)) @ W[b + "ffn_down.weight"].T
    return rms_norm(x, W["output_norm.weight"], eps) @ W["output.weight"].T


def make_gpt2(path: Path, _tok, rng) -> Model:
    vocab, dim, layers, heads, ffn, ctx, eps = 600, 32, 2, 4, 64, 32, 1e-5
    m = Model(path, "gpt2")
    w = m.writer
    w.add_name("tiny-gpt2")
    w.add_block_count(layers)
    w.add_context_length(ctx)
    w.add_embedding_length(dim)
    w.add_feed_forward_length(ffn)
    w.add_head_count(heads)
    w.add_layer_norm_eps(eps)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    m.tensor("token_embd.weight", rng.normal(0, 0.5, (vocab, dim)), Q.Q8_0)
    m.tensor("position_embd.weight", rng.normal(0, 0.1, (ctx, dim)))
    for layer in range(layers):
        b = f"blk.{layer}."
        m.tensor(b + "attn_norm.weight", 1 + rng.normal(0, 0.1, dim))
        m.tensor(b + "attn_norm.bias", rng.normal(0, 0.1, dim))
        m.tensor(b + "attn_qkv.weight", rng.normal(0, 0.2, (3 * dim, dim)), Q.F16)
        m.tensor(b + "attn_qkv.bias", rng.normal(0, 0.1, 3 * dim))
        m.tensor(b + "attn_output.weight", rng.normal(0, 0.2, (dim, dim)), Q.F16)
        m.tensor(b + "attn_output.bias", rng.normal(0, 0.1, dim))
        m.tensor(b + "ffn_norm.weight", 1 + rng.normal(0, 0.1, dim))
        m.tensor(b + "ffn_norm.bias", rng.normal(0, 0.1, dim))
        m.tensor(b + "ffn_up.weight", rng.normal(0, 0.2, (ffn, dim)), Q.F16)
        m.tensor(b + "ffn_up.bias", rng.normal(0, 0.1, ffn))
        m.tensor(b + "ffn_down.weight", rng.normal(0, 0.2, (dim, ffn)), Q.F16)
        m.tensor(b + "ffn_down.bias", rng.normal(0, 0.1, dim))
    m.tensor("output_norm.weight", 1 + rng.normal(0, 0.1, dim))
    m.tensor("output_norm.bias", rng.normal(0, 0.1, dim))
    m.write()
    m.forward = lambda ids: gpt2_forward(m.weights, ids, layers, heads, eps)
    return m


def gpt2_forward(W, ids, layers, heads, eps):
    t_len = len(ids)
    x = W["token_embd.weight"][ids] + W["position_embd.weight"][:t_len]
    dim = x.shape[1]
    hd = dim // heads
    for layer in range(layers):
        b = f"blk.{layer}."
        h = layer_norm(x, W[b + "attn_norm.weight"], W[b + "attn_norm.bias"], eps)
        qkv = h @ W[b + "attn_qkv.weight"].T + W[b + "attn_qkv.bias"]
        q, k, v = (qkv[:, i * dim:(i + 1) * dim].reshape(t_len, heads, hd) for i in range(3))
        x = x + attention(q, k, v).reshape(t_len, dim) @ W[b + "attn_output.weight"].T + W[b + "attn_output.bias"]
        h = layer_norm(x, W[b + "ffn_norm.weight"], W[b + "ffn_norm.bias"], eps)
        u = gelu_tanh(h @ W[b + "ffn_up.weight"].T + W[b + "ffn_up.bias"])
        x = x + u @ W[b + "ffn_down.weight"].T + W[b + "ffn_down.bias"]
    return layer_norm(x, W["output_norm.weight"], W["output_norm.bias"], eps) @ W["token_embd.weight"].T


def write_safetensors(path: Path, tensors: dict[str, np.ndarray]):
    """The safetensors layout by hand (8-byte header length, JSON header, data), keys sorted."""
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name])
        dtype = {np.dtype(np.float32): "F32", np.dtype(np.int64): "I64"}[a.dtype]
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [offset, offset + a.nbytes]}
        blobs.append(a.tobytes())
        offset += a.nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", nargs="?", default=str(REPO / "tests/fixtures/gguf_model"))
    out = Path(parser.parse_args().out)
    out.mkdir(parents=True, exist_ok=True)
    hf, tokens, types, merges = tokenizer_parts()
    tok = (tokens, types, merges)
    rng = np.random.default_rng(22)
    prompt = hf.encode(TEXTS[0]).ids[:6]
    expected = {}
    for name, make in (("llama", make_llama), ("gpt2", make_gpt2)):
        model = make(out / f"{name}.gguf", tok, rng)
        expected[f"{name}.ids"] = np.array(prompt, dtype=np.int64)
        expected[f"{name}.logits"] = model.forward(np.array(prompt)).astype(np.float32)
    write_safetensors(out / "expected.safetensors", expected)
    ids = [hf.encode(t).ids for t in TEXTS]
    (out / "tokenizer.json").write_text(json.dumps({"texts": TEXTS, "ids": ids}, ensure_ascii=False, indent=1) + "\n")
    for f in sorted(out.iterdir()):
        print(f"{f}: {f.stat().st_size} bytes")


if __name__ == "__main__":
    main()
