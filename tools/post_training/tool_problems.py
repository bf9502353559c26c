#!/usr/bin/env python3
"""Word problems whose numbers are too large for a small model's head, for the tool-use pipeline
(tools/post_training/tool_pipeline.sh): the answer is a product of a 2-3 digit and a 2 digit number,
or a sum of two 3-4 digit numbers, which a calculator computes when the model calls it.

  python3 tools/post_training/tool_problems.py OUT_DIR [--seed 1] [--train 3000] [--test 200] \
      [--syntax nanochat|hermes]

Standard library only. A problem and its demonstration (nanochat's tool syntax, karpathy/nanochat
@92d63d4 engine.py: the expression between <|python_start|> and <|python_end|>, the result between
<|output_start|> and <|output_end|>, then GSM8K's `#### N`):
  "A shop packs 347 boxes of 58 pens. How many pens does it pack?"
  -> "<|python_start|>347*58<|python_end|><|output_start|>20126<|output_end|> #### 20126"
Writes to OUT_DIR (held-out questions never appear in a training file):
  sft.jsonl        conversations ({"conversations": user question, assistant demonstration})
  grpo.jsonl       GSM8K layout ({"question", "answer"}) prompts of the training problems
  test.jsonl       held-out problems, GSM8K layout, for `nanoformer eval --layout gsm8k [--tools calculator]`
  corpus.txt       the training text, to train the tokenizer on
  tokenizer_config.json  the chat template: a user turn "Question: {content}\\nAnswer:", an assistant
                   turn " {content}<|endoftext|>"
With --syntax hermes the calls are a chat-template model's (Hermes <tool_call>s, answered as tool
messages; infer/hermes_tools.h), in conversations as MiniMind's agent data has them: the calculator
offered (a system turn "tools: calculator", as the template renders the tools it is given), the
call, the tool's answer and the final "#### N". tokenizer_config.json is then a compact ChatML whose
system turn lists the tools offered:
  <|im_start|>system\ntools: calculator<|im_end|>\n<|im_start|>user\n{question}<|im_end|>\n
  <|im_start|>assistant\n<tool_call>{"name": "calculator", "arguments": {"expression": "347*58"}}</tool_call><|im_end|>\n
  <|im_start|>tool\n20126<|im_end|>\n<|im_start|>assistant\n#### 20126<|im_end|>\n
"""
import argparse
import json
import os
import random

from word_problems import write_chat_template, write_jsonl  # the same files, the same template

SHOPS = ["A shop", "A farm", "A school", "A factory", "A library", "A bakery", "A market", "A port"]
# (verb, container, object): "{shop} {verb} {a} {container} of {b} {object}."
PRODUCTS = [("packs", "boxes", "pens"), ("plants", "rows", "trees"), ("orders", "crates", "apples"),
            ("fills", "shelves", "books"), ("bakes", "trays", "rolls"), ("loads", "trucks", "sacks")]
# (first, second): "{shop} has {a} {object}. It gets {b} more."
SUMS = [("cups", "buys"), ("chairs", "receives"), ("stamps", "collects"), ("coins", "earns")]

START, END, OUT_START, OUT_END = "<|python_start|>", "<|python_end|>", "<|output_start|>", "<|output_end|>"


def make_problem(rng):
    shop = rng.choice(SHOPS)
    if rng.random() < 0.7:
        verb, container, obj = rng.choice(PRODUCTS)
        a, b = rng.randint(12, 999), rng.randint(12, 99)
        question = f"{shop} {verb} {a} {container} of {b} {obj}. How many {obj} does it {verb.rstrip('s')}?"
        return {"question": question, "expression": f"{a}*{b}", "answer": a * b}
    obj, verb = rng.choice(SUMS)
    a, b = rng.randint(100, 9999), rng.randint(100, 9999)
    question = f"{shop} has {a} {obj}. It {verb} {b} more. How many {obj} does it have now?"
    return {"question": question, "expression": f"{a}+{b}", "answer": a + b}


def demonstration(problem):
    return (f"{START}{problem['expression']}{END}{OUT_START}{problem['answer']}{OUT_END} "
            f"#### {problem['answer']}")


# A compact ChatML whose system turn names the tools offered (Qwen2.5's lists their schemas).
HERMES_TEMPLATE = ("{%- if tools %}<|im_start|>system\ntools:{% for t in tools %} {{ t.function.name }}{% endfor %}"
                   "<|im_end|>\n{% endif %}{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n"
                   "{% endfor %}{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def hermes_conversation(problem):
    """The problem with the calculator offered, called and answering."""
    call = json.dumps({"name": "calculator", "arguments": {"expression": problem["expression"]}})
    return [{"role": "system", "content": "tools: calculator"}, {"role": "user", "content": problem["question"]},
            {"role": "assistant", "content": f"<tool_call>{call}</tool_call>"},
            {"role": "tool", "content": str(problem["answer"])},
            {"role": "assistant", "content": f"#### {problem['answer']}"}]


def render(conversation):
    return "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in conversation)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--train", type=int, default=3000)
    p.add_argument("--test", type=int, default=200)
    p.add_argument("--syntax", choices=["nanochat", "hermes"], default="nanochat")
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
    if a.syntax == "hermes":
        write_jsonl(os.path.join(a.out, "sft.jsonl"), [{"conversations": hermes_conversation(q)} for q in train])
    else:
        write_jsonl(os.path.join(a.out, "sft.jsonl"),
                    [{"conversations": [{"role": "user", "content": q["question"]},
                                        {"role": "assistant", "content": demonstration(q)}]} for q in train])
    write_jsonl(os.path.join(a.out, "grpo.jsonl"),
                [{"question": q["question"], "answer": f"#### {q['answer']}"} for q in train])
    write_jsonl(os.path.join(a.out, "test.jsonl"),
                [{"question": q["question"], "answer": f"#### {q['answer']}"} for q in test])
    with open(os.path.join(a.out, "corpus.txt"), "w") as f:
        for q in train:
            if a.syntax == "hermes":
                f.write(render(hermes_conversation(q)))
            else:
                f.write(f"Question: {q['question']}\nAnswer: {demonstration(q)}\n")
    if a.syntax == "hermes":
        with open(os.path.join(a.out, "tokenizer_config.json"), "w") as f:
            json.dump({"chat_template": HERMES_TEMPLATE, "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}, f)
    else:
        write_chat_template(a.out)
    example = render(hermes_conversation(train[0])) if a.syntax == "hermes" else demonstration(train[0])
    print(f"tool problems ({a.syntax}): {len(train)} training, {len(test)} held out, in {a.out}; e.g. "
          f"{train[0]['question']!r} -> {example!r}")


if __name__ == "__main__":
    main()
