#!/usr/bin/env python3
"""Multi-step arithmetic word problems for the post-training pipeline (tools/post_training/pipeline.sh).

  python3 tools/post_training/word_problems.py OUT_DIR [--seed 1] [--train 3000] [--test 200]

Standard library only. A problem: a person starts with A objects, then 2 or 3 events each add or
take away a number (1-9, never below 0), and the question asks how many are left:
  "Tom has 3 apples. He buys 4 more. He gives away 2. How many apples does Tom have now?"
answered step by step as "3+4=7, 7-2=5 #### 5" (GSM8K's `#### N` convention).
Writes to OUT_DIR (test problems never appear in any training file, their questions compared whole):
  pretrain.jsonl   documents ({"text"}): the training problems told as stories, plus sums and differences
  sft.jsonl        conversations ({"conversations": user question, assistant answer}) of the training problems,
                   from a sloppy teacher with one habit: in a share of its answers (--sft-errors, default 0.6)
                   the last step's result is one too many (and the final answer with it), so SFT learns the
                   format and the arithmetic but also the habit, which the preference pairs and the
                   verifier's reward then have to remove
  dpo.jsonl        MiniMind DPO pairs: chosen the right answer, rejected its last step off by 1 or 2
  grpo.jsonl       GSM8K layout ({"question", "answer"}) prompts of the training problems, for --objective grpo
  test.jsonl       held-out problems, GSM8K layout, for `nanoformer eval --layout gsm8k`
  preference.jsonl held-out pairs in the `mc` layout (context "Question: ...\\nAnswer:", choices
                   [" chosen", " rejected"], gold 0): eval's acc = share ranked chosen over rejected
  corpus.txt       the training text as the model sees it, to train the tokenizer on
  tokenizer_config.json  the chat template conversations are rendered with, beside the tokenizer: a user
                   turn is "Question: {content}\\nAnswer:" (the eval harness's and GRPO's prompt), an
                   assistant turn " {content}<|endoftext|>" (trained: the reply and its end token)
"""
import argparse
import json
import os
import random

NAMES = ["Tom", "Ann", "Sam", "Mia", "Ben", "Eva", "Max", "Zoe", "Leo", "Ivy"]
OBJECTS = ["apples", "pens", "cards", "coins", "books", "cups", "shells", "stamps"]
# (sentence template, sign): the number of objects changes by sign * n
EVENTS = [("buys {n} more", 1), ("finds {n} more", 1), ("gets {n} more", 1),
          ("gives away {n}", -1), ("loses {n}", -1), ("eats {n}", -1)]


def make_problem(rng):
    name, obj = rng.choice(NAMES), rng.choice(OBJECTS)
    total = rng.randint(1, 9)
    start = total
    sentences, steps = [], []
    for _ in range(rng.randint(2, 3)):
        text, sign = rng.choice([e for e in EVENTS if e[1] > 0 or total >= 1])
        n = rng.randint(1, 9) if sign > 0 else rng.randint(1, min(9, total))
        after = total + sign * n
        sentences.append("He " + text.format(n=n) if name in ("Tom", "Sam", "Ben", "Max", "Leo")
                         else "She " + text.format(n=n))
        steps.append((total, "+" if sign > 0 else "-", n, after))
        total = after
    question = f"{name} has {start} {obj}. " + ". ".join(sentences) + f". How many {obj} does {name} have now?"
    return {"name": name, "object": obj, "start": start, "steps": steps, "question": question, "answer": total}


def chain(steps):
    return ", ".join(f"{a}{op}{n}={r}" for a, op, n, r in steps)


def answer_text(problem):
    return f"{chain(problem['steps'])} #### {problem['answer']}"


def wrong_answer_text(problem, rng):
    """The last step's result off by 1 or 2 (never negative, never right), the final answer with it."""
    *first, (a, op, n, r) = problem["steps"]
    wrong = max(0, r + rng.choice([-2, -1, 1, 2]))
    if wrong == r:
        wrong += 1
    return f"{chain(first + [(a, op, n, wrong)])} #### {wrong}"


