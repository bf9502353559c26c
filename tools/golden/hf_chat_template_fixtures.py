#!/usr/bin/env python3
"""Golden renderings of Hugging Face chat templates (Jinja), from transformers' apply_chat_template.

Writes tests/fixtures/tokenizer/hf_chat_templates.json: for each template below, its source, its
text, the special tokens it is rendered with, and for each conversation (system / user / assistant,
1 to 4 turns) with and without the generation prompt, the text
`apply_chat_template(messages, tokenize=False, add_generation_prompt=...)` gives (and for the
templates with tools, conversations with tool calls and results, rendered with tools=..., with the
generation prompt and, as SFT renders them, without: sft_tool_cases, with their ids) and, for the
templates whose special tokens hf_gpt2.json has (<|endoftext|>, <|im_start|>, <|im_end|>), the ids
of `apply_chat_template(..., tokenize=True)` over that tokenizer. tests/tokenizer/
test_hf_chat_template.cpp checks nanoformer's Jinja interpreter and HfChatTemplate against them.

The templates are committed under tools/golden/chat_templates/, copied from public repositories
(no network is needed, none is used):
  MiniMind-d65ef2c.jinja           jingyaogong/minimind@d65ef2c00ebc6082f9df11541e1b191655eddb00
                                   model/tokenizer_config.json "chat_template"
  Qwen2.5-7B-Instruct.jinja        ggerganov/llama.cpp@eaca756ecca033e6fdd241dad091974a2c0354ff
                                   tests/chat/templates/Qwen-Qwen2.5-7B-Instruct.jinja (Qwen/Qwen2.5-7B-Instruct's)
  Qwen3-0.6B.jinja                 ggml-org/llama.cpp models/templates/Qwen-Qwen3-0.6B.jinja, as stored at
                                   ye-NX/llama.cpp@b354d7c9ecb76c97c07098617cdebbdfffa2583e (CRLF line ends
                                   made LF, as in Qwen/Qwen3-0.6B's tokenizer_config.json)
  SmolLM2-135M-Instruct.jinja      HuggingFaceTB/SmolLM2-135M-Instruct tokenizer_config.json "chat_template"
                                   (its GGUF's tokenizer.chat_template, quoted verbatim by public tests)
  Llama-3.3-70B-Instruct.jinja     ggerganov/llama.cpp@a4b2d1d0d415e6c15a4ce2010f045d92dbd97a0e
                                   tests/chat/templates/meta-llama-Llama-3.3-70B-Instruct.jinja (text only)

Usage: /work/venv-eval/bin/python tools/golden/hf_chat_template_fixtures.py [tests/fixtures/tokenizer]
(needs transformers; re-running gives a byte-identical file).
"""
import json
import os
import sys

import transformers
from transformers import PreTrainedTokenizerFast

HERE = os.path.dirname(os.path.abspath(__file__))

TEMPLATES = [
    # name, file, source, special tokens (as the model's tokenizer_config.json has them), tokenize
    ("minimind", "MiniMind-d65ef2c.jinja",
     "jingyaogong/minimind@d65ef2c00ebc6082f9df11541e1b191655eddb00 model/tokenizer_config.json",
     {"bos_token": "<|im_start|>", "eos_token": "<|im_end|>", "unk_token": "<|endoftext|>", "pad_token": "<|endoftext|>"},
     True),
    ("qwen2.5", "Qwen2.5-7B-Instruct.jinja",
     "ggerganov/llama.cpp@eaca756ecca033e6fdd241dad091974a2c0354ff tests/chat/templates/Qwen-Qwen2.5-7B-Instruct.jinja",
     {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}, True),
    ("qwen3", "Qwen3-0.6B.jinja",
     "ye-NX/llama.cpp@b354d7c9ecb76c97c07098617cdebbdfffa2583e models/templates/Qwen-Qwen3-0.6B.jinja",
     {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}, True),
    ("smollm2", "SmolLM2-135M-Instruct.jinja", "HuggingFaceTB/SmolLM2-135M-Instruct tokenizer_config.json",
     {"bos_token": "<|im_start|>", "eos_token": "<|im_end|>", "unk_token": "<|endoftext|>", "pad_token": "<|im_end|>"},
     True),
    ("llama3.3", "Llama-3.3-70B-Instruct.jinja",
     "ggerganov/llama.cpp@a4b2d1d0d415e6c15a4ce2010f045d92dbd97a0e tests/chat/templates/meta-llama-Llama-3.3-70B-Instruct.jinja",
     {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}, False),
]

