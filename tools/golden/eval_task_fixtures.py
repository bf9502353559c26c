#!/usr/bin/env python3
"""Benchmark fixtures for tests/apps/test_eval_tasks.cpp, with `transformers` as the oracle.

    /work/venv-eval/bin/python tools/golden/eval_task_fixtures.py tests/fixtures/eval

writes into the folder:
  - <layout>.jsonl: 50 synthetic records in each built-in layout (hellaswag, arc, mmlu, ceval, mc) and
    8 in gsm8k, drawn from small word lists by a seeded random.Random; arc_dev.jsonl: 10 few-shot examples;
  - chars.json: a nanoformer character vocabulary ({"type": "nanoformer-char", "code_points": [...]})
    of every character the prompts hold;
  - llama_char/: a random-weight LlamaForCausalLM (vocab = the characters, dim 32, 2 layers, GQA 4/2,
    max_position_embeddings 512) saved with save_pretrained;
  - expected.json: lm-eval's _encode_pair ids of a few (context, continuation) pairs under a byte-level BPE
    (tests/fixtures/tokenizer/hf_gpt2.json); for every layout (and "arc_fewshot": arc with 2 shots from arc_dev.jsonl, seed 7),
    each record's summed continuation log-probs, gold, and the task's acc and acc_norm; for gsm8k each
    record's greedy generation (transformers' generate, do_sample=False) cut at the stop strings.

The prompts are built here from lm-evaluation-harness's task YAMLs (doc_to_text, doc_to_choice,
target_delimiter " ", few-shot examples joined by "\n\n", description first) and scored the way
lm-eval's loglikelihood does: context and continuation encoded as _encode_pair does, one full
forward per choice over (context + continuation)[:-1], log_softmax in float64 of the float32
logits, the continuation's entries summed. acc: argmax == gold; acc_norm: argmax of the sum over
the choice's UTF-8 bytes. Nothing here shares code with the C++ (prefix cache, batching).
"""
from __future__ import annotations

import json
import logging
import random
import re
import sys
from pathlib import Path

import torch
from transformers import LlamaConfig, LlamaForCausalLM

WORDS = ("the a man woman dog cat child cook river stone garden house ball water light car road tree bird "
         "runs jumps holds opens paints throws finds carries washes climbs reads plays slowly quickly "
         "red green small large old new under over near behind with without").split()
HANZI = list("中国水火山木金土人大小学生老师天地日月上下左右东西南北") + ["。", "，"]
SUBJECTS = ["high_school_physics", "college_biology", "world_religions", "abstract_algebra"]
RECORDS = 50
FEWSHOT, FEWSHOT_SEED = 2, 7
MASK = (1 << 64) - 1


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def hanzi(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(HANZI) for _ in range(n))


def make_records(rng: random.Random) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {k: [] for k in ("hellaswag", "arc", "mmlu", "ceval", "mc", "gsm8k", "arc_dev")}
    for i in range(RECORDS):
        ctx_b = sentence(rng, 3)
        out["hellaswag"].append({
            "ind": i, "activity_label": sentence(rng, 2).title(),
            "ctx_a": sentence(rng, 6) + (" [title] " + sentence(rng, 2) if i % 3 == 0 else ""),
            "ctx_b": ctx_b.upper() if i % 4 == 0 else ctx_b,
            "endings": [sentence(rng, rng.randint(2, 7)) + (" [header] x" if i % 5 == j else "") for j in range(4)],
            "label": str(rng.randrange(4)), "source_id": f"synthetic~{i}", "split": "val"})
        n = rng.choice([3, 4, 5])
        labels = ["A", "B", "C", "D", "E"][:n] if i % 2 else ["1", "2", "3", "4", "5"][:n]
        out["arc"].append({"id": f"arc_{i}", "question": sentence(rng, 7) + "?",
                           "choices": {"text": [sentence(rng, rng.randint(1, 4)) for _ in range(n)], "label": labels},
                           "answerKey": rng.choice(labels)})
        out["mmlu"].append({"question": "  " + sentence(rng, 8) + "? ", "subject": rng.choice(SUBJECTS),
                            "choices": [sentence(rng, rng.randint(1, 3)) for _ in range(4)], "answer": rng.randrange(4)})
        out["ceval"].append({"id": i, "question": hanzi(rng, 12) + "？", "A": hanzi(rng, 3), "B": hanzi(rng, 4),
                             "C": hanzi(rng, 2), "D": hanzi(rng, 5), "answer": rng.choice("ABCD"),
                             "explanation": ""})
        k = rng.randint(2, 5)
        out["mc"].append({"context": sentence(rng, 6) + (" " if i % 2 else ":"),
                          "choices": [sentence(rng, rng.randint(1, 5)) for _ in range(k)], "gold": rng.randrange(k)})
    for i in range(10):
        out["arc_dev"].append({"id": f"dev_{i}", "question": sentence(rng, 5) + "?",
                               "choices": {"text": [sentence(rng, 2) for _ in range(4)], "label": ["A", "B", "C", "D"]},
                               "answerKey": rng.choice("ABCD")})
    for i in range(8):
        a, b = (1200, 34) if i == 0 else (rng.randint(2, 60), rng.randint(2, 60))
        out["gsm8k"].append({"question": f"the {rng.choice(WORDS)} has {a} and {b} more. how many?",
                             "answer": f"{a} + {b} = {a + b}\n#### {a + b:,}"})
    return out


