#!/usr/bin/env python3
"""Golden ids and loss masks of MiniMind2's ChatML chat template, from Hugging Face transformers.

Writes into tests/fixtures/tokenizer:
  chat_minimind.jsonl   two conversations in MiniMind's SFT format ({"conversations": [...]})
  chat_minimind.golden  for each conversation, two lines: the ids `apply_chat_template(conv,
                        tokenize=True)` gives with MiniMind2's template over hf_gpt2.json (which has
                        MiniMind's special tokens <|endoftext|>, <|im_start|>, <|im_end|>), and the
                        loss mask of MiniMind's SFTDataset._generate_loss_mask over those ids (0/1 per id)

MiniMind2's chat template exists in two forms: the one its train_tokenizer.py writes (TEMPLATE_TRAIN)
and the Qwen-style one of its repository's model/tokenizer_config.json (TEMPLATE_REPO, with tools and
thinking branches). The script checks that both render the conversations identically.
tests/tokenizer/test_chat_template.cpp checks that nanoformer's "chatml" template and its SFT
loader produce exactly these ids and masks.

Usage: .venv/bin/python tools/tokenizer/chat_template_golden.py [tests/fixtures/tokenizer]
(needs transformers; re-running gives byte-identical files).
"""
import json
import os
import sys

from transformers import PreTrainedTokenizerFast

TEMPLATE_TRAIN = (
    "{% if messages[0]['role'] == 'system' %}{% set system_message = messages[0]['content'] %}"
    "{{ '<|im_start|>system\\n' + system_message + '<|im_end|>\\n' }}"
    "{% else %}{{ '<|im_start|>system\\nYou are a helpful assistant<|im_end|>\\n' }}{% endif %}"
    "{% for message in messages %}{% set content = message['content'] %}"
    "{% if message['role'] == 'user' %}{{ '<|im_start|>user\\n' + content + '<|im_end|>\\n<|im_start|>assistant\\n' }}"
    "{% elif message['role'] == 'assistant' %}{{ content + '<|im_end|>' + '\\n' }}{% endif %}{% endfor %}"
)

TEMPLATE_REPO = (
    "{%- if tools %}\n    {{- '<|im_start|>system\\n' }}\n    {%- if messages[0].role == 'system' %}\n"
    "        {{- messages[0].content + '\\n\\n' }}\n    {%- endif %}\n    {{- \"# Tools\" }}\n"
    "{%- else %}\n {%- if messages[0]['role'] == 'system' -%}\n"
    "        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}\n    {%- else -%}\n"
    "        {{- '<|im_start|>system\\nYou are a helpful assistant<|im_end|>\\n' }}\n {%- endif %}\n{%- endif %}\n"
    "{%- for message in messages %}\n    {%- if message.content is string %}\n"
    "        {%- set content = message.content %}\n    {%- else %}\n        {%- set content = '' %}\n    {%- endif %}\n"
    "    {%- if (message.role == \"user\") or (message.role == \"system\" and not loop.first) %}\n"
    "        {{- '<|im_start|>' + message.role + '\\n' + content + '<|im_end|>' + '\\n' }}\n"
    "    {%- elif message.role == \"assistant\" %}\n   {{- '<|im_start|>' + message.role + '\\n' + content }}\n"
    "        {{- '<|im_end|>\\n' }}\n    {%- endif %}\n{%- endfor %}\n"
    "{%- if add_generation_prompt %}\n    {{- '<|im_start|>assistant\\n' }}\n{%- endif %}"
)

CONVERSATIONS = [
    [
        {"role": "user", "content": "Hello! How's the cat today?"},
        {"role": "assistant", "content": "The cat is asleep,  as usual.\n机器学习"},
    ],
    [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Add 12 and 30."},
        {"role": "assistant", "content": "42"},
        {"role": "user", "content": "  And then times two?\n"},
        {"role": "assistant", "content": "\n84, of course."},
    ],
]


def minimind_loss_mask(input_ids, bos_id, eos_id, max_length):
    """MiniMind's SFTDataset._generate_loss_mask (dataset/lm_dataset.py), step for step."""
    loss_mask = [0] * len(input_ids)
    i = 0
    while i < len(input_ids):
        if input_ids[i:i + len(bos_id)] == bos_id:
            start = i + len(bos_id)
            end = start
            while end < len(input_ids):
                if input_ids[end:end + len(eos_id)] == eos_id:
                    break
                end += 1
            for j in range(start + 1, min(end + len(eos_id) + 1, max_length)):
                loss_mask[j] = 1
            i = end + len(eos_id) if end < len(input_ids) else len(input_ids)
        else:
            i += 1
    return loss_mask


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "../../tests/fixtures/tokenizer")
    tok = PreTrainedTokenizerFast(tokenizer_file=os.path.join(out, "hf_gpt2.json"))
    bos_id = tok("<|im_start|>assistant", add_special_tokens=False).input_ids  # MiniMind: bos_token + "assistant"
    eos_id = tok("<|im_end|>", add_special_tokens=False).input_ids
    with open(os.path.join(out, "chat_minimind.jsonl"), "w", encoding="utf-8", newline="\n") as jsonl, \
            open(os.path.join(out, "chat_minimind.golden"), "w", encoding="utf-8", newline="\n") as golden:
        for conversation in CONVERSATIONS:
            rendered = []
            for template in (TEMPLATE_TRAIN, TEMPLATE_REPO):
                tok.chat_template = template
                rendered.append(tok.apply_chat_template(conversation, tokenize=True)["input_ids"])
            assert rendered[0] == rendered[1], "the two forms of MiniMind2's template disagree"
            ids = rendered[0]
            mask = minimind_loss_mask(ids, bos_id, eos_id, len(ids))
            jsonl.write(json.dumps({"conversations": conversation}, ensure_ascii=False) + "\n")
            golden.write(" ".join(map(str, ids)) + "\n" + " ".join(map(str, mask)) + "\n")
    print(f"wrote chat_minimind.jsonl and chat_minimind.golden to {out}")


if __name__ == "__main__":
    main()
