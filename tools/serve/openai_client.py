"""The official `openai` Python client against `nanoformer serve` (pip install openai).

    python tools/serve/openai_client.py --model minimind2-small --tokenizer minimind2_tokenizer.json
    python tools/serve/openai_client.py --url http://127.0.0.1:8998 --api-key KEY     # a running server

Lists the models, asks for a chat completion and a text completion, each plain and streamed
(greedy, so the streamed text must equal the plain one), with stop strings and max_tokens, n
choices (each equal to its seed alone), frequency and presence penalties, and
checks that a bad request raises the client's BadRequestError and a wrong key AuthenticationError.
Prints what it did and exits non-zero on the first mismatch.
"""

import openai

from server_process import argument_parser, check, ServerProcess


def run(url, api_key):
    client = openai.OpenAI(base_url=url + "/v1", api_key=api_key or "none")
    models = client.models.list()
    name = models.data[0].id
    check(len(models.data) == 1, f"models.list(): {name}")

    messages = [{"role": "system", "content": "You are a helpful assistant"}, {"role": "user", "content": "Hello!"}]
    plain = client.chat.completions.create(model=name, messages=messages, temperature=0, max_tokens=24)
    text = plain.choices[0].message.content
    check(plain.usage.completion_tokens <= 24, f"chat.completions.create: {text!r} ({plain.usage.completion_tokens} tokens, "
          f"finish_reason {plain.choices[0].finish_reason})")
    chunks = list(client.chat.completions.create(model=name, messages=messages, temperature=0, max_tokens=24, stream=True,
                                                 stream_options={"include_usage": True}))
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    check(streamed == text, f"streamed in {len(chunks)} chunks, equal to the plain answer")
    check(chunks[-1].usage.completion_tokens == plain.usage.completion_tokens, "usage in the last chunk")

    completion = client.completions.create(model=name, prompt="Once upon a time", temperature=0, max_tokens=16)
    text = completion.choices[0].text
    streamed = "".join(c.choices[0].text for c in client.completions.create(
        model=name, prompt="Once upon a time", temperature=0, max_tokens=16, stream=True))
    check(streamed == text, f"completions.create, plain and streamed: {text!r}")
    if len(text) > 6:
        stop = text[3:6]
        cut = client.completions.create(model=name, prompt="Once upon a time", temperature=0, max_tokens=16, stop=[stop])
        check(cut.choices[0].text == text[:text.find(stop)] and cut.choices[0].finish_reason == "stop",
              f"stop {stop!r}: {cut.choices[0].text!r}")
    sampled = [client.chat.completions.create(model=name, messages=messages, temperature=0.8, seed=7, max_tokens=12)
               .choices[0].message.content for _ in range(2)]
    check(sampled[0] == sampled[1], "the same seed gives the same sampled answer")
    several = client.chat.completions.create(model=name, messages=messages, temperature=0.8, seed=7, max_tokens=12, n=3)
    alone = [client.chat.completions.create(model=name, messages=messages, temperature=0.8, seed=7 + i, max_tokens=12)
             .choices[0].message.content for i in range(3)]
    check([c.message.content for c in several.choices] == alone and [c.index for c in several.choices] == [0, 1, 2],
          f"n=3 with seed 7: each choice equals seed 7 + i alone ({len(set(alone))} distinct)")
    penalised = client.chat.completions.create(model=name, messages=messages, temperature=0, max_tokens=24,
                                               frequency_penalty=1.5, presence_penalty=1.0)
    check(penalised.choices[0].message.content is not None, f"frequency/presence penalties: {penalised.choices[0].message.content!r}")

    try:
        client.chat.completions.create(model=name, messages=messages, temperature=5)
        check(False, "temperature 5 refused")
    except openai.BadRequestError as e:
        check(e.status_code == 400 and e.body["param"] == "temperature", f"BadRequestError: {e.body['message']}")
    if api_key:
        try:
            openai.OpenAI(base_url=url + "/v1", api_key="wrong").models.list()
            check(False, "a wrong key refused")
        except openai.AuthenticationError as e:
            check(e.status_code == 401, f"AuthenticationError: {e.body['message']}")


def main():
    p = argument_parser(__doc__)
    p.add_argument("--url", help="a running server (default: start one)")
    p.add_argument("--api-key", default="test-key")
    a = p.parse_args()
    print(f"openai {openai.__version__}")
    if a.url:
        return run(a.url, a.api_key)
    with ServerProcess(["--model", a.model, "--tokenizer", a.tokenizer, "--api-key", a.api_key, "--context", "512"],
                       env={"NANOFORMER_THREADS": "1"}) as server:
        run(server.url, a.api_key)


if __name__ == "__main__":
    main()