# ---- lm-eval's prompts (its task YAMLs), written from their documentation --------------------------------

def hellaswag_preprocess(text: str) -> str:  # lm_eval/tasks/hellaswag/utils.py
    text = text.strip()
    text = text.replace(" [title]", ". ")
    text = re.sub("\\[.*?\\]", "", text)
    text = text.replace("  ", " ")
    return text


def doc(layout: str, d: dict) -> dict:
    """description, query, choices, gold, delimiter of one record."""
    letters = ["A", "B", "C", "D"]
    if layout == "hellaswag":
        ctx = d["ctx_a"] + " " + d["ctx_b"].capitalize()
        return {"description": "", "query": hellaswag_preprocess(d["activity_label"] + ": " + ctx),
                "choices": [hellaswag_preprocess(e) for e in d["endings"]], "gold": int(d["label"]), "delimiter": " "}
    if layout == "arc":
        return {"description": "", "query": f"Question: {d['question']}\nAnswer:", "choices": d["choices"]["text"],
                "gold": d["choices"]["label"].index(d["answerKey"]), "delimiter": " "}
    if layout == "mmlu":
        c = d["choices"]
        subject = " ".join(d["subject"].split("_"))
        return {"description": f"The following are multiple choice questions (with answers) about {subject}.\n\n",
                "query": f"{d['question'].strip()}\nA. {c[0]}\nB. {c[1]}\nC. {c[2]}\nD. {c[3]}\nAnswer:",
                "choices": letters, "gold": d["answer"], "delimiter": " "}
    if layout == "ceval":
        return {"description": "", "query": f"{d['question'].strip()}\nA. {d['A']}\nB. {d['B']}\nC. {d['C']}\nD. {d['D']}\n答案：",
                "choices": letters, "gold": letters.index(d["answer"]), "delimiter": " "}
    if layout == "mc":
        return {"description": "", "query": d["context"], "choices": d["choices"], "gold": d["gold"], "delimiter": ""}
    if layout == "gsm8k":
        return {"description": "", "query": f"Question: {d['question']}\nAnswer:", "target": d["answer"], "delimiter": " "}
    raise ValueError(layout)


def splitmix_fewshot(seed: int, index: int, pool: int, count: int) -> list[int]:
    """The C++ fewshot_indices: Fisher-Yates by splitmix64 seeded with seed + index * golden."""
    state = (seed + index * 0x9E3779B97F4A7C15) & MASK
    order = list(range(pool))
    for k in range(count):
        state = (state + 0x9E3779B97F4A7C15) & MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        z ^= z >> 31
        j = k + z % (pool - k)
        order[k], order[j] = order[j], order[k]
    return order[:count]


def context_of(rec: dict, shots: list[dict]) -> str:
    text = rec["description"]
    for s in shots:
        answer = s["choices"][s["gold"]] if "choices" in s else s["target"]
        text += s["query"] + s["delimiter"] + answer + "\n\n"
    return text + rec["query"]


# ---- the oracle -------------------------------------------------------------------------------------------

