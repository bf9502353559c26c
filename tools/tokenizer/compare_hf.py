#!/usr/bin/env python3
"""Compare nanoformer's tokenizer with Hugging Face `tokenizers`, in one run, and print a report.

  1. loading the real tokenizer files (MiniMind2, GPT-2): both libraries must accept or refuse
     the same files; a refused GPT-2 file is checked for the known corruption (one vocabulary entry
     renamed, so one merge produces a token missing from the vocabulary) and compared on a copy
     with that entry restored, kept in a temporary directory;
  2. identical ids on varied texts (English, Chinese, code, emoji, whitespace runs, numbers,
     special tokens, Unicode spaces), on thousands of random texts mixing every character class
     the split patterns distinguish, and on llama.cpp's GPT-2 test cases (expected ids from the
     .out file); the GPT-4 / LLaMA-3 split regexes are compared too;
  3. decoding: identical text, and exact round trips of invalid UTF-8 (nanoformer only: HF takes
     Python str);
  4. training: a 6400-token vocabulary on tinyshakespeare with both trainers (time, identical
     merges), then HF loads the tokenizer.json nanoformer saved and encodes identically;
  5. single-threaded encode / decode throughput on tinyshakespeare, medians over several runs.

Usage: python3 tools/tokenizer/compare_hf.py [--nanoformer build-tok/nanoformer]
                                             [--data /work/shared/data] [--runs 5]
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

os.environ["RAYON_NUM_THREADS"] = "1"  # HF single-threaded (read when its thread pool starts)
os.environ["TOKENIZERS_PARALLELISM"] = "false"
from tokenizers import Tokenizer  # noqa: E402

SEP = "\n@@nanoformer-text-separator@@\n"
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")
CL100K_REGEX = (r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]"
                r"|\s+(?!\S)|\s+")

VARIED_TEXTS = [
    "Hello world! The quick brown fox jumps over the lazy dog. I'M sure it's fine; we'll see, they'd say.",
    "机器学习是人工智能的一个分支。语言模型通过预测下一个词来学习语言的规律。你好，世界！",
    "日本語のテキスト。한국어 문장입니다. Привет, мир! Γειά σου κόσμε. مرحبا بالعالم ١٢٣. नमस्ते दुनिया",
    "def encode(self, text: str) -> list[int]:\n    return [self.vocab[w] for w in text.split()]\n",
    "for (int i = 0; i < n; ++i) {\n\ttotal += a[i] * b[i];  // dot\n}\r\n",
    "Emoji: 🎉🎉 🚀 👍🏽 👨‍👩‍👧 ❤️ 🦙.cpp 🫨",
    "   ", "\t\t\t", "\n\n\n\n", " \n \n ", "a  b   c    d     e", "trailing spaces   ", "\r\n\r\n", "x\u3000\u3000y",
    "1234567890 3.14159 1,000,000 007 ½ ¾ Ⅻ ٣٤٥ १२३ 12abc34",
    "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n<|endoftext|>",
    "<|endoftext|><|endoftext|>x<|endoftext| <|im_sta",
    "nbsp\u00a0\u00a0x nel\u0085y ls\u2028z fs\u001cq zwsp\u200bw thin\u2009space",
    "e\u0301te\u0301 'ſ 'S 'Re 'vE 'LL 'D 'M 'T can't WON'T",
    "a" * 300, "学习" * 100, "7" * 100 + " " + "!" * 100, " " * 200 + "end",
    "https://example.com/path?q=1&r=two#frag user@example.org x86_64 utf-8",
    "Ⓐⓑ ＡＢＣ ｆｕｌｌｗｉｄｔｈ １２３ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 Kelvin K",
    "", " ", "'", "''''", "\n",
]


def random_texts(n, seed=1234):
    """Random texts over code points from every class the split patterns care about."""
    rng = random.Random(seed)
    pools = [
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789", " ", " ", "  ", "\t\n\r",
        "'sStTmMdDlLrReEvV", "!\"#$%&()*+,-./:;<=>?@[\\]^_`{|}~", "éßñüÀÿ¿¡©®½¾\u00a0\u00ad",
        "\u0085\u001c\u001d\u001e\u001f\u000b\u000c\u2000\u2005\u200a\u2028\u2029\u202f\u205f\u3000\u1680\u180e\u200b",
        "\u0301\u0308\u0327\u064b\u093f\u200c\u200d\ufe0f", "机器学习人工智能你好世界", "ひらがなカタカナ한국어",
        "абвгдежзАБВГД", "مرحبا١٢٣٤", "नमस्ते१२३", "😀🎉🚀👍🏽🦙❤\U0001fae8", "ſ\u212a\u2126",
        "ＡＢＣａｂｃ１２３", "ⒶⓑⅫⅻ\u2160\u3007", "∑∫√≠≤≥±×÷", "\U0001d518\U0001d52b", "\u0378\ue000\U000f0000",
        "\U00011f04\U00011f05\u0cf3\U0002ebf0\U00010d50\U000105c0",  # new in Unicode 15.0-16.0
        "\U0001e6c0\U000323b0",  # new in Unicode 17.0 (unassigned for HF's Oniguruma and for us)
    ]
    out = []
    for _ in range(n):
        parts = []
        for _ in range(rng.randint(1, 12)):
            pool = rng.choice(pools)
            parts.append("".join(rng.choice(pool) for _ in range(rng.randint(1, 6))))
        out.append("".join(parts))
    return out


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


class Ours:
    def __init__(self, exe):
        self.exe = exe

    def info(self, path):
        r = run([self.exe, "tokenizer", "info", path])
        return r.returncode == 0, (r.stdout if r.returncode == 0 else r.stderr).strip()

    def encode_many(self, tok_path, texts, tmp):
        path = os.path.join(tmp, "texts.txt")
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(SEP.join(texts))
        r = run([self.exe, "tokenizer", "encode", "-t", tok_path, "-i", path, "--split", SEP.replace("\n", "\\n")])
        if r.returncode != 0:
            raise RuntimeError(r.stderr)
        lines = r.stdout.split("\n")[:-1]
        assert len(lines) == len(texts), (len(lines), len(texts))
        return [[int(x) for x in line.split()] for line in lines]

    def decode(self, tok_path, ids, tmp):
        path = os.path.join(tmp, "ids.txt")
        with open(path, "w") as f:
            f.write(" ".join(map(str, ids)))
        r = subprocess.run([self.exe, "tokenizer", "decode", "-t", tok_path, "-i", path], capture_output=True)
        if r.returncode != 0:
            raise RuntimeError(r.stderr.decode())
        return r.stdout


def hf_load(path):
    try:
        return Tokenizer.from_file(path), None
    except Exception as e:  # HF raises a plain Exception
        return None, str(e)


def repair_renamed_entry(path, tmp):
    """If exactly one merge yields a token missing from the vocabulary and exactly one non-byte
    token is produced by no merge (and is no added token), rename that entry back; return the new
    path and a description, or (None, reason)."""
    d = json.load(open(path, encoding="utf-8"))
    vocab, merges = d["model"]["vocab"], d["model"]["merges"]
    pairs = [m.split(" ") if isinstance(m, str) else m for m in merges]
    produced = {a + b for a, b in pairs}
    missing = [(i, a, b) for i, (a, b) in enumerate(pairs) if a + b not in vocab]
    added = {t["content"] for t in d.get("added_tokens", [])}
    orphans = [t for t in vocab if t not in produced and len(t) > 1 and t not in added]
    if len(missing) != 1 or len(orphans) != 1:
        return None, f"{len(missing)} dangling merges, {len(orphans)} orphan tokens: no unique repair"
    i, a, b = missing[0]
    vocab[a + b] = vocab.pop(orphans[0])
    out = os.path.join(tmp, "repaired_" + os.path.basename(path))
    json.dump(d, open(out, "w", encoding="utf-8"), ensure_ascii=False)
    return out, f"merge {i} '{a} {b}' needs '{a + b}', missing; vocab entry '{orphans[0]}' (id {vocab[a + b]}) is produced by no merge: renamed back to '{a + b}'"


def compare_ids(label, hf, ours_ids, texts):
    same = sum(1 for t, o in zip(texts, ours_ids) if hf.encode(t).ids == o)
    bad = [t for t, o in zip(texts, ours_ids) if hf.encode(t).ids != o]
    print(f"  {label}: {same}/{len(texts)} identical")
    for t in bad[:5]:
        print(f"    DIFF on {t!r}")
    return same == len(texts)


def with_pre_tokenizer(path, regex, tmp, name):
    d = json.load(open(path, encoding="utf-8"))
    d["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": regex}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}
    out = os.path.join(tmp, name)
    json.dump(d, open(out, "w", encoding="utf-8"), ensure_ascii=False)
    return out


def median_time(f, runs):
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nanoformer", default=os.path.join(os.path.dirname(__file__), "../../build-tok/nanoformer"))
    ap.add_argument("--data", default="/work/shared/data")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--fuzz", type=int, default=3000)
    args = ap.parse_args()
    ours = Ours(os.path.abspath(args.nanoformer))
    data = lambda name: os.path.join(args.data, name)  # noqa: E731
    ok = True
    tmp = tempfile.mkdtemp(prefix="nf_compare_hf_")
    fuzz = random_texts(args.fuzz)
    print(f"HF tokenizers {__import__('tokenizers').__version__}; nanoformer {ours.exe}; scratch {tmp}\n")

    print("1. Loading the real tokenizer files")
    usable = {}
    for name in ["minimind2_tokenizer.json", "gpt2_tokenizer.json"]:
        hf, hf_err = hf_load(data(name))
        our_ok, our_msg = ours.info(data(name))
        print(f"  {name}: HF {'loads' if hf else 'REFUSES: ' + hf_err}")
        print(f"  {name}: nanoformer {'loads' if our_ok else 'REFUSES: ' + our_msg}")
        ok &= (hf is not None) == our_ok
        if hf is not None:
            usable[name] = data(name)
        else:
            fixed, how = repair_renamed_entry(data(name), tmp)
            print(f"    repair for the comparison (copy in {tmp}): {how}")
            if fixed and hf_load(fixed)[0] is not None and ours.info(fixed)[0]:
                usable[name] = fixed

    print("\n2. Identical ids")
    for name, path in usable.items():
        hf = Tokenizer.from_file(path)
        print(f" {name}")
        ok &= compare_ids("varied texts", hf, ours.encode_many(path, VARIED_TEXTS, tmp), VARIED_TEXTS)
        ok &= compare_ids(f"random texts (GPT-2 split)", hf, ours.encode_many(path, fuzz, tmp), fuzz)
        for label, regex in [("LLaMA-3 split regex", LLAMA3_REGEX), ("cl100k split regex", CL100K_REGEX)]:
            variant = with_pre_tokenizer(path, regex, tmp, "split_" + name)
            ok &= compare_ids(f"random texts ({label})", Tokenizer.from_file(variant),
                              ours.encode_many(variant, fuzz + VARIED_TEXTS, tmp), fuzz + VARIED_TEXTS)
        if name.startswith("gpt2"):
            cases = open(data("gpt2_tokenizer_cases.inp"), encoding="utf-8").read().split("\n__ggml_vocab_test__\n")
            expected = open(data("gpt2_tokenizer_cases.out"), encoding="utf-8").read().split("\n")[:len(cases)]
            cases = cases[:len([e for e in expected])]
            got = ours.encode_many(path, cases, tmp)
            want = [[int(x) for x in line.split()] for line in expected]
            n_ok = sum(g == w for g, w in zip(got, want))
            hf_ok = sum(hf.encode(c).ids == w for c, w in zip(cases, want))
            print(f"  llama.cpp GPT-2 cases: nanoformer {n_ok}/{len(cases)}, HF {hf_ok}/{len(cases)} identical to the .out ids")
            ok &= n_ok == len(cases)

    print("\n3. Decoding")
    for name, path in usable.items():
        hf = Tokenizer.from_file(path)
        texts = [t for t in VARIED_TEXTS if t]
        ids = [i for t in texts for i in hf.encode(t).ids]
        same = ours.decode(path, ids, tmp) == hf.decode(ids, skip_special_tokens=False).encode("utf-8")
        print(f"  {name}: decode of {len(ids)} ids {'identical' if same else 'DIFFERENT'} to HF")
        ok &= same
        raw = bytes(random.Random(5).randrange(256) for _ in range(20000)) + "中文".encode()[:-1]
        raw_path = os.path.join(tmp, "raw.bin")
        open(raw_path, "wb").write(raw)
        r = run([ours.exe, "tokenizer", "encode", "-t", path, "-i", raw_path])
        back = ours.decode(path, [int(x) for x in r.stdout.split()], tmp)
        print(f"  {name}: 20 KB of random bytes (invalid UTF-8) round-trip {'exactly' if back == raw else 'NOT exactly'}")
        ok &= back == raw

    print("\n4. Training 6400 tokens on tinyshakespeare")
    corpus = data("tinyshakespeare.txt")
    hf_snippet = (
        "import time,sys\nfrom tokenizers import Tokenizer,models,pre_tokenizers,decoders,trainers\n"
        "t=Tokenizer(models.BPE());t.pre_tokenizer=pre_tokenizers.ByteLevel(add_prefix_space=False)\n"
        "t.decoder=decoders.ByteLevel()\n"
        f"tr=trainers.BpeTrainer(vocab_size=6400,special_tokens={SPECIALS!r},show_progress=False,"
        "initial_alphabet=pre_tokenizers.ByteLevel.alphabet())\n"
        f"s=time.perf_counter();t.train([{corpus!r}],tr);print(time.perf_counter()-s);t.save(sys.argv[1])\n")
    specials = [a for s in SPECIALS for a in ("-s", s)]
    for threads in ["1", "2"]:
        env = dict(os.environ, RAYON_NUM_THREADS=threads, OMP_NUM_THREADS=threads)
        hf_json, our_json = os.path.join(tmp, "hf6400.json"), os.path.join(tmp, "ours6400.json")
        hf_times, our_times = [], []
        for _ in range(3):
            hf_times.append(float(run([sys.executable, "-c", hf_snippet, hf_json], env=env).stdout))
            t = time.perf_counter()
            r = run([ours.exe, "tokenizer", "train", "-i", corpus, "-v", "6400", *specials, "-o", our_json, "-q",
                     "--threads", threads], env=env)
            our_times.append(time.perf_counter() - t)
            assert r.returncode == 0, r.stderr
        a, b = json.load(open(hf_json, encoding="utf-8")), json.load(open(our_json, encoding="utf-8"))
        norm = lambda ms: [m if isinstance(m, str) else " ".join(m) for m in ms]  # noqa: E731
        same = norm(a["model"]["merges"]) == norm(b["model"]["merges"]) and a["model"]["vocab"] == b["model"]["vocab"]
        print(f"  {threads} thread(s): HF {statistics.median(hf_times):.3f} s, nanoformer {statistics.median(our_times):.3f} s "
              f"(whole process, median of 3); vocab and merges {'identical' if same else 'DIFFERENT'}")
        ok &= same
    hf_of_ours = Tokenizer.from_file(our_json)
    text = open(corpus, encoding="utf-8").read()
    texts = VARIED_TEXTS + fuzz[:500] + [text]
    got = ours.encode_many(our_json, texts, tmp)
    same = sum(hf_of_ours.encode(t).ids == g for t, g in zip(texts, got))
    print(f"  HF loads nanoformer's tokenizer.json: {same}/{len(texts)} texts encode identically (incl. all of tinyshakespeare)")
    ok &= same == len(texts)

    print(f"\n5. Single-threaded throughput on tinyshakespeare ({len(text.encode()) / 1e6:.2f} MB), median of {args.runs} runs")
    for name, path in usable.items():
        hf = Tokenizer.from_file(path)
        nbytes = len(text.encode())
        hf.encode(text)  # warm-up (fills HF's word cache, as nanoformer's bench warms its own)
        ids = hf.encode(text).ids
        enc = median_time(lambda: hf.encode(text), args.runs)
        dec = median_time(lambda: hf.decode(ids), args.runs)
        lines = text.splitlines(keepends=True)
        batch = median_time(lambda: hf.encode_batch(lines), args.runs)
        r = run([ours.exe, "tokenizer", "bench", "-t", path, "-i", corpus, "--runs", str(args.runs)],
                env=dict(os.environ, OMP_NUM_THREADS="1"))
        f = r.stdout.split()
        our_enc, our_dec = float(f[f.index("encode_mb_s") + 1]), float(f[f.index("decode_mb_s") + 1])
        print(f"  {name}: encode  nanoformer {our_enc:8.2f} MB/s   HF {nbytes / enc / 1e6:6.2f} MB/s "
              f"(HF encode_batch over lines: {nbytes / batch / 1e6:.2f} MB/s)")
        print(f"  {name}: decode  nanoformer {our_dec:8.2f} MB/s   HF {nbytes / dec / 1e6:6.2f} MB/s")
        ok &= our_enc >= nbytes / enc / 1e6 and our_dec >= nbytes / dec / 1e6

    print("\nRESULT:", "all checks passed" if ok else "SOME CHECKS FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
