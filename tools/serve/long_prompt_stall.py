"""What a long prompt arriving mid-run costs the streams already running: C streaming clients
decode while one client sends a prompt of L tokens; each running stream's longest gap between two
tokens during that prefill is compared with its usual gap, for --prefill-chunk CHUNK and for 0
(a whole prompt at once), each in a fresh server. A random-weight model of minimind2-small's shape
with a context of L + 512 tokens (its config written to a temporary file). The longest gap must
hold at most one prefill step (the server's /metrics says how long its longest took) and one
decode step. The streams are held to lower-case ASCII by a `grammar`: a random model's tokens are
often part of a UTF-8 character, whose text the server holds back until it is whole, which would
show as a gap of two steps where nothing stalled.

    python tools/serve/long_prompt_stall.py --prompt-tokens 16000 --clients 4 --chunk 512
"""
import http.client
import json
import os
import re
import statistics
import tempfile
import threading
import time

from server_process import argument_parser, check, ROOT, ServerProcess, stream_tokens


def run(url, clients, prompt_tokens):
    host, port = url.split("//")[1].split(":")
    port = int(port)
    stop = threading.Event()
    stamps = [[] for _ in range(clients)]
    threads = [threading.Thread(target=stream_tokens, args=(host, port, stamps[i], stop, f"Story {i}:"))
               for i in range(clients)]
    for t in threads:
        t.start()
    time.sleep(3)  # the streams run
    long_prompt = "the" + " the" * (prompt_tokens - 1)  # a token a word in byte-level BPE vocabularies
    start = time.perf_counter()
    connection = http.client.HTTPConnection(host, port, timeout=900)
    connection.request("POST", "/v1/completions", json.dumps({"prompt": long_prompt, "max_tokens": 1}),
                       {"Content-Type": "application/json"})
    answer = json.loads(connection.getresponse().read())
    end = time.perf_counter()
    connection.request("GET", "/metrics")
    metrics = connection.getresponse().read().decode()
    longest_step = float(re.search(r"^nanoformer_prefill_step_seconds_max (\S+)$", metrics, re.M).group(1))
    time.sleep(1)
    stop.set()
    for t in threads:
        t.join()
    gaps_before, gaps_during = [], []
    for s in stamps:
        for a, b in zip(s, s[1:]):
            (gaps_during if a < end and b > start else gaps_before if b <= start else []).append(b - a)
    return {"prompt_tokens": answer["usage"]["prompt_tokens"], "prefill_s": end - start,
            "usual_gap_ms": 1000 * statistics.median(gaps_before), "longest_gap_during_ms": 1000 * max(gaps_during),
            "longest_prefill_step_ms": 1000 * longest_step}


def main():
    p = argument_parser(__doc__)
    p.add_argument("--prompt-tokens", type=int, default=16000)
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--chunk", type=int, default=512)
    p.add_argument("--threads", default="2")
    a = p.parse_args()
    config = json.load(open(os.path.join(ROOT, "configs", "minimind2-small.json")))
    config["max_seq_len"] = a.prompt_tokens + 512
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(config, f)
    for chunk in [a.chunk, 0]:
        with ServerProcess(["--model", f.name, "--tokenizer", a.tokenizer, "--parallel", str(a.clients + 1),
                            "--prefill-chunk", str(chunk), "--timeout", "900"],
                           env={"NANOFORMER_THREADS": a.threads}) as server:
            r = run(server.url, a.clients, a.prompt_tokens)
        print(f"--prefill-chunk {chunk:5d}: a {r['prompt_tokens']}-token prompt prefilled in {r['prefill_s']:.1f} s; "
              f"the running streams' usual gap {r['usual_gap_ms']:.0f} ms, longest during it {r['longest_gap_during_ms']:.0f} ms; "
              f"the longest prefill step (/metrics) {r['longest_prefill_step_ms']:.0f} ms")
        if chunk:  # a gap holds at most one prefill step and one decode step (the usual gap, with 20 ms of slack)
            check(r["longest_gap_during_ms"] <= r["longest_prefill_step_ms"] + r["usual_gap_ms"] + 20,
                  f"the running streams waited at most one chunk's time (longest gap {r['longest_gap_during_ms']:.0f} ms "
                  f"<= longest chunk {r['longest_prefill_step_ms']:.0f} ms + one decode step {r['usual_gap_ms']:.0f} ms "
                  f"+ 20 ms)")
    os.unlink(f.name)


if __name__ == "__main__":
    main()