class Chars:
    def __init__(self, texts: list[str]):
        self.points = sorted({ord(ch) for t in texts for ch in t})
        self.ids = {p: i for i, p in enumerate(self.points)}

    def encode(self, text: str) -> list[int]:
        return [self.ids[ord(ch)] for ch in text]

    def decode(self, ids: list[int]) -> str:
        return "".join(chr(self.points[i]) for i in ids)


def encode_pair(tok: Chars, context: str, continuation: str) -> tuple[list[int], list[int]]:
    """lm_eval.models.huggingface.HFLM._encode_pair."""
    n_spaces = len(context) - len(context.rstrip())
    if n_spaces > 0:
        continuation = context[-n_spaces:] + continuation
        context = context[:-n_spaces]
    whole = tok.encode(context + continuation)
    context_enc = tok.encode(context)
    return context_enc, whole[len(context_enc):]


def loglikelihood(model, context_enc: list[int], continuation_enc: list[int]) -> float:
    inp = torch.tensor([(context_enc + continuation_enc)[:-1]])
    with torch.no_grad():
        logits = model(inp).logits[0].double()
    logp = torch.log_softmax(logits, dim=-1)[len(context_enc) - 1:]
    return float(sum(logp[t, c] for t, c in enumerate(continuation_enc)))


def score(model, tok: Chars, recs: list[dict], pool: list[dict] | None) -> dict:
    rows, acc, acc_norm = [], 0, 0
    for i, r in enumerate(recs):
        shots = [pool[k] for k in splitmix_fewshot(FEWSHOT_SEED, i, len(pool), FEWSHOT)] if pool else []
        context = context_of(r, shots)
        lls = [loglikelihood(model, *encode_pair(tok, context, r["delimiter"] + c)) for c in r["choices"]]
        lengths = [len(c.encode("utf-8")) for c in r["choices"]]
        pred = max(range(len(lls)), key=lambda k: (lls[k], -k))
        pred_norm = max(range(len(lls)), key=lambda k: (lls[k] / lengths[k], -k))
        acc += pred == r["gold"]
        acc_norm += pred_norm == r["gold"]
        rows.append({"gold": r["gold"], "logprobs": lls})
    return {"acc": acc / len(recs), "acc_norm": acc_norm / len(recs), "records": rows}


def generate(model, tok: Chars, recs: list[dict], stop: list[str], max_new: int, pool: list[dict] | None = None,
             shots: int = 0) -> list[str]:
    out = []
    for i, r in enumerate(recs):
        shown = [pool[k] for k in splitmix_fewshot(FEWSHOT_SEED, i, len(pool), shots)] if pool else []
        ids = torch.tensor([tok.encode(context_of(r, shown))])
        with torch.no_grad():
            new = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_new, do_sample=False,
                                 eos_token_id=None, pad_token_id=0)  # the mask, else id 0 ("\n") is taken for padding
        text = tok.decode(new[0, ids.shape[1]:].tolist())
        cuts = [text.find(s) for s in stop if s in text]
        out.append(text[:min(cuts)] if cuts else text)
    return out


BPE_PAIRS = [("Question: what is it?\nAnswer:", " the dog"), ("The cat ", "sat"), ("The cat  \n", "sat on"),
             ("Ans", "wer: yes"), ("ques", "tion"), ("the d", "og runs")]


def bpe_encode_pairs(path: Path) -> list[dict]:
    """_encode_pair with a byte-level BPE (tests/fixtures/tokenizer/hf_gpt2.json, read by HF tokenizers), where
    moving the context's trailing spaces and merges across the boundary change the ids."""
    from tokenizers import Tokenizer
    bpe = Tokenizer.from_file(str(path))

    class Bpe:
        def encode(self, text: str) -> list[int]:
            return bpe.encode(text, add_special_tokens=False).ids
    return [{"context": c, "continuation": k, "context_ids": ids[0], "continuation_ids": ids[1]}
            for c, k in BPE_PAIRS for ids in [encode_pair(Bpe(), c, k)]]


def normalise(text: str) -> str:
    """lm-eval gsm8k's exact_match regexes_to_ignore: ",", "\\$", a trailing "\\."; and white space."""
    text = re.sub(",|\\$", "", text.strip())
    return re.sub("\\.$", "", text)