S = {"role": "system", "content": "You are terse.  Answer in one line."}
CONVERSATIONS = [
    [{"role": "user", "content": "Hello! How's the cat today?"}],
    [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello, 机器学习 friend.\n"}],
    [S, {"role": "user", "content": "Add 12 and 30."}],
    [S, {"role": "user", "content": "Add 12 and 30."}, {"role": "assistant", "content": "42"}],
    [S, {"role": "user", "content": "Add 12 and 30."}, {"role": "assistant", "content": "42"},
     {"role": "user", "content": "  And then times two?\n"}],
    [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"},
     {"role": "assistant", "content": "\n d "}],
    [{"role": "user", "content": "Think first."},
     {"role": "assistant", "content": "<think>\nLet me see.\n</think>\n\nDone."},
     {"role": "user", "content": "Again?"}],
    [S, {"role": "user", "content": "q1"}, {"role": "assistant", "content": "<think>\nr1\n</think>\n\na1"},
     {"role": "user", "content": "q2"}, {"role": "assistant", "content": "a2 with \"quotes\" and \\ slashes"}],
]

# Conversations with tools, rendered with the generation prompt and apply_chat_template(tools=TOOLS):
# an assistant's calls as transformers documents them (arguments objects; content "" where OpenAI's
# is null, as the server passes it: Qwen3's template fails on None), and their results as role
# "tool" messages with their tool_call_id.
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "The weather of a city.",
                                           "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                                                                                           "days": {"type": "integer"}},
                                                          "required": ["city"]}}},
         {"type": "function", "function": {"name": "now", "description": "The time.", "parameters": {"type": "object"}}}]
CALL = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}}
TOOL_CONVERSATIONS = [
    [{"role": "user", "content": "Weather in Paris?"}],
    [S, {"role": "user", "content": "Weather in Paris?"}, {"role": "assistant", "content": "", "tool_calls": [CALL]},
     {"role": "tool", "tool_call_id": "call_1", "content": "{\"sky\": \"sunny\"}"}],
    [{"role": "user", "content": "Weather and time?"},
     {"role": "assistant", "content": "Let me look.",
      "tool_calls": [CALL, {"id": "call_2", "type": "function", "function": {"name": "now", "arguments": {}}}]},
     {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}, {"role": "tool", "tool_call_id": "call_2", "content": "noon"},
     {"role": "assistant", "content": "Sunny, at noon."}, {"role": "user", "content": "Thanks"}],
]
TOOL_TEMPLATES = {"minimind", "qwen2.5", "qwen3"}  # the templates that render tools in the <tool_call> syntax

# Training conversations with tools (rendered without the generation prompt, as SFT renders them),
# in MiniMind's SFT form too: calls {"name", "arguments"} with arguments a JSON string (MiniMind's
# template writes a string as it is, transformers passes it unchanged), the reasoning in
# reasoning_content, several turns of calls and answers. "content": None on a call (OpenAI's) is
# rendered for MiniMind's template only (Qwen3's fails on None).
MINIMIND_CALL = {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"days\": 2}"}
SFT_TOOL_CONVERSATIONS = [
    TOOL_CONVERSATIONS[1] + [{"role": "assistant", "content": "Sunny in Paris."}],
    TOOL_CONVERSATIONS[2][:-1],
    [S, {"role": "user", "content": "Paris, then the time?"},
     {"role": "assistant", "content": "", "reasoning_content": "I need the weather.", "tool_calls": [MINIMIND_CALL]},
     {"role": "tool", "content": "sunny"},
     {"role": "assistant", "content": "", "tool_calls": [{"name": "now", "arguments": {}}]},
     {"role": "tool", "content": "noon"},
     {"role": "assistant", "content": "Sunny, at noon.", "reasoning_content": "Both known."},
     {"role": "user", "content": "Thanks"}, {"role": "assistant", "content": "<think>\nshort\n</think>\n\nBye."}],
]
SFT_NONE_CONTENT = [{"role": "user", "content": "Weather?"},
                    {"role": "assistant", "content": None, "tool_calls": [CALL]},
                    {"role": "tool", "tool_call_id": "call_1", "content": "rain"},
                    {"role": "assistant", "content": "Rain."}]

