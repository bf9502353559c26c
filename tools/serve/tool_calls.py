"""Tool calling of `nanoformer serve` through the official `openai` client (pip install openai jsonschema transformers).

    python tools/serve/tool_calls.py [--model minimind2-small] [--tokenizer minimind2_tokenizer.json]
    python tools/serve/tool_calls.py --url http://127.0.0.1:8998 --template qwen2.5   # a running server

For Qwen2.5's and MiniMind's chat templates (tools/golden/chat_templates/, served through a
tokenizer_config.json beside the script's temporary folder), a two-turn tool conversation:
  1. tools offered with tool_choice "required", then a named function (greedy, and --samples seeded
     requests), plain and streamed: each answer is a call (finish_reason tool_calls, an id call_...)
     whose arguments validate with `jsonschema` against the function's parameters; a streamed call's
     deltas join into the non-streamed call;
  2. the call and its result (role tool, tool_call_id) sent back with tool_choice auto: an answer.
Each turn's prompt (POST /apply-template, llama.cpp's endpoint) must equal transformers'
apply_chat_template(messages, tools=tools, add_generation_prompt=True) for that template, the
assistant's arguments given to transformers as objects (as its docs write them; the server turns
OpenAI's JSON text into one). A preset serves random weights: the calls are what the grammar lets a
random model write, so they test the constraint and the plumbing, not the model. Prints each check
and exits non-zero on the first failure.
"""

import json
import os
import tempfile
import urllib.request

import jsonschema
import openai
from transformers import PreTrainedTokenizerFast

from server_process import ROOT, argument_parser, check, ServerProcess

TEMPLATES = {"qwen2.5": "Qwen2.5-7B-Instruct.jinja", "minimind": "MiniMind-d65ef2c.jinja"}
WEATHER = {"type": "object",
           "properties": {"city": {"type": "string", "maxLength": 12}, "days": {"type": "integer"},
                          "unit": {"enum": ["celsius", "fahrenheit"]}},
           "required": ["city", "days"], "additionalProperties": False}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "The weather forecast of a city.",
                                           "parameters": WEATHER}},
         {"type": "function", "function": {"name": "get_time", "description": "The time now in a time zone.",
                                           "parameters": {"type": "object", "properties": {"zone": {"type": "string", "maxLength": 20}},
                                                          "required": ["zone"]}}}]
SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
QUESTION = [{"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "What will the weather be in Paris for the next 2 days?"}]


def special_tokens(template):
    with open(os.path.join(ROOT, "tests", "fixtures", "tokenizer", "hf_chat_templates.json"), encoding="utf-8") as f:
        return next(t["special_tokens"] for t in json.load(f)["templates"] if t["name"] == template)


def template_source(template):
    with open(os.path.join(ROOT, "tools", "golden", "chat_templates", TEMPLATES[template]), encoding="utf-8") as f:
        return f.read()


def apply_template(url, body):
    request = urllib.request.Request(url + "/apply-template", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request) as r:
        return json.load(r)["prompt"]


def for_transformers(messages):
    """The messages as transformers' docs write tool calls: arguments as objects, not JSON text."""
    out = []
    for m in messages:
        m = dict(m)
        if m.get("tool_calls"):
            m["tool_calls"] = [{"id": c["id"], "type": "function",
                                "function": {"name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"])}}
                               for c in m["tool_calls"]]
        out.append(m)
    return out


def check_call(call, name=None):
    check(call.id.startswith("call_") and call.type == "function", f"call id {call.id}, type {call.type}")
    if name:
        check(call.function.name == name, f"the named function is called: {call.function.name}")
    valid = jsonschema.Draft202012Validator(SCHEMAS[call.function.name]).is_valid(json.loads(call.function.arguments))
    check(valid, f"{call.function.name}({call.function.arguments}) validates against its parameters")


def streamed_call(client, name, **request):
    """The streamed answer's content, its calls joined from their deltas (index -> [id, name, arguments]), and its finish reason."""
    content, calls, finish = "", {}, None
    for chunk in client.chat.completions.create(stream=True, **request):
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        content += delta.content or ""
        for d in delta.tool_calls or []:
            entry = calls.setdefault(d.index, ["", "", ""])
            entry[0] += d.id or ""
            entry[1] += (d.function.name or "") if d.function else ""
            entry[2] += (d.function.arguments or "") if d.function else ""
        finish = chunk.choices[0].finish_reason or finish
    return content, calls, finish


