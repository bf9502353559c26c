"""A bounded load test of `nanoformer serve` on loopback: N concurrent streaming chat clients for
S seconds, once per --parallel value (batched decoding against one sequence at a time), each
configuration in a fresh server process. Reports requests/s, generated tokens/s summed over the
clients, p50/p99 time to first token, and the server's resident memory before the load (after a
warm-up of the same load, so that the server's threads, their malloc arenas and the allocator's
cache exist) and after it (all clients done, 2 s later).

    python tools/serve/load_test.py --clients 32 --seconds 20 --parallel 8 1
"""
import http.client
import json
import random
import statistics
import threading
import time

from server_process import argument_parser, ServerProcess

PROMPTS = ["Tell me a story about a cat.", "What is the capital of France?", "Explain gravity in one sentence.",
           "Write a short poem about rain.", "How do I bake bread?", "Why is the sky blue?", "Say hello in five languages."]


def one_request(host, port, max_tokens, rng, timeout=600):
    """One streamed chat completion: (time to first token in s, completion tokens)."""
    body = {"messages": [{"role": "user", "content": rng.choice(PROMPTS)}], "stream": True, "max_tokens": max_tokens,
            "temperature": 0.8, "stream_options": {"include_usage": True}}
    connection = http.client.HTTPConnection(host, port, timeout=timeout)
    start = time.perf_counter()
    connection.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
    response = connection.getresponse()
    if response.status != 200:
        raise RuntimeError(f"HTTP {response.status}: {response.read()[:200]!r}")
    first, tokens, buffer = None, 0, b""
    while True:
        data = response.read1(65536)
        if not data:
            break
        buffer += data
        while b"\n\n" in buffer:
            event, buffer = buffer.split(b"\n\n", 1)
            payload = event[len(b"data: "):]
            if payload == b"[DONE]":
                continue
            chunk = json.loads(payload)
            if chunk.get("usage"):
                tokens = chunk["usage"]["completion_tokens"]
            if first is None and chunk["choices"] and chunk["choices"][0]["delta"].get("content"):
                first = time.perf_counter() - start
    connection.close()
    return first if first is not None else time.perf_counter() - start, tokens


def load(url, clients, seconds, max_tokens):
    host, port = url.replace("http://", "").split(":")
    port = int(port)
    ttft, tokens, errors = [], [0], []
    lock = threading.Lock()
    deadline = time.perf_counter() + seconds

    def client(index):
        rng = random.Random(index)
        while time.perf_counter() < deadline:
            try:
                first, n = one_request(host, port, max_tokens, rng)
            except Exception as e:  # noqa: BLE001 - reported below
                with lock:
                    errors.append(str(e))
                continue
            with lock:
                ttft.append(first)
                tokens[0] += n

    start = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start  # the last requests finish after the deadline
    ttft.sort()
    return {"requests": len(ttft), "elapsed_s": elapsed, "requests_per_s": len(ttft) / elapsed,
            "tokens_per_s": tokens[0] / elapsed, "tokens": tokens[0],
            "ttft_p50_s": statistics.median(ttft) if ttft else float("nan"),
            "ttft_p99_s": ttft[min(len(ttft) - 1, int(0.99 * len(ttft)))] if ttft else float("nan"),
            "errors": len(errors), "first_error": errors[0] if errors else ""}


def main():
    p = argument_parser(__doc__)
    p.add_argument("--clients", type=int, default=32)
    p.add_argument("--seconds", type=float, default=20)
    p.add_argument("--max-tokens", type=int, default=48)
    p.add_argument("--warmup-seconds", type=float, default=10, help="of the same load before the memory is read")
    p.add_argument("--parallel", type=int, nargs="+", default=[8, 1])
    p.add_argument("--threads", default="1", help="NANOFORMER_THREADS of the server")
    p.add_argument("--json", help="also write the results here")
    a = p.parse_args()
    results = []
    for parallel in a.parallel:
        args = ["--model", a.model, "--tokenizer", a.tokenizer, "--context", "512", "--parallel", str(parallel),
                "--queue", str(a.clients + 8)]
        with ServerProcess(args, env={"NANOFORMER_THREADS": a.threads}) as server:
            load(server.url, a.clients, a.warmup_seconds, a.max_tokens)  # the same load: threads, arenas, caches
            time.sleep(2)
            before = server.rss_mib()
            r = load(server.url, a.clients, a.seconds, a.max_tokens)
            time.sleep(2)
            r.update(parallel=parallel, rss_before_mib=before, rss_after_mib=server.rss_mib(), alive=server.alive())
        results.append(r)
        print(f"--parallel {parallel:2d}: {r['requests']} requests in {r['elapsed_s']:.1f} s = {r['requests_per_s']:.2f} req/s, "
              f"{r['tokens_per_s']:.1f} tokens/s summed over {a.clients} clients, time to first token "
              f"p50 {r['ttft_p50_s'] * 1000:.0f} ms p99 {r['ttft_p99_s'] * 1000:.0f} ms, errors {r['errors']} {r['first_error']}; "
              f"RSS {r['rss_before_mib']:.1f} -> {r['rss_after_mib']:.1f} MiB "
              f"({100 * (r['rss_after_mib'] / r['rss_before_mib'] - 1):+.1f}%)", flush=True)
    if len(results) > 1:
        base = results[-1]
        for r in results[:-1]:
            print(f"--parallel {r['parallel']} / --parallel {base['parallel']}: tokens/s x{r['tokens_per_s'] / base['tokens_per_s']:.2f}, "
                  f"requests/s x{r['requests_per_s'] / base['requests_per_s']:.2f}, "
                  f"p50 time to first token x{r['ttft_p50_s'] / base['ttft_p50_s']:.2f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