# Small templates over the interpreter's constructs, rendered by the same jinja2 environment as
# apply_chat_template (transformers' _compile_jinja_template), with CONTEXT.
CONTEXT = {"messages": [{"role": "user", "content": "  Hi there \n"}, {"role": "assistant", "content": "ok"}],
           "tools": [{"type": "function", "function": {"name": "get", "parameters": {"b": 1.5, "a": [True, None, "é\"x"]}}}],
           "n": 7, "f": 0.1, "big": 1e20, "small": 1e-05, "s": "a,b,,c", "add_generation_prompt": False}
SNIPPETS = [
    "{{ messages[0]['content'] | trim }}|{{ messages[0].content.strip() }}|{{ messages[-1].role }}",
    "{{ messages | length }} {{ s | length }} {{ 'héllo' | length }} {{ s.split(',') }} {{ s.split(',', 1) }} {{ ' a  b '.split() }}",
    "{{ tools | tojson }}\n{{ tools[0] | tojson(indent=2) }}\n{{ tools[0].function.parameters | tojson(sort_keys=true) }}",
    "{{ n / 2 }} {{ n // 2 }} {{ n % 3 }} {{ -n // 2 }} {{ 2 ** 10 }} {{ f * 3 }} {{ big }} {{ small }} {{ 1.0 }} {{ n ~ 'x' }}",
    "{{ [1, 2, 3, 4][1:3] }} {{ 'abcdef'[::-1] }} {{ 'abcdef'[-2:] }} {{ [1, 2, 3][::2] }} {{ 'héllo'[1] }} {{ [1,2,3][5] is defined }}",
    "{%- for m in messages %}{{ loop.index0 }}{{ loop.index }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.revindex }};{% endfor %}",
    "{% set ns = namespace(count=0, last='') %}{% for m in messages if m.role != 'system' %}{% set ns.count = ns.count + 1 %}{% set ns.last = m.role %}{% endfor %}{{ ns.count }} {{ ns.last }}",
    "{% for m in messages %}{% set x = m.role %}{% endfor %}{{ x is defined }} {{ undefined_thing is none }} {{ none is none }} {{ tools is string }} {{ 'a' is string }}",
    "  {%- if true -%}  A  {%- endif -%}  \n  {% if true %}\n    B\n  {% endif %}\n{{ 'C' }}  {# note #}\n  {%+ if true %}D{% endif %}\n",
    "{{ 'x' if n > 5 else 'y' }} {{ 'z' if n > 50 }}| {{ n > 5 and n < 10 }} {{ not n }} {{ 'ab' in 'cabd' }} {{ 3 not in [1, 2] }} {{ 'role' in messages[0] }}",
    "{{ 'Hello' ~ ' ' ~ 'World' | upper }} {{ 'hello world' | title }} {{ 'x' | default('d') }} {{ nothing | default('d') }} {{ '' | default('d', true) }}",
    "{{ 'a-b-c'.replace('-', '+') }} {{ 'abc'.startswith('ab') }} {{ 'abc'.endswith(('x', 'c')) }} {{ '\n\nx\n'.lstrip('\n') }}|{{ 'xxhixx'.strip('x') }} {{ 'ab'.upper() }}",
    "{{ messages | map(attribute='role') | join(', ') }} {{ messages | selectattr('role', 'equalto', 'user') | list | length }} {{ [3, 1, 3] | unique | list }} {{ [1, 2] | reverse | list }} {{ {'k': 1, 'j': 2} | items | list }}",
    "{{ none }} {{ true }} {{ [1, 'a', none, true] }} {{ {'a': 'b'} }} {{ \"it's\" }} {{ 3.14159 | round(2) if false else 0 }}",
    "{% for i in range(3) %}{% if i == 1 %}{% continue %}{% endif %}{{ i }}{% endfor %}|{% for i in range(10) %}{% if i > 2 %}{% break %}{% endif %}{{ i }}{% endfor %}|{% for x in [] %}x{% else %}empty{% endfor %}",
    "{% set block %}inner {{ n }}{% endset %}[{{ block }}] {{ messages[0].get('role') }} {{ messages[0].get('nope', 'dflt') }} {% for k, v in {'a': 1}.items() %}{{ k }}={{ v }}{% endfor %}",
    "{%- generation %}gen {{ n }}{% endgeneration -%}\n{{ \"\\u00e9\\t|\" }}{{ 'a' 'b' }} {{ (1, 2) }} {{ 10 - 2 * 3 }} {{ -2 ** 2 }}",
    "{{ nothing | map(attribute='role') | join(', ') }}|{{ nothing | select | list }}|{{ nothing | selectattr('a') | list }}|"
    "{{ nothing | unique | list }}|{{ nothing | map('upper') | list }}|{{ 'ab' | map('upper') | join }}|{{ {'k': 1} | list }}",
    "{{ 'abc'.replace('', '-') }} {{ 'abc'.replace('', '-', 2) }} {{ 'aaa'.replace('a', 'b', 2) }} {{ 'é'.replace('', '.') }}",
]