def conversation(url, model, template, tok, samples):
    client = openai.OpenAI(base_url=url + "/v1", api_key="none")
    common = dict(model=model, messages=QUESTION, tools=TOOLS, max_tokens=300)

    def same_as_transformers(messages, tool_choice):
        ours = apply_template(url, {"messages": messages, "tools": TOOLS, "tool_choice": tool_choice})
        theirs = tok.apply_chat_template(for_transformers(messages), tools=TOOLS, tokenize=False, add_generation_prompt=True)
        check(ours == theirs, f"{template}: the prompt ({len(ours)} chars) equals transformers' apply_chat_template(tools=...)")
        if ours != theirs:
            print(ours, "\n----\n", theirs)

    same_as_transformers(QUESTION, "required")
    r = client.chat.completions.create(tool_choice="required", temperature=0, **common)
    choice = r.choices[0]
    check(choice.finish_reason == "tool_calls" and len(choice.message.tool_calls) == 1,
          f"required: finish_reason {choice.finish_reason}, {len(choice.message.tool_calls or [])} call")
    check_call(choice.message.tool_calls[0])
    named = {"type": "function", "function": {"name": "get_weather"}}
    greedy = client.chat.completions.create(tool_choice=named, temperature=0, **common).choices[0]
    check_call(greedy.message.tool_calls[0], "get_weather")
    for i in range(samples):
        sampled = client.chat.completions.create(tool_choice=named if i % 2 else "required", temperature=1.0, seed=100 + i, **common)
        c = sampled.choices[0]
        check(c.finish_reason == "tool_calls", f"sample {i}: finish_reason {c.finish_reason}")
        check_call(c.message.tool_calls[0], "get_weather" if i % 2 else None)
    content, calls, finish = streamed_call(client, "get_weather", tool_choice=named, temperature=0, **common)
    call = greedy.message.tool_calls[0]
    check(finish == "tool_calls" and content == "" and len(calls) == 1 and calls[0][0].startswith("call_") and
          calls[0][1:] == [call.function.name, call.function.arguments],
          f"streamed: the deltas join into the greedy call {calls[0][1]}({calls[0][2]}), finish_reason {finish}")

    # turn 2: the call's result back to the model
    turn = QUESTION + [greedy.message.model_dump(exclude_none=True),
                       {"role": "tool", "tool_call_id": call.id, "content": json.dumps({"forecast": ["sunny", "rain"], "unit": "celsius"})}]
    same_as_transformers(turn, "auto")
    answer = client.chat.completions.create(model=model, messages=turn, tools=TOOLS, tool_choice="auto", max_tokens=24, temperature=0)
    a = answer.choices[0]
    check(a.finish_reason in ("stop", "length", "tool_calls"),
          f"turn 2 answered: finish_reason {a.finish_reason}, content {a.message.content!r:.60}, "
          f"{len(a.message.tool_calls or [])} calls, prompt {answer.usage.prompt_tokens} tokens")


def main():
    p = argument_parser(__doc__)
    p.add_argument("--url", help="a running server (its template: --template)")
    p.add_argument("--template", choices=sorted(TEMPLATES), help="with --url: the server's template")
    p.add_argument("--samples", type=int, default=6, help="seeded sampled calls per template (default: %(default)s)")
    args = p.parse_args()
    templates = [args.template] if args.url else sorted(TEMPLATES)
    for template in templates:
        tok = PreTrainedTokenizerFast(tokenizer_file=args.tokenizer, **special_tokens(template))
        tok.chat_template = template_source(template)
        if args.url:
            conversation(args.url, openai.OpenAI(base_url=args.url + "/v1", api_key="none").models.list().data[0].id, template, tok,
                         args.samples)
            continue
        with tempfile.TemporaryDirectory() as folder:
            config = os.path.join(folder, "tokenizer_config.json")
            with open(config, "w", encoding="utf-8") as f:
                json.dump(dict(special_tokens(template), chat_template=template_source(template)), f)
            with ServerProcess(["--model", args.model, "--tokenizer", args.tokenizer, "--chat-template", config,
                                "--name", "tools", "--context", "2048"]) as server:
                print(f"# {template}: {server.url}")
                conversation(server.url, "tools", template, tok, args.samples)


if __name__ == "__main__":
    main()
