"""Bad input against `nanoformer serve`: malformed and mistyped JSON, unknown roles, an overlong
prompt, an oversized body, a slow client, wrong methods and paths, and N random garbage requests
(random bytes, mutated valid bodies, truncated bodies, random headers). Every answer must be an
HTTP error status (4xx, or 503 when busy) with OpenAI's error JSON, never a 5xx, a hang or a
dropped connection; /health must answer and a valid request must still succeed at the end.

    python tools/serve/fuzz_server.py --requests 200
"""
import http.client
import json
import random
import socket
import sys
import time

from server_process import argument_parser, ServerProcess

VALID = {"messages": [{"role": "user", "content": "Hello"}], "max_tokens": 4, "temperature": 0}


def send(host, port, method, path, body, headers=None, timeout=30):
    connection = http.client.HTTPConnection(host, port, timeout=timeout)
    connection.request(method, path, body, headers or {"Content-Type": "application/json"})
    response = connection.getresponse()
    data = response.read()
    connection.close()
    return response.status, data


def mutate(rng):
    """A valid body with one field replaced by a random value, a key dropped, or bytes flipped."""
    body = json.loads(json.dumps(VALID))
    values = [None, True, -1, 0, 1e308, "x" * rng.randint(0, 50), [], {}, [1, "a"], {"role": "user"}, -2**63, 2**64]
    kind = rng.randrange(4)
    if kind == 0:
        body[rng.choice(["messages", "temperature", "top_p", "top_k", "max_tokens", "stop", "seed", "stream", "n",
                         "stream_options", "model", "min_p", "repetition_penalty", "logprobs"])] = rng.choice(values)
    elif kind == 1:
        body["messages"][0][rng.choice(["role", "content"])] = rng.choice(values)
    elif kind == 2:
        body.pop("messages")
    text = json.dumps(body).encode()
    if kind == 3:
        text = bytearray(text)
        for _ in range(rng.randint(1, 5)):
            text[rng.randrange(len(text))] = rng.randrange(256)
        text = bytes(text)
    return text


def slow_client(host, port):
    """Sends the headers a byte every 0.03 s and then stops: the server must drop it (408 at the request's
    deadline, --timeout), not hang."""
    s = socket.create_connection((host, port))
    for c in b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n":
        s.send(bytes([c]))
        time.sleep(0.3 / 10)
    s.settimeout(20)
    start = time.time()
    try:
        data = s.recv(1024)
    except socket.timeout:
        data = b"(timeout)"
    s.close()
    return time.time() - start, data


def main():
    p = argument_parser(__doc__)
    p.add_argument("--requests", type=int, default=200)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    rng = random.Random(a.seed)
    failures = []
    statuses = {}
    args = ["--model", a.model, "--tokenizer", a.tokenizer, "--context", "128", "--max-body", "65536"]
    with ServerProcess(args, env={"NANOFORMER_THREADS": "1"}) as server:
        host, port = server.url.replace("http://", "").split(":")
        port = int(port)

        def expect(label, method, path, body, allowed, headers=None):
            try:
                status, data = send(host, port, method, path, body, headers)
            except Exception as e:  # noqa: BLE001 - a dropped connection is a failure
                failures.append(f"{label}: {e!r}")
                return
            statuses[status] = statuses.get(status, 0) + 1
            ok = status in allowed
            if status >= 400:
                try:
                    error = json.loads(data)["error"]
                    ok = ok and {"message", "type", "param", "code"} <= error.keys()
                except Exception:  # noqa: BLE001
                    ok = False
            if not ok:
                failures.append(f"{label}: HTTP {status} {data[:120]!r}")
            return status, data

        named = [
            ("malformed JSON", b'{"messages": [', {400}),
            ("wrong type", json.dumps(dict(VALID, temperature="hot")).encode(), {400}),
            ("unknown role", json.dumps(dict(VALID, messages=[{"role": "wizard", "content": "x"}])).encode(), {400}),
            ("prompt over the context", json.dumps(dict(VALID, messages=[{"role": "user", "content": "word " * 400}])).encode(), {400}),
            ("body over the limit", json.dumps(dict(VALID, messages=[{"role": "user", "content": "x" * 70000}])).encode(), {413}),
        ]
        for label, body, allowed in named:
            status, data = expect(label, "POST", "/v1/chat/completions", body, allowed) or (0, b"")
            print(f"{label:24s} -> HTTP {status} {json.loads(data)['error']['message'][:90] if data else ''}")
        expect("wrong method", "DELETE", "/v1/chat/completions", b"", {400, 404, 405})
        expect("unknown path", "GET", "/v1/nothing", None, {404})
        elapsed, data = slow_client(host, port)
        print(f"{'slow client':24s} -> dropped after {elapsed:.1f} s: {data[:40]!r}")
        for i in range(a.requests):
            kind = rng.randrange(4)
            if kind == 0:
                body = bytes(rng.randrange(256) for _ in range(rng.randint(0, 300)))
            elif kind == 1:
                body = mutate(rng)
            elif kind == 2:
                text = json.dumps(VALID).encode()
                body = text[:rng.randrange(len(text))]
            else:
                body = mutate(rng)
            path = rng.choice(["/v1/chat/completions", "/v1/completions"])
            headers = {"Content-Type": rng.choice(["application/json", "text/plain", "application/x-garbage"])}
            expect(f"garbage {i}", "POST", path, body, {200, 400, 404, 503}, headers)  # 404: a "model" not served
        status, data = send(host, port, "GET", "/health", None)
        health = json.loads(data)
        status2, data2 = send(host, port, "POST", "/v1/chat/completions", json.dumps(VALID).encode())
        alive = server.alive()
    print(f"{a.requests} garbage requests: statuses {dict(sorted(statuses.items()))}; /health {status} {health}; "
          f"a valid request afterwards: HTTP {status2}; server alive: {alive}")
    for f in failures:
        print("FAIL", f)
    if failures or status != 200 or status2 != 200 or not alive:
        sys.exit(1)
    print("ok: every bad request got a clear error and the server kept serving")


if __name__ == "__main__":
    main()