def main(out_dir):
    gpt2 = os.path.join(out_dir, "hf_gpt2.json")
    out = {"generator": "tools/golden/hf_chat_template_fixtures.py", "transformers_version": transformers.__version__,
           "tokenizer": "hf_gpt2.json", "templates": []}
    for name, file, source, special, tokenize in TEMPLATES:
        with open(os.path.join(HERE, "chat_templates", file), encoding="utf-8") as f:
            template = f.read()
        tok = PreTrainedTokenizerFast(tokenizer_file=gpt2, **special)
        tok.chat_template = template
        cases = []
        for messages in CONVERSATIONS:
            for gen in (False, True):
                case = {"messages": messages, "add_generation_prompt": gen,
                        "text": tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=gen)}
                if tokenize:
                    ids = tok.apply_chat_template(messages, tokenize=True, add_generation_prompt=gen)
                    case["ids"] = list(ids["input_ids"] if hasattr(ids, "keys") else ids)
                cases.append(case)
        entry = {"name": name, "source": source, "file": "tools/golden/chat_templates/" + file,
                 "special_tokens": special, "template": template, "cases": cases}
        if name in TOOL_TEMPLATES:
            entry["tool_cases"] = [{"messages": messages, "tools": TOOLS,
                                    "text": tok.apply_chat_template(messages, tools=TOOLS, tokenize=False, add_generation_prompt=True)}
                                   for messages in TOOL_CONVERSATIONS]
            sft = SFT_TOOL_CONVERSATIONS + ([SFT_NONE_CONTENT] if name == "minimind" else [])
            entry["sft_tool_cases"] = []
            for messages in sft:
                case = {"messages": messages, "tools": TOOLS,
                        "text": tok.apply_chat_template(messages, tools=TOOLS, tokenize=False, add_generation_prompt=False)}
                ids = tok.apply_chat_template(messages, tools=TOOLS, tokenize=True, add_generation_prompt=False)
                case["ids"] = list(ids["input_ids"] if hasattr(ids, "keys") else ids)
                entry["sft_tool_cases"].append(case)
        out["templates"].append(entry)
    from transformers.utils.chat_template_utils import _compile_jinja_template
    out["context"] = CONTEXT
    out["snippets"] = [{"template": t, "text": _compile_jinja_template(t).render(**CONTEXT)} for t in SNIPPETS]
    path = os.path.join(out_dir, "hf_chat_templates.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {path}: {len(out['templates'])} templates, {sum(len(t['cases']) for t in out['templates'])} cases")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "tests", "fixtures", "tokenizer"))