def lm_eval_extract(text: str) -> str | None:
    """lm-eval gsm8k's filters: strict "#### (\\-?[0-9\\.\\,]+)", else flexible
    "(-?[$0-9.,]{2,})|(-?[0-9]+)" (the last match), normalised."""
    strict = re.findall(r"#### (\-?[0-9\.\,]+)", text)
    if strict:
        return normalise(strict[0])
    flexible = re.findall(r"(-?[$0-9.,]{2,})|(-?[0-9]+)", text)
    return normalise([g for g in flexible[-1] if g][0]) if flexible else None


def main(out: Path) -> None:
    logging.getLogger("transformers").setLevel(logging.ERROR)
    torch.set_num_threads(1)
    raw = make_records(random.Random(24))
    out.mkdir(parents=True, exist_ok=True)
    for name, rows in raw.items():
        (out / f"{name}.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    recs = {name: [doc("arc" if name == "arc_dev" else name, d) for d in rows] for name, rows in raw.items()}
    texts = [r["description"] + r["query"] + r["delimiter"] + "\n" + "".join(r.get("choices", [])) + r.get("target", "")
             for rs in recs.values() for r in rs]
    tok = Chars(texts + ["0123456789#"])
    (out / "chars.json").write_text(json.dumps({"type": "nanoformer-char", "version": 1, "code_points": tok.points}))

    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(
        vocab_size=len(tok.points), hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=512, rms_norm_eps=1e-5, tie_word_embeddings=False,
        bos_token_id=None, eos_token_id=None, pad_token_id=None)).eval()
    gen = torch.Generator().manual_seed(11)
    with torch.no_grad():  # unit-scale weights, so that the choices' log-probs differ (as tools/golden/hf_fixtures.py)
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen)
            p.copy_(1 + 0.1 * noise if "norm" in name and p.dim() == 1 else 0.15 * noise)
    model.save_pretrained(out / "llama_char")

    expected = {layout: score(model, tok, recs[layout], None) for layout in ("hellaswag", "arc", "mmlu", "ceval", "mc")}
    expected["arc_fewshot"] = {"fewshot": FEWSHOT, "seed": FEWSHOT_SEED,
                               **score(model, tok, recs["arc"], recs["arc_dev"])}
    max_new = 24  # a stop string the first generation reaches (characters 8 and 9 of its uncut text), and lm-eval's
    stop = [generate(model, tok, recs["gsm8k"][:1], [], max_new)[0][8:10], "Question:"]
    generated = generate(model, tok, recs["gsm8k"], stop, max_new)
    # the odd records' reference becomes what lm-eval's filters extract from their generation (the prompt holds
    # only the question, so the generation does not change), so that exact match is 1 on them
    for i in range(1, len(generated), 2):
        found = lm_eval_extract(generated[i])
        if found is not None:
            raw["gsm8k"][i]["answer"] = f"the model says {found}\n#### {found}"
    (out / "gsm8k.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in raw["gsm8k"]))
    golds = [normalise(r["answer"].split("####")[-1]) for r in raw["gsm8k"]]
    matches = [int(lm_eval_extract(g) == gold) for g, gold in zip(generated, golds)]
    expected["gsm8k"] = {"stop": stop, "max_new_tokens": max_new, "generated": generated, "exact_match": matches}
    # 1-shot from the same file (a shot shows its whole answer, "#### N" included), seed 7
    gsm8k = [doc("gsm8k", d) for d in raw["gsm8k"]]
    expected["gsm8k_fewshot"] = {"fewshot": 1, "seed": FEWSHOT_SEED,
                                 "generated": generate(model, tok, gsm8k, stop, max_new, gsm8k, 1)}
    expected["bpe_encode_pair"] = bpe_encode_pairs(out.parent / "tokenizer" / "hf_gpt2.json")
    (out / "expected.json").write_text(json.dumps(expected, indent=1, ensure_ascii=False) + "\n")
    for layout in ("hellaswag", "arc", "mmlu", "ceval", "mc", "arc_fewshot"):
        print(f"{layout}: acc {expected[layout]['acc']:.3f} acc_norm {expected[layout]['acc_norm']:.3f}")
    print("gsm8k:", expected["gsm8k"]["generated"])
    print("gsm8k 1-shot:", expected["gsm8k_fewshot"]["generated"])


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("tests/fixtures/eval"))
