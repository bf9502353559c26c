#!/usr/bin/env python3
"""Compare nanoformer's WordPiece (BERT) tokenizer with Hugging Face `tokenizers` on a real tokenizer.json.

Two checks, through the built `nanoformer tokenizer encode` (truncation and padding off in HF):
  random   N random texts mixing scripts, accents, combining marks, CJK, control/format characters,
           Unicode spaces and punctuation, emoji and special tokens: ids with [CLS] ... [SEP]
  probe    every assigned code point below U+30000 between two letters ("q" + c + "q"), with the
           file's normalizer and with lowercase off: the characters whose ids differ, by category
           (HF's category and normalization tables are older than nanoformer's Unicode 16.0 ones)

Usage: python3 tools/tokenizer/compare_hf_wordpiece.py --nanoformer build/nanoformer \
           --tokenizer /path/to/all-MiniLM-L6-v2/tokenizer.json [--random 3000] [--probe]
"""
import argparse
import collections
import json
import os
import random
import subprocess
import tempfile

from tokenizers import Tokenizer

SEP = "\n__nf_text__\n"
POOLS = ["abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", " \t\n\r\u00a0\u3000\u2028\u0085",
         "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~«»„“”‘’—…¿¡。，！、【】", "àáâãäåæçèéêëìíîïñòóôõöøùúûüýÿÀÉÎÕÜßİıŁłŒœŠšŽž",
         "\u0300\u0301\u0302\u0303\u0308\u0323\u0327\u0345\u05b0\u0610\u093c\u0e31\u3099\u309a",
         "机器学习人工智能的一个分支你好世界中文字符豈𠀀𪜀", "がぎぐげごパピプペポかきくけこ한국어문장입니다", "ΣΑΣΊΟΔΟσςαβγДЖЯжяЁё",
         "\x00\x01\x07\x1b\x1c\x7f\u200b\u200c\u200d\ufeff\ufffd\u00ad\ue000\U000e0001\u0378",
         "🎉🥰🫠👍🏽❤️🚀☃★ꙮ𓀀ᚠ߷𝔘ǅǄﬁ①²½ⅻℌΩKÅ"]


def ours(exe, tok_path, texts, tmp, special):
    path = os.path.join(tmp, "texts.txt")
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(SEP.join(texts))
    cmd = [exe, "tokenizer", "encode", "-t", tok_path, "-i", path, "--split", "\\n__nf_text__\\n"]
    out = subprocess.run(cmd + (["--special-tokens"] if special else []), capture_output=True, text=True,
                         check=True).stdout.split("\n")
    return [[int(x) for x in line.split()] for line in out[:len(texts)]]


def hf_load(path):
    tok = Tokenizer.from_file(path)
    tok.no_truncation()
    tok.no_padding()
    return tok


def random_check(exe, tok_path, n, tmp):
    rng = random.Random(7)
    texts = []
    for _ in range(n):
        t = "".join("".join(rng.choice(p) for _ in range(rng.randint(1, 8)))
                    for p in (rng.choice(POOLS) for _ in range(rng.randint(0, 40))))
        if rng.random() < 0.2:
            t += " [SEP] " + t[:5] + "[MASK]"
        texts.append(t)
    hf = hf_load(tok_path)
    got = ours(exe, tok_path, texts, tmp, True)
    bad = [t for t, g in zip(texts, got) if g != hf.encode(t).ids]
    for t in bad[:5]:
        print("differs:", repr(t))
    print(f"random: {n - len(bad)}/{n} texts identical")


def probe(exe, tok_path, tmp):
    import unicodedata
    cps = [c for c in range(0x80, 0x30000)
           if not 0xD800 <= c <= 0xDFFF and unicodedata.category(chr(c)) != "Cn"]
    texts = ["q" + chr(c) + "q" for c in cps]
    base = json.load(open(tok_path, encoding="utf-8"))
    for name, lowercase in (("file", base["normalizer"].get("lowercase", True)), ("lowercase off", False)):
        path = os.path.join(tmp, "variant.json")
        json.dump({**base, "normalizer": {**base["normalizer"], "lowercase": lowercase}}, open(path, "w"))
        hf = hf_load(path)
        got = ours(exe, path, texts, tmp, False)
        expected = hf.encode_batch(texts, add_special_tokens=False)
        by_cat = collections.defaultdict(list)
        for c, g, e in zip(cps, got, expected):
            if g != e.ids:
                by_cat[unicodedata.category(chr(c))].append(f"U+{c:04X}")
        total = sum(len(v) for v in by_cat.values())
        print(f"probe ({name}): {len(cps) - total}/{len(cps)} code points identical;",
              {k: (len(v), v[:4]) for k, v in by_cat.items()})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nanoformer", default=os.path.join(os.path.dirname(__file__), "../../build/nanoformer"))
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--random", type=int, default=3000)
    ap.add_argument("--probe", action="store_true")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        random_check(a.nanoformer, a.tokenizer, a.random, tmp)
        if a.probe:
            probe(a.nanoformer, a.tokenizer, tmp)


if __name__ == "__main__":
    main()
