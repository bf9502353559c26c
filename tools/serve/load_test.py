"""A bounded load test on loopback, in two forms.

Our server against itself: N concurrent streaming chat clients for S seconds, once per --parallel
value (batched decoding against one sequence at a time), each configuration in a fresh server
process. Reports requests/s, generated tokens/s summed over the clients, p50/p99 time to first
token, and the server's resident memory before the load (after a warm-up of the same load, so that
the server's threads, their malloc arenas and the allocator's cache exist) and after it (all
clients done, 2 s later).

    python tools/serve/load_test.py --clients 32 --seconds 20 --parallel 8 1

Ours beside the peers' servers (--engines; mainline's and ik_llama.cpp's llama-server, built by
tools/peers/) on one GGUF file (--gguf), the same threads: for each prompt length (--prompt-tokens,
words of a fixed list, about a token each), with and without a common system prompt in front
(--system-tokens: the same words for every request, what a prefix cache can share), and each count
of concurrent streaming clients (--clients), every engine in a fresh server with --parallel = the
clients, in an order that rotates, each client sending --requests text completions of
--max-tokens greedy tokens one after another. Reports output tokens/s over all streams, time to
first token and inter-token latency (p50, p99), and the server's peak resident memory; --json keeps
every number. --system-prompts N draws each request's system prompt from N different ones (agents
with their own instructions), --parallel-engines sets --parallel below the clients. --rounds R
repeats every configuration, the engines' order rotating, and reports medians of the rounds' ratios
with their range; --plot FILE.png draws output tokens/s, time to first token p99 and peak memory by
configuration and engine (tools/serve/load_chart.py, matplotlib). `ours-noprefix` is ours with `--cache-budget 0` (no prefix cache: each slot reuses
only its own cache); for ours, the prefill tokens computed and reused and the KV bytes held
(`/metrics`, over the measured run) are reported too. The GGUF needs its tokenizer embedded (`nanoformer convert F.gguf OUT.gguf --to gguf
--tokenizer tokenizer.json`, then the peers' llama-quantize for the other types).

    python tools/serve/load_test.py --gguf minimind2-small-Q4_0.gguf --engines ours llamacpp ik_llama \
        --clients 1 4 16 64 --prompt-tokens 256 2048 --system-tokens 0 1024 --threads 2 --json serve.json
"""
import http.client
import json
import random
import statistics
import threading
import time

from server_process import argument_parser, PeerServerProcess, ServerProcess

PROMPTS = ["Tell me a story about a cat.", "What is the capital of France?", "Explain gravity in one sentence.",
           "Write a short poem about rain.", "How do I bake bread?", "Why is the sky blue?", "Say hello in five languages."]


def streamed(host, port, path, body, timeout=1800, stall_s=120):
    """POSTs a streamed request: (time to first chunk in s, the gaps between chunks in s, the usage or
    None, the chunks). A server holds back the bytes of a character until it is whole, so a chunk may
    bring several tokens. It ends at [DONE], or at the finish and the usage: ik_llama.cpp's server
    keeps the connection open after them and at times sends no [DONE] (a read that waits longer
    than `stall_s` is an error)."""
    body = dict(body, stream=True, stream_options={"include_usage": True})
    connection = http.client.HTTPConnection(host, port, timeout=timeout)
    start = time.perf_counter()
    connection.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    response = connection.getresponse()
    if response.status != 200:
        raise RuntimeError(f"HTTP {response.status}: {response.read()[:200]!r}")
    connection.sock.settimeout(stall_s)
    stamps, chunks, buffer, usage, finished, done = [], [], b"", None, False, False
    while not done:
        data = response.read1(65536)
        if not data:
            break
        buffer += data
        while b"\n\n" in buffer:
            event, buffer = buffer.split(b"\n\n", 1)
            payload = event[len(b"data: "):].strip()
            done = done or payload == b"[DONE]"
            if not payload or payload == b"[DONE]":
                continue
            chunk = json.loads(payload)
            if chunk.get("usage"):
                usage = chunk["usage"]
            finished = finished or any(c.get("finish_reason") for c in chunk.get("choices") or [])
            done = done or (finished and usage is not None)
            if chunk.get("choices"):
                stamps.append(time.perf_counter())
                chunks.append(chunk)
    connection.close()
    if not stamps:
        raise RuntimeError("nothing streamed")
    return stamps[0] - start, [y - x for x, y in zip(stamps, stamps[1:])], usage, chunks


