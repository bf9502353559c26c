"""What a large grammar costs the server: chains of unit rules (r0 ::= r1, r1 ::= r2, ...) of N rules
sent as a completion's `grammar`, one at a time and then four at once, while a streaming client
decodes. Prints each request's time and status (past the matcher's budget of 65,536 rule positions a
step, a 400 naming `grammar`), and the running stream's usual and longest gap between two tokens
while the grammars compile. A random-weight model of minimind2-small's shape, --parallel 2.

    python tools/serve/grammar_budget.py --rules 10000,20000,50000,100000
"""
import http.client
import json
import statistics
import threading
import time

from server_process import argument_parser, check, ServerProcess, stream_tokens


def chain(rules):
    lines = ["root ::= r0"] + [f"r{i} ::= r{i + 1}" for i in range(rules - 1)] + [f'r{rules - 1} ::= "x"']
    return "\n".join(lines) + "\n"


def request(host, port, grammar, out):
    body = json.dumps({"prompt": "x", "max_tokens": 1, "grammar": grammar})
    start = time.perf_counter()
    connection = http.client.HTTPConnection(host, port, timeout=600)
    connection.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
    response = connection.getresponse()
    answer = json.loads(response.read())
    out.append((response.status, time.perf_counter() - start, len(body), answer))


def main():
    p = argument_parser(__doc__)
    p.add_argument("--rules", default="10000,20000,50000,100000")
    p.add_argument("--concurrent-rules", type=int, default=50000)
    p.add_argument("--threads", default="2")
    a = p.parse_args()
    with ServerProcess(["--model", a.model, "--tokenizer", a.tokenizer, "--parallel", "2", "--max-body", str(8 << 20)],
                       env={"NANOFORMER_THREADS": a.threads}) as server:
        host, port = server.url.split("//")[1].split(":")
        port = int(port)
        stop, stamps = threading.Event(), []
        streamer = threading.Thread(target=stream_tokens, args=(host, port, stamps, stop, "Story:"))
        streamer.start()
        time.sleep(3)
        windows = []
        for rules in [int(r) for r in a.rules.split(",")]:
            out = []
            start = time.perf_counter()
            request(host, port, chain(rules), out)
            windows.append((start, time.perf_counter()))
            status, seconds, size, answer = out[0]
            detail = answer["error"]["message"][:110] if status != 200 else "compiled and answered"
            print(f"{rules:7d} unit rules ({size / 1e6:.2f} MB): {status} in {seconds * 1000:7.0f} ms  {detail}")
            check(status in (200, 400), f"{rules} rules: 200 or a 400, never a 5xx")
        out = []
        start = time.perf_counter()
        threads = [threading.Thread(target=request, args=(host, port, chain(a.concurrent_rules), out)) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        windows.append((start, time.perf_counter()))
        print(f"4 x {a.concurrent_rules} rules at once: " +
              ", ".join(f"{status} in {seconds * 1000:.0f} ms" for status, seconds, _, _ in out))
        time.sleep(1)
        stop.set()
        streamer.join()
        check(server.alive(), "the server is alive")
    gaps_before = [b - a for a, b in zip(stamps, stamps[1:]) if b <= windows[0][0]]
    gaps_during = [b - a for a, b in zip(stamps, stamps[1:]) if any(a < end and b > begin for begin, end in windows)]
    usual = statistics.median(gaps_before)
    print(f"the running stream: usual gap {usual * 1000:.1f} ms, longest while grammars compiled "
          f"{max(gaps_during) * 1000:.1f} ms ({len(gaps_during)} gaps)")


if __name__ == "__main__":
    main()