def sloppy_answer_text(problem):
    """The sloppy teacher's habit: the last step's result one too many, the final answer with it."""
    *first, (a, op, n, r) = problem["steps"]
    return f"{chain(first + [(a, op, n, r + 1)])} #### {r + 1}"


def story(problem):
    pronoun = "He" if problem["question"].split(". ")[1].startswith("He") else "She"
    name, obj = problem["name"], problem["object"]
    parts = [f"{name} has {problem['start']} {obj}."]
    for (a, op, n, r), sentence in zip(problem["steps"], problem["question"].split(". ")[1:]):
        parts.append(f"{sentence}, so {pronoun.lower()} has {r} {obj}.")
    return " ".join(parts)


def write_jsonl(path, records):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
    os.replace(tmp, path)


def write_chat_template(out):
    """OUT/tokenizer_config.json: a user turn "Question: {content}\\nAnswer:", an assistant turn
    " {content}<|endoftext|>" (the eval harness's and GRPO's prompt, then the reply and its end)."""
    template = ("{% for message in messages %}{% if message['role'] == 'user' %}"
                "{{ 'Question: ' + message['content'] + '\\nAnswer:' }}{% elif message['role'] == 'assistant' %}"
                "{{ ' ' + message['content'] + eos_token }}{% endif %}{% endfor %}")
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump({"chat_template": template, "eos_token": "<|endoftext|>"}, f)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--train", type=int, default=3000)
    p.add_argument("--test", type=int, default=200)
    p.add_argument("--sft-errors", type=float, default=0.6, help="share of SFT answers whose last step is one too many")
    a = p.parse_args()
    rng = random.Random(a.seed)
    seen, train, test = set(), [], []
    while len(train) + len(test) < a.train + a.test:
        problem = make_problem(rng)
        if problem["question"] in seen:
            continue
        seen.add(problem["question"])
        (test if len(test) < a.test else train).append(problem)
    os.makedirs(a.out, exist_ok=True)

    documents = [{"text": story(q)} for q in train]
    for _ in range(len(train)):
        x, y = rng.randint(0, 18), rng.randint(1, 9)
        documents.append({"text": f"{x}+{y}={x + y}, {x + y}-{y}={x}"})
    rng.shuffle(documents)
    write_jsonl(os.path.join(a.out, "pretrain.jsonl"), documents)

    def user(q):
        return {"role": "user", "content": q["question"]}

    def demonstration(q):
        return sloppy_answer_text(q) if rng.random() < a.sft_errors else answer_text(q)

    write_jsonl(os.path.join(a.out, "sft.jsonl"),
                [{"conversations": [user(q), {"role": "assistant", "content": demonstration(q)}]} for q in train])
    write_jsonl(os.path.join(a.out, "dpo.jsonl"),
                [{"chosen": [user(q), {"role": "assistant", "content": answer_text(q)}],
                  "rejected": [user(q), {"role": "assistant", "content": wrong_answer_text(q, rng)}]} for q in train])
    write_jsonl(os.path.join(a.out, "grpo.jsonl"), [{"question": q["question"], "answer": answer_text(q)} for q in train])
    write_jsonl(os.path.join(a.out, "test.jsonl"), [{"question": q["question"], "answer": answer_text(q)} for q in test])
    write_jsonl(os.path.join(a.out, "preference.jsonl"),
                [{"context": f"Question: {q['question']}\nAnswer:",
                  "choices": [" " + answer_text(q), " " + wrong_answer_text(q, rng)], "gold": 0} for q in test])
    with open(os.path.join(a.out, "corpus.txt"), "w") as f:
        for d in documents:
            f.write(d["text"] + "\n")
        for q in train:
            f.write(f"Question: {q['question']}\nAnswer: {answer_text(q)}\n")
    write_chat_template(a.out)
    print(f"word problems: {len(train)} training, {len(test)} held out, in {a.out}; e.g. "
          f"{train[0]['question']!r} -> {answer_text(train[0])!r}")


if __name__ == "__main__":
    main()