def one_request(host, port, max_tokens, rng):
    """One streamed chat completion: (time to its first text in s, completion tokens)."""
    body = {"messages": [{"role": "user", "content": rng.choice(PROMPTS)}], "max_tokens": max_tokens, "temperature": 0.8}
    first, gaps, usage, chunks = streamed(host, port, "/v1/chat/completions", body)
    for chunk, gap in zip(chunks, gaps + [0.0]):  # to the first chunk that carried text
        if chunk["choices"][0].get("delta", {}).get("content"):
            break
        first += gap
    return first, usage["completion_tokens"] if usage else 0


WORDS = ("the of and to in is was for on are with as by at from his her they this that which or one had not but "
         "what all were when we there can an your their said if do will each about how up out them then she many "
         "some so these would other into has more two like him time see no could make than first been its who now "
         "people my made over did down only way find use may water long little very after words called just where "
         "most know get through back much before go good new write our used me man too any day same right look think").split()


def words(count, rng):
    return " ".join(rng.choice(WORDS) for _ in range(count))


def one_completion(host, port, prompt, max_tokens):
    """One streamed greedy text completion: (time to first token in s, the gaps between chunks in s,
    completion tokens, prompt tokens or None); tokens the server's usage, else the chunks."""
    first, gaps, usage, chunks = streamed(host, port, "/v1/completions",
                                          {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0})
    return first, gaps, usage["completion_tokens"] if usage else len(chunks), usage["prompt_tokens"] if usage else None


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


def run_clients(clients, seed, more, send):
    """`clients` threads at once, client i with random.Random(1000 seed + i), sending send(rng) while
    more(k) holds (k: its requests so far): (the results, the errors, the seconds from the first
    start to the last end)."""
    results, errors, lock = [], [], threading.Lock()

    def client(index):
        rng, k = random.Random(seed * 1000 + index), 0
        while more(k):
            k += 1
            try:
                r = send(rng)
            except Exception as e:  # noqa: BLE001 - reported by the caller
                with lock:
                    errors.append(str(e))
                continue
            with lock:
                results.append(r)

    start = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results, errors, time.perf_counter() - start


def host_port(url):
    host, port = url.replace("http://", "").split(":")
    return host, int(port)


def streams(url, clients, requests, prompt_tokens, systems, max_tokens, seed):
    """`clients` streaming clients at once, each sending `requests` completions one after another, each
    after one of the system prompts `systems` (a list; [""] for none), chosen at random."""
    host, port = host_port(url)

    def prompt(rng):
        system = rng.choice(systems)
        return (system + " " if system else "") + words(prompt_tokens, rng)

    results, errors, elapsed = run_clients(clients, seed, lambda k: k < requests,
                                           lambda rng: one_completion(host, port, prompt(rng), max_tokens))
    ttft = [r[0] for r in results]
    gaps = [g for r in results for g in r[1]]
    tokens = sum(r[2] for r in results)
    prompts = [r[3] for r in results if r[3] is not None]
    return {"requests": len(ttft), "elapsed_s": elapsed, "output_tokens_per_s": tokens / elapsed, "tokens": tokens,
            "ttft_p50_s": percentile(ttft, 0.5), "ttft_p99_s": percentile(ttft, 0.99),
            "itl_p50_s": percentile(gaps, 0.5), "itl_p99_s": percentile(gaps, 0.99),
            "prompt_tokens_mean": statistics.mean(prompts) if prompts else None,
            "errors": len(errors), "first_error": errors[0] if errors else ""}


def start_engine(engine, a, parallel, context):
    if engine.startswith("ours"):
        queue = max([parallel] + a.clients) + 8
        # an f16 KV cache, llama-server's default (-ctk / -ctv f16), so that both hold the same bytes a token
        args = ["--model", a.gguf, "--context", str(context), "--parallel", str(parallel), "--queue", str(queue),
                "--cache-type", "f16"]
        if engine == "ours-noprefix":
            args += ["--cache-budget", "0"]
        return ServerProcess(args, env={"NANOFORMER_THREADS": str(a.threads)})
    return PeerServerProcess(engine, a.gguf, parallel, context, a.threads)


