#!/usr/bin/env python3
"""Generate the tokenizer test fixtures in tests/fixtures/tokenizer with Hugging Face `tokenizers`.

Inputs (committed, written for the project): corpus.txt (training text) and the parity texts built
below. Outputs:
  hf_gpt2.json    byte-level BPE trained by HF on corpus.txt (vocab 600, GPT-2 split), plus added
                  tokens exercising lstrip/rstrip and single_word
  hf_gpt4.json    the same with the LLaMA-3 split regex (Sequence[Split, ByteLevel]) and
                  ignore_merges, as LLaMA-3's tokenizer.json is configured
  hf_prefix.json  hf_gpt2.json with add_prefix_space = true
  parity.txt      test texts separated by SEPARATOR (English, Chinese, code, emoji, whitespace
                  runs, numbers, special tokens, Unicode spaces, long words)
  <name>.ids      the ids HF produces for each text, one line per text
The C++ tests check that nanoformer loads these files and produces exactly these ids, and that its
own trainer reproduces the merges of hf_gpt2.json / hf_gpt4.json from corpus.txt.

Usage: python3 tools/tokenizer/make_fixtures.py [tests/fixtures/tokenizer]
"""
import json
import os
import sys

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

SEPARATOR = "\n__nf_text__\n"
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")
VOCAB_SIZE = 600

PARITY_TEXTS = [
    "Hello world",
    " Hello world",
    "Hello, world! How's it going? I'M fine, you'LL see; we've/they'd/she's.",
    "The quick brown fox jumps over the lazy dog.",
    "机器学习是人工智能的一个分支。你好，世界！",
    "日本語のテキスト、한국어 문장, Привет мир, Γειά σου, مرحبا, שלום",
    "    def encode(self, text):\n        return [self.vocab[w] for w in text.split()]\n",
    "for (int i = 0; i < n; ++i) { total += a[i] * b[i]; }\r\n",
    "Emoji 🎉🎉 🚀 👍🏽 👨‍👩‍👧 ❤️ 🦙.cpp",
    "   ", "\t\t", "\n", "\n\n\n", " \n ", "a  b   c    d", "trailing   ", "\r\n\r\n", "x\u3000\u3000y",
    "12345678901234567890 3.14159 1,000,000 ½ ¾ Ⅻ ٣٤٥ १२३",
    "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\nHi<|im_end|>",
    "<|endoftext|><|endoftext|>text<|endoftext|>",
    "not special: <|im_sta <|endoftext| <|endoftext |>",
    "tool call a   <tool>   b and <tool>x",
    "cat concat cats cat_ é cat, cat.",
    "nbsp\u00a0\u00a0x, nel\u0085y, ls\u2028z, fs\u001cq, zwsp\u200bw",
    "e\u0301te\u0301 नमस्ते 'ſ 'S 'Re 'vE 'LL 'D 'M 'T",
    "a" * 100,
    "学习" * 40,
    "7" * 70 + " " + "!" * 80,
    " " * 90 + "end",
    "mixed: abc123def x86_64 utf-8 https://example.com/path?q=1&r=two#frag",
    "",
    " ",
    "'",
    "''''",
    "Ⓐⓑ ＡＢＣ ｆｕｌｌｗｉｄｔｈ",
]


def train(pre_tokenizer, corpus, ignore_merges=False):
    tok = Tokenizer(models.BPE(ignore_merges=ignore_merges))
    tok.pre_tokenizer = pre_tokenizer
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, special_tokens=SPECIALS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train([corpus], trainer)
    tok.add_tokens([AddedToken("<tool>", lstrip=True, rstrip=True, special=False, normalized=False),
                    AddedToken("cat", single_word=True, special=False)])
    return tok


def write_ids(tok, path):
    with open(path, "w", encoding="utf-8") as f:
        for text in PARITY_TEXTS:
            f.write(" ".join(str(i) for i in tok.encode(text).ids) + "\n")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "../../tests/fixtures/tokenizer")
    corpus = os.path.join(out, "corpus.txt")
    with open(os.path.join(out, "parity.txt"), "w", encoding="utf-8", newline="") as f:
        f.write(SEPARATOR.join(PARITY_TEXTS))

    gpt2 = train(pre_tokenizers.ByteLevel(add_prefix_space=False), corpus)
    gpt4 = train(pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(LLAMA3_REGEX), "isolated"),
                                          pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]),
                 corpus, ignore_merges=True)
    prefix_json = json.loads(gpt2.to_str())
    prefix_json["pre_tokenizer"]["add_prefix_space"] = True
    prefix = Tokenizer.from_str(json.dumps(prefix_json))

    for name, tok in [("hf_gpt2", gpt2), ("hf_gpt4", gpt4), ("hf_prefix", prefix)]:
        tok.save(os.path.join(out, name + ".json"))
        write_ids(tok, os.path.join(out, name + ".ids"))
        for text in PARITY_TEXTS:  # lstrip/rstrip tokens swallow whitespace; prefix spaces are added
            if "<tool>" not in text and name != "hf_prefix":
                assert tok.decode(tok.encode(text).ids, skip_special_tokens=False) == text
    print(f"wrote fixtures to {out}")


if __name__ == "__main__":
    main()
