#!/usr/bin/env python3
"""nanochat's Engine.generate with its calculator, as karpathy/nanochat@92d63d4's own engine.py runs
it, for tests/infer/test_tool_use.cpp (NanochatCalculatorUse.DecodesAsNanochatsEngine):

    /tmp/venv/bin/python tools/golden/nanochat_engine_fixtures.py NANOCHAT_GIT_DIR tests/fixtures

NANOCHAT_GIT_DIR is a clone of karpathy/nanochat (a bare one will do) holding commit 92d63d4; the
script reads nanochat/{gpt,common,optim,flash_attention,engine}.py at that commit with `git show`
into a temporary package (nothing of nanochat is copied into this repository) and runs them
unchanged on the CPU (needs torch). engine.py imports checkpoint_manager only for its __main__
(whose tokenizer needs rustbpe and tiktoken): that one module is a stub here whose load_model is
never called.

The tokenizer is a byte-level one whose ids 0-255 are the bytes and 256-261 nanochat's special
tokens <|bos|>, <|python_start|>, <|python_end|>, <|output_start|>, <|output_end|>,
<|assistant_end|> (the C++ test's tokenizer::testing::byte_tokenizer with the same specials):
Engine reads it through encode_special, get_bos_token_id, encode and decode only.

The model: GPTConfig(sequence_len=128, vocab_size=262, n_layer=2, n_head=2, n_kv_head=1, n_embd=32,
window_pattern="L") after nanochat's init_weights(), torch.manual_seed(0). Its init zeroes every
block's output projections (attn.c_proj, mlp.c_proj), so the logits at a position are a function
of that position's token alone: a bigram table. The script writes that table through the
embeddings and the head so that greedy decoding after the prompt "<|bos|>Q?" (or any ending in ":") writes
"=<|python_start|>12*34<|python_end|>" and, after the engine forces "<|output_start|>408<|output_end|>",
"!" and the same call again, until max_tokens: every script token's embedding row a distinct basis
vector (so RMSNorm leaves it a basis vector), and the head's row of its successor that vector
scaled to a logit of 10. The engine's tokens are the reference; the script only checks that they
hold the calls it meant.

Written:
  nanochat/engine_92d63d4/meta_000000.json   {"step": 0, "model_config": asdict(config)}
  nanochat/engine_92d63d4/model_000000.pt    torch.save(model.state_dict())
  nanochat/engine_92d63d4.json               {"prompt", "max_tokens", "tokens" (every token Engine.generate
                                             yields), "masks" (1 sampled, 0 forced), "specials"}
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import os
import subprocess
import sys
import tempfile
import types
from pathlib import Path

import torch

COMMIT = "92d63d4"
SPECIALS = ["<|bos|>", "<|python_start|>", "<|python_end|>", "<|output_start|>", "<|output_end|>", "<|assistant_end|>"]
MAX_TOKENS = 48


class ByteTokenizer:
    """The interface Engine reads: ids 0-255 bytes, 256 + i the i-th special token."""

    def encode_special(self, text):
        return 256 + SPECIALS.index(text)

    def get_bos_token_id(self):
        return self.encode_special("<|bos|>")

    def encode(self, text):
        return list(text.encode("utf-8"))

    def decode(self, ids):
        return bytes(i for i in ids if i < 256).decode("utf-8", errors="replace")


def load_nanochat(git_dir: Path, work: Path):
    package = work / "nanochat"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    for name in ("gpt.py", "common.py", "optim.py", "flash_attention.py", "engine.py"):
        source = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{COMMIT}:nanochat/{name}"], check=True,
                                capture_output=True).stdout
        (package / name).write_bytes(source)
    stub = types.ModuleType("nanochat.checkpoint_manager")
    stub.load_model = None  # engine.py's __main__ only
    sys.modules["nanochat.checkpoint_manager"] = stub
    sys.path.insert(0, str(work))
    os.environ["NANOCHAT_DTYPE"] = "float32"
    return importlib.import_module("nanochat.gpt"), importlib.import_module("nanochat.engine")


def script_bigrams(model, tok: ByteTokenizer) -> None:
    """Successors: ? or : -> = -> python_start -> 1 2 * 3 4 -> python_end; output_end -> ! -> python_start."""
    s = tok.encode_special
    chain = [ord("?"), ord("="), s("<|python_start|>")] + tok.encode("12*34") + [s("<|python_end|>")]
    successor = dict(zip(chain, chain[1:]))
    successor[ord(":")] = ord("=")  # so that a GRPO prompt ("...Answer:") calls it too (tests/train/test_grpo.cpp)
    successor[s("<|output_end|>")] = ord("!")
    successor[ord("!")] = s("<|python_start|>")
    wte, head = model.transformer.wte.weight, model.lm_head.weight
    d = wte.shape[1]
    tokens = sorted(set(successor) | set(successor.values()))
    assert len(tokens) <= d
    with torch.no_grad():
        for k, t in enumerate(tokens):
            wte[t].zero_()
            wte[t, k] = 1.0  # RMSNorm makes it sqrt(d) e_k
        for t, nxt in successor.items():
            head[nxt].zero_()
        for t, nxt in successor.items():
            head[nxt, tokens.index(t)] = 10.0 / d ** 0.5  # logit 10 for the successor


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("git_dir", type=Path)
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        gpt, engine = load_nanochat(args.git_dir, Path(work))
        config = gpt.GPTConfig(sequence_len=128, vocab_size=256 + len(SPECIALS), n_layer=2, n_head=2, n_kv_head=1,
                               n_embd=32, window_pattern="L")
        torch.manual_seed(0)
        model = gpt.GPT(config)
        model.init_weights()
        tok = ByteTokenizer()
        script_bigrams(model, tok)
        model.eval()
        prompt = [tok.get_bos_token_id()] + tok.encode("Q?")
        tokens, masks = [], []
        for column, mask in engine.Engine(model, tok).generate(prompt, num_samples=1, max_tokens=MAX_TOKENS,
                                                               temperature=0.0):
            tokens.append(column[0])
            masks.append(mask[0])
        text = tok.decode([t if t < 256 else ord("|") for t in tokens])
        call = [tok.encode_special("<|output_start|>")] + tok.encode("408") + [tok.encode_special("<|output_end|>")]
        forced = [t for t, m in zip(tokens, masks) if m == 0]
        assert forced[:5] == call and len(forced) >= 10, (text, forced)

        folder = args.out / "nanochat" / "engine_92d63d4"
        folder.mkdir(parents=True, exist_ok=True)
        meta = {"step": 0, "model_config": dataclasses.asdict(config)}
        (folder / "meta_000000.json").write_text(json.dumps(meta, indent=2))
        torch.save(model.state_dict(), folder / "model_000000.pt")
        fixture = {"commit": COMMIT, "specials": SPECIALS, "prompt": prompt, "max_tokens": MAX_TOKENS,
                   "tokens": tokens, "masks": masks}
        (args.out / "nanochat" / "engine_92d63d4.json").write_text(json.dumps(fixture) + "\n")
        print(f"{len(tokens)} tokens, {len(forced)} forced: {text!r}")


if __name__ == "__main__":
    main()