def metrics(url):
    """Our server's /metrics as {name: value} (the unlabelled samples)."""
    host, port = host_port(url)
    connection = http.client.HTTPConnection(host, port, timeout=30)
    connection.request("GET", "/metrics")
    text = connection.getresponse().read().decode()
    connection.close()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#") and "{" not in line:
            name, value = line.split()
            out[name] = float(value)
    return out


def prefix_numbers(before, after):
    """Over a run: prompt tokens, those computed, those the prefix cache gave, and the KV bytes held after it."""
    delta = {k: after[k] - before.get(k, 0) for k in after}
    return {"prompt_tokens": delta["nanoformer_prompt_tokens_total"],
            "prefill_computed": delta["nanoformer_prompt_tokens_computed_total"],
            "prefix_cached": delta["nanoformer_prompt_tokens_prefix_cached_total"],
            "kv_bytes": after["nanoformer_kv_cache_bytes"], "slot_kv_bytes": after["nanoformer_kv_cache_slot_bytes"]}


CONFIG_KEYS = ("clients", "prompt_words", "system_words")


def compare_engines(a):
    systems = [words(a.system_tokens_max, random.Random(7 + i)) if a.system_tokens_max else "" for i in range(a.system_prompts)]
    results, turn = [], 0
    for round_index in range(a.rounds):
        for prompt_tokens in a.prompt_tokens:
            for system_tokens in a.system_tokens:
                shared = [" ".join(system.split()[:system_tokens]) for system in systems]
                context = system_tokens + prompt_tokens * 2 + a.max_tokens + 64  # (words may split into more tokens)
                for clients in a.clients:
                    order = a.engines[turn % len(a.engines):] + a.engines[:turn % len(a.engines)]
                    turn += 1
                    for engine in order:
                        results.append(run_engine(a, engine, clients, prompt_tokens, system_tokens, shared, context))
                        results[-1]["round"] = round_index
    summarise(results, a.rounds)
    if a.plot:
        from load_chart import write_load_chart  # matplotlib: only for --plot
        write_load_chart(a.plot, results, a.engines, f"{a.threads} threads, {a.max_tokens} tokens a request, "
                         f"{a.gguf.rsplit('/', 1)[-1]}, medians of {a.rounds} round(s)")
        print(f"wrote {a.plot}")
    return results


def run_engine(a, engine, clients, prompt_tokens, system_tokens, shared, context):
    with start_engine(engine, a, a.parallel_engines or clients, context) as server:
        streams(server.url, min(clients, 4), 1, prompt_tokens, shared, 8, seed=99)  # warm-up
        before = metrics(server.url) if engine.startswith("ours") else None
        r = streams(server.url, clients, a.requests, prompt_tokens, shared, a.max_tokens, seed=1)
        if before is not None:
            r.update(prefix_numbers(before, metrics(server.url)))
        r.update(engine=engine, clients=clients, prompt_words=prompt_tokens, system_words=system_tokens,
                 peak_rss_mib=server.peak_rss_mib(), alive=server.alive())
    if before is not None:
        print(f"{engine:9s} prefill tokens computed {r['prefill_computed']:.0f} of {r['prompt_tokens']:.0f} "
              f"({r['prefix_cached']:.0f} from the prefix cache), KV bytes held "
              f"{r['kv_bytes'] / 2**20:.1f} MiB, by the slots {r['slot_kv_bytes'] / 2**20:.1f} MiB", flush=True)
    print(f"{engine:9s} prompt {prompt_tokens:5d} system {system_tokens:5d} clients {clients:3d}: "
          f"{r['output_tokens_per_s']:8.1f} tok/s, ttft p50 {r['ttft_p50_s'] * 1000:7.0f} p99 "
          f"{r['ttft_p99_s'] * 1000:7.0f} ms, itl p50 {r['itl_p50_s'] * 1000:6.1f} p99 {r['itl_p99_s'] * 1000:6.1f} ms, "
          f"peak RSS {r['peak_rss_mib']:7.1f} MiB, {r['requests']} requests, prompt tokens "
          f"{r['prompt_tokens_mean'] or 0:.0f}, errors {r['errors']} {r['first_error']}", flush=True)
    return r


