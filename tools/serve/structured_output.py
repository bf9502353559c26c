"""Structured output of `nanoformer serve` through the official `openai` client (pip install openai jsonschema).

    python tools/serve/structured_output.py [--model minimind2-small] [--tokenizer minimind2_tokenizer.json]
    python tools/serve/structured_output.py --url http://127.0.0.1:8998        # a running server

Sends --samples seeded requests with response_format json_schema (chat and text completions,
plain and streamed, temperatures 0.7 to 1.3) and validates every output with `jsonschema`; then
json_object, the `grammar` extension field (GBNF), an assertion no grammar writes (a 400 naming
it) and the same with strict false (approximated, the response's schema_approximations saying so). A preset serves random weights: the outputs are whatever the constraint lets a
random model write, so they test the constraint, not the model. Prints the counts and exits
non-zero on the first output that does not parse or validate.
"""

import concurrent.futures
import json
import time

import jsonschema
import openai

from server_process import argument_parser, check, ServerProcess

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 12},
        "age": {"type": "integer"},
        "email": {"anyOf": [{"type": "string", "maxLength": 20}, {"type": "null"}]},
        "tags": {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "maxItems": 3},
        "address": {"$ref": "#/$defs/address"},
        "score": {"type": "number"},
        "active": {"type": "boolean"},
    },
    "required": ["name", "age", "tags", "address"],
    "additionalProperties": False,
    "$defs": {"address": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 10},
                                                           "zip": {"type": "string", "minLength": 2, "maxLength": 5}},
                          "required": ["city"], "additionalProperties": False}},
}
FORMAT = {"type": "json_schema", "json_schema": {"name": "person", "schema": SCHEMA, "strict": True}}
MESSAGES = [{"role": "user", "content": "Describe a person as JSON."}]


def one(client, name, i):
    """The i-th seeded request's text (chat or completion, streamed or not) and its finish reason."""
    common = dict(model=name, temperature=0.7 + 0.6 * (i % 7) / 6, seed=1000 + i, max_tokens=400)
    chat, stream = i % 2 == 0, i % 4 >= 2
    if chat:
        r = client.chat.completions.create(messages=MESSAGES, response_format=FORMAT, stream=stream, **common)
        if stream:
            parts, finish = [], None
            for c in r:
                parts.append(c.choices[0].delta.content or "")
                finish = c.choices[0].finish_reason or finish
            return "".join(parts), finish
        return r.choices[0].message.content, r.choices[0].finish_reason
    r = client.completions.create(prompt="A person as JSON:", extra_body={"response_format": FORMAT}, stream=stream, **common)
    if stream:
        parts, finish = [], None
        for c in r:
            parts.append(c.choices[0].text)
            finish = c.choices[0].finish_reason or finish
        return "".join(parts), finish
    return r.choices[0].text, r.choices[0].finish_reason


def run(url, samples):
    client = openai.OpenAI(base_url=url + "/v1", api_key="none")
    name = client.models.list().data[0].id
    start = time.time()
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda i: one(client, name, i), range(samples)))
    seconds = time.time() - start
    valid = 0
    for i, (text, finish) in enumerate(results):
        try:
            jsonschema.validate(json.loads(text), SCHEMA)
            valid += 1
        except (json.JSONDecodeError, jsonschema.ValidationError) as e:
            check(False, f"sample {i} (finish_reason {finish}): {text!r}: {e}")
    lengths = sorted(len(t) for t, _ in results)
    check(valid == samples, f"json_schema: {valid}/{samples} seeded outputs parse and validate with jsonschema "
          f"({seconds:.1f} s; output bytes min {lengths[0]}, median {lengths[len(lengths) // 2]}, max {lengths[-1]}); "
          f"e.g. {json.dumps(json.loads(results[0][0]), ensure_ascii=False)[:160]}")

    r = client.chat.completions.create(model=name, messages=MESSAGES, response_format={"type": "json_object"},
                                       temperature=1.0, seed=3, max_tokens=400)
    text = r.choices[0].message.content
    # a random model may nest without end: only a finished output must parse
    check(r.choices[0].finish_reason == "length" or isinstance(json.loads(text), dict),
          f"json_object: {text[:80]!r} (finish_reason {r.choices[0].finish_reason})")
    grammar = 'root ::= "yes" | "no" | "maybe (" [0-9]{1,2} "%)"'
    answers = {client.completions.create(model=name, prompt="Well?", extra_body={"grammar": grammar}, temperature=1.0,
                                         seed=s, max_tokens=20).choices[0].text for s in range(8)}
    check(all(a in ("yes", "no") or (a.startswith("maybe (") and a.endswith("%)")) for a in answers),
          f"grammar (GBNF): {sorted(answers)}")
    unique = {"type": "array", "items": {"type": "object"}, "uniqueItems": True, "minItems": 2}
    try:
        bad = {"type": "json_schema", "json_schema": {"name": "x", "schema": unique}}
        client.chat.completions.create(model=name, messages=MESSAGES, response_format=bad)
        check(False, "an assertion no grammar writes refused")
    except openai.BadRequestError as e:
        check(e.status_code == 400 and "'uniqueItems'" in e.body["message"], f"BadRequestError: {e.body['message']}")
    loose = {"type": "json_schema", "json_schema": {"name": "x", "schema": unique, "strict": False}}
    r = client.chat.completions.create(model=name, messages=MESSAGES, response_format=loose, max_tokens=8)
    check(getattr(r, "schema_approximations", None) == ["#: uniqueItems: items may repeat"],
          f"strict false: approximations listed ({getattr(r, 'schema_approximations', None)})")


def main():
    p = argument_parser(__doc__)
    p.add_argument("--url", help="a running server (default: start one)")
    p.add_argument("--samples", type=int, default=100)
    a = p.parse_args()
    print(f"openai {openai.__version__}")
    if a.url:
        return run(a.url, a.samples)
    with ServerProcess(["--model", a.model, "--tokenizer", a.tokenizer, "--context", "512", "--parallel", "4"]) as server:
        run(server.url, a.samples)


if __name__ == "__main__":
    main()
