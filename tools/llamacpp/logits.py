#!/usr/bin/env python3
"""llama.cpp as the oracle: the logits of every input position and a greedy continuation.

The input is token ids (--tokens 1,2,3 or --tokens-file of ids, JSON list or whitespace), a text
tokenized by the GGUF's own tokenizer (--text), or --random N ids (seeded). One batch of the whole
input gives its logits (N x vocab, llama.cpp's logits_all); then --greedy G tokens are decoded one
at a time, each the argmax (lowest id on a tie) of the previous logits. The KV cache is f32 and
flash attention off by default, the closest llama.cpp comes to plain fp32 attention.

Writes, with --out PREFIX: PREFIX.logits.npy (float32, N x vocab), PREFIX.greedy_logits.npy
(G x vocab: the logits each greedy token was taken from, the first being the input's last row) and
PREFIX.json ({"model", "tokens", "greedy", "greedy_text", "n_threads", "cache_type", "flash_attn",
"llama_cpp_python"}). Prints a summary either way.

  logits.py model.gguf --random 64 --greedy 32 --out /tmp/q8
"""
import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import llamacpp_session as lcs  # noqa: E402


def read_tokens(a, session):
    if a.tokens:
        return [int(t) for t in a.tokens.replace(",", " ").split()]
    if a.tokens_file:
        text = Path(a.tokens_file).read_text()
        return [int(t) for t in (json.loads(text) if text.lstrip().startswith("[") else text.split())]
    if a.text is not None:
        return session.tokenize(a.text)
    return np.random.default_rng(a.seed).integers(0, session.n_vocab, a.random).tolist()


def save(path, write):
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        write(f)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", help="a .gguf file")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--tokens", help="token ids, comma- or space-separated")
    src.add_argument("--tokens-file", help="a file of token ids (a JSON list, or whitespace-separated)")
    src.add_argument("--text", help="a text, tokenized by the GGUF's tokenizer (no BOS added)")
    src.add_argument("--random", type=int, metavar="N", help="N random token ids (see --seed)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--greedy", type=int, default=32, metavar="G", help="greedy tokens to decode after the input")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cache-type", default="f32", choices=sorted(lcs.CACHE_TYPES))
    ap.add_argument("--flash-attn", default="off", choices=sorted(lcs.FLASH_ATTN))
    ap.add_argument("--out", metavar="PREFIX", help="write PREFIX.logits.npy, PREFIX.greedy_logits.npy, PREFIX.json")
    ap.add_argument("--verbose", action="store_true", help="llama.cpp's log on stderr")
    a = ap.parse_args()
    if a.random is not None and a.random <= 0:
        ap.error(f"--random must be positive, got {a.random}")
    if a.greedy < 0:
        ap.error(f"--greedy must be >= 0, got {a.greedy}")
    if not Path(a.model).is_file():
        ap.error(f"model: no file {a.model}")

    # The context holds the input and the greedy tokens; the batch holds the whole input.
    vocab = lcs.Session(a.model, verbose=a.verbose, vocab_only=True)
    tokens = read_tokens(a, vocab)
    vocab.close()
    if not tokens:
        sys.exit("logits: the input has no tokens")
    n_ctx = max(256, len(tokens) + a.greedy)
    s = lcs.Session(a.model, n_threads=a.threads, n_ctx=n_ctx, n_batch=len(tokens), n_ubatch=len(tokens),
                    cache_type=a.cache_type, flash_attn=a.flash_attn, verbose=a.verbose)
    bad = [t for t in tokens if not 0 <= t < s.n_vocab]
    if bad:
        sys.exit(f"logits: token ids {bad[:5]} are outside the vocabulary of {a.model} (0..{s.n_vocab - 1})")

    logits = s.decode(tokens, 0, all_logits=True)
    greedy, greedy_logits, last = [], [], logits[-1]
    for i in range(a.greedy):
        t = int(np.argmax(last))
        greedy.append(t)
        greedy_logits.append(last)
        if i + 1 < a.greedy:
            last = s.decode([t], len(tokens) + i)
    greedy_text = s.detokenize(greedy)
    s.close()

    print(f"{a.model}: {len(tokens)} tokens -> logits {logits.shape[0]}x{logits.shape[1]} "
          f"(llama-cpp-python {lcs.version()}, {a.threads} threads, cache {a.cache_type}, flash_attn {a.flash_attn})")
    print("logits[0][:8]  =", np.array2string(logits[0][:8], precision=5))
    print("logits[-1][:8] =", np.array2string(logits[-1][:8], precision=5))
    print("greedy =", greedy)
    if a.out:
        save(a.out + ".logits.npy", lambda f: np.save(f, logits.astype(np.float32)))
        gl = np.stack(greedy_logits) if greedy_logits else np.zeros((0, logits.shape[1]), np.float32)
        save(a.out + ".greedy_logits.npy", lambda f: np.save(f, gl.astype(np.float32)))
        meta = {"model": str(a.model), "tokens": tokens, "greedy": greedy, "greedy_text": greedy_text,
                "n_threads": a.threads, "cache_type": a.cache_type, "flash_attn": a.flash_attn,
                "llama_cpp_python": lcs.version()}
        save(a.out + ".json", lambda f: f.write(json.dumps(meta, indent=1).encode()))
        print(f"wrote {a.out}.logits.npy, {a.out}.greedy_logits.npy, {a.out}.json")


if __name__ == "__main__":
    main()