def summarise(results, rounds):
    """Ours over each peer per configuration: the median over rounds of each round's ratio, and its range."""
    print(f"\nours / each peer, median of {rounds} round(s) (range): output tokens/s; time to first token p99; peak RSS")
    for r in results:
        if r["engine"] == "ours" or r["round"] != 0:
            continue
        same = lambda x, engine, k: x["engine"] == engine and x["round"] == k and all(x[c] == r[c] for c in CONFIG_KEYS)
        ratios = {"tok/s": [], "ttft p99": [], "RSS": []}
        for k in range(rounds):
            mine = next((x for x in results if same(x, "ours", k)), None)
            peer = next((x for x in results if same(x, r["engine"], k)), None)
            if mine is None or peer is None:  # (ours not among --engines)
                continue
            ratios["tok/s"].append(mine["output_tokens_per_s"] / peer["output_tokens_per_s"])
            ratios["ttft p99"].append(mine["ttft_p99_s"] / peer["ttft_p99_s"])
            ratios["RSS"].append(mine["peak_rss_mib"] / peer["peak_rss_mib"])
        if not ratios["tok/s"]:
            continue
        shown = ", ".join(f"{name} x{statistics.median(v):.2f} ({min(v):.2f}-{max(v):.2f})" for name, v in ratios.items())
        print(f"  vs {r['engine']:9s} prompt {r['prompt_words']:5d} system {r['system_words']:5d} "
              f"clients {r['clients']:3d}: {shown}")


def load(url, clients, seconds, max_tokens):
    host, port = host_port(url)
    deadline = time.perf_counter() + seconds
    results, errors, elapsed = run_clients(clients, 0, lambda k: time.perf_counter() < deadline,
                                           lambda rng: one_request(host, port, max_tokens, rng))
    ttft = [r[0] for r in results]  # (elapsed: the last requests finish after the deadline)
    tokens = sum(r[1] for r in results)
    return {"requests": len(ttft), "elapsed_s": elapsed, "requests_per_s": len(ttft) / elapsed,
            "tokens_per_s": tokens / elapsed, "tokens": tokens,
            "ttft_p50_s": statistics.median(ttft) if ttft else float("nan"), "ttft_p99_s": percentile(ttft, 0.99),
            "errors": len(errors), "first_error": errors[0] if errors else ""}


def main():
    p = argument_parser(__doc__)
    p.add_argument("--clients", type=int, nargs="+", default=[32], help="(several with --engines)")
    p.add_argument("--seconds", type=float, default=20)
    p.add_argument("--max-tokens", type=int, default=None, help="per request (default 48; 128 with --engines)")
    p.add_argument("--warmup-seconds", type=float, default=10, help="of the same load before the memory is read")
    p.add_argument("--parallel", type=int, nargs="+", default=[8, 1])
    p.add_argument("--threads", default="1", help="the servers' threads (NANOFORMER_THREADS, llama-server -t)")
    p.add_argument("--json", help="also write the results here")
    p.add_argument("--engines", nargs="+", choices=["ours", "ours-noprefix", "llamacpp", "ik_llama"],
                   help="compare servers on --gguf (ours-noprefix: ours with --cache-budget 0)")
    p.add_argument("--gguf", help="the GGUF file every engine serves (with --engines)")
    p.add_argument("--prompt-tokens", type=int, nargs="+", default=[256, 2048])
    p.add_argument("--system-tokens", type=int, nargs="+", default=[0, 1024])
    p.add_argument("--requests", type=int, default=2, help="per client, one after another (with --engines)")
    p.add_argument("--system-prompts", type=int, default=1,
                   help="different system prompts, each request after one of them at random (with --engines)")
    p.add_argument("--parallel-engines", type=int, default=None,
                   help="the servers' --parallel (with --engines; default: the clients)")
    p.add_argument("--rounds", type=int, default=1, help="every configuration this many times, engines alternating (with --engines)")
    p.add_argument("--plot", help="a chart of the medians (PNG or SVG; needs matplotlib) (with --engines)")
    a = p.parse_args()
    if a.engines:
        if not a.gguf:
            p.error("--engines needs --gguf (the file every engine serves)")
        a.max_tokens = a.max_tokens or 128
        a.system_tokens_max = max(a.system_tokens)
        results = compare_engines(a)
        if a.json:
            with open(a.json, "w") as f:
                json.dump(results, f, indent=1)
        return
    if len(a.clients) != 1:
        p.error("one --clients count without --engines")
    a.clients, a.max_tokens = a.clients[0], a.max_tokens or 48
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
