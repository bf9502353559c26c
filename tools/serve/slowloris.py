"""Slowloris against `nanoformer serve`: normal streaming chat clients measured alone, then again
while many attacker connections each trickle an endless request head, a byte per connection every
--trickle seconds, reconnecting as soon as the server drops them (as slowloris does). Prints the
normal clients' time to first token (p50, p99) in both runs and their ratio, whether /health
answered every probe (one each 0.5 s, 5 s allowed), and how the server dealt with the attackers
(408 at the request deadline, 503 beyond --max-connections, plain closes). Then one client sends a
chunked body of --chunked-mib MiB (64 KiB chunks) to /v1/chat/completions: the status it gets (413
once the body passes --max-body), how much it could send, and the server's RSS before and after
(a server started here). Python's standard library only. Against a running server (--url), or one
it starts itself (--model, --tokenizer, --serve-args).

    python tools/serve/slowloris.py --attackers 200 --clients 16
    python tools/serve/slowloris.py --url http://127.0.0.1:8998
"""
import http.client
import multiprocessing
import os
import random
import selectors
import socket
import threading
import time

from load_test import one_request
from server_process import argument_parser, check, ROOT, ServerProcess


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


class HealthProbe(threading.Thread):
    """GET /health every 0.5 s until stopped: how many answered 200 within 5 s, and the slowest."""

    def __init__(self, host, port):
        super().__init__(daemon=True)
        self.host, self.port = host, port
        self.stopped = threading.Event()
        self.probes, self.answered, self.slowest = 0, 0, 0.0

    def run(self):
        while not self.stopped.is_set():
            start = time.perf_counter()
            self.probes += 1
            try:
                connection = http.client.HTTPConnection(self.host, self.port, timeout=5)
                connection.request("GET", "/health")
                if connection.getresponse().status == 200:
                    self.answered += 1
                connection.close()
            except OSError:
                pass
            self.slowest = max(self.slowest, time.perf_counter() - start)
            self.stopped.wait(0.5)

    def stop(self):
        self.stopped.set()
        self.join()


class Attackers(multiprocessing.Process):
    """`count` connections that each send a request head a byte at a time, forever; one the server
    drops is counted by how (408, 503 or closed) and replaced at once. A process of its own, as an
    attacker is another machine: its work does not slow the measuring clients (one GIL)."""

    HEAD = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Slow: "

    def __init__(self, host, port, count, trickle):
        super().__init__(daemon=True)
        self.host, self.port, self.count, self.trickle = host, port, count, trickle
        self.stopped = multiprocessing.Event()
        self.report = multiprocessing.Queue()
        self.opened, self.refused_connect = 0, 0
        self.drops = {"408": 0, "503": 0, "other answer": 0, "closed": 0}

    def connect(self):
        try:
            s = socket.create_connection((self.host, self.port), timeout=5)
            s.sendall(self.HEAD[:1])
        except OSError:
            self.refused_connect += 1
            return
        s.setblocking(False)
        self.selector.register(s, selectors.EVENT_READ, 1)  # data: bytes of HEAD sent so far
        self.opened += 1

    def drop(self, key, answer):
        kind = "closed" if not answer else answer[9:12].decode(errors="replace")
        self.drops[kind if kind in self.drops else "other answer"] += 1
        self.selector.unregister(key.fileobj)
        key.fileobj.close()

    def run(self):
        self.selector = selectors.DefaultSelector()
        for _ in range(self.count):
            self.connect()
        while not self.stopped.is_set():
            tick = time.perf_counter() + self.trickle
            while time.perf_counter() < tick and not self.stopped.is_set():  # answers and closes
                for key, _ in self.selector.select(timeout=max(0.0, tick - time.perf_counter())):
                    try:
                        answer = key.fileobj.recv(4096)
                    except OSError:
                        answer = b""
                    self.drop(key, answer)
            for key in list(self.selector.get_map().values()):  # a byte each
                sent = key.data
                byte = self.HEAD[sent:sent + 1] if sent < len(self.HEAD) else b"a"
                try:
                    key.fileobj.send(byte)
                    self.selector.modify(key.fileobj, selectors.EVENT_READ, sent + 1)
                except OSError:
                    self.drop(key, b"")
            for _ in range(self.count - len(self.selector.get_map())):
                self.connect()
        self.report.put({"opened": self.opened, "refused_connect": self.refused_connect, "drops": self.drops,
                         "open_at_end": len(self.selector.get_map())})
        for key in list(self.selector.get_map().values()):
            key.fileobj.close()

    def stop(self):
        """Stops the attack; what happened to its connections."""
        self.stopped.set()
        result = self.report.get(timeout=60)
        self.join()
        return result


def run_clients(host, port, clients, requests, max_tokens, timeout):
    """`clients` threads, each `requests` streamed chats one after another: times to first token, errors."""
    ttft, errors = [], []
    lock = threading.Lock()

    def client(index):
        rng = random.Random(index)
        for _ in range(requests):
            try:
                first, _ = one_request(host, port, max_tokens, rng, timeout)
                with lock:
                    ttft.append(first)
            except Exception as e:  # noqa: BLE001 - reported
                with lock:
                    errors.append(str(e))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return ttft, errors


def measure(host, port, a, attackers):
    attack = None
    if attackers:  # forked before this process starts a thread
        attack = Attackers(host, port, attackers, a.trickle)
        attack.start()
    probe = HealthProbe(host, port)
    probe.start()
    if attack:
        time.sleep(a.settle)  # every attacker connected and trickling
    ttft, errors = run_clients(host, port, a.clients, a.requests, a.max_tokens, a.client_timeout)
    attacked = attack.stop() if attack else None
    probe.stop()
    label = f"with {attackers} attackers" if attackers else "without attackers"
    print(f"{label:22s}: {len(ttft)} requests, first token p50 {percentile(ttft, 0.5) * 1000:.0f} ms, "
          f"p99 {percentile(ttft, 0.99) * 1000:.0f} ms, errors {len(errors)} {errors[:1]}; "
          f"/health {probe.answered}/{probe.probes} (slowest {probe.slowest * 1000:.0f} ms)", flush=True)
    if attacked:
        print(f"{'':22s}  attackers: {attacked['opened']} connections opened, {attacked['open_at_end']} open at the end, "
              f"dropped {attacked['drops']}, connects refused {attacked['refused_connect']}", flush=True)
    return ttft, errors, probe


def chunked_flood(host, port, mib):
    """A chunked body of `mib` MiB sent until the server answers: its status and the bytes it took."""
    sock = socket.create_connection((host, port), timeout=30)
    sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Transfer-Encoding: chunked\r\n\r\n")
    chunk = b"10000\r\n" + b"a" * 65536 + b"\r\n"
    sent, selector = 0, selectors.DefaultSelector()
    selector.register(sock, selectors.EVENT_READ)
    try:
        while sent < mib << 20 and not selector.select(timeout=0):
            sock.sendall(chunk)
            sent += 65536
    except OSError:  # the server closed the connection after its answer
        pass
    response = b""
    try:
        while True:
            data = sock.recv(4096)
            if not data:
                break
            response += data
    except OSError:
        pass
    sock.close()
    status = int(response.split(b" ")[1]) if response.startswith(b"HTTP/1.1 ") else 0
    return status, sent


def main():
    p = argument_parser(__doc__)
    p.add_argument("--url", help="a running server (default: start one with --model, --tokenizer, --serve-args)")
    p.add_argument("--serve-args", default="--context 512 --parallel 16 --timeout 10",
                   help="of the server started here (default: %(default)s)")
    p.add_argument("--attackers", type=int, default=200)
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--requests", type=int, default=4, help="streamed chats per client, one after another")
    p.add_argument("--max-tokens", type=int, default=16)
    p.add_argument("--trickle", type=float, default=1.0, help="seconds between two bytes of an attacker")
    p.add_argument("--settle", type=float, default=12.0,
                   help="seconds the attackers run before the clients start (past a first round of request deadlines)")
    p.add_argument("--threads", default="1", help="NANOFORMER_THREADS of the server started here")
    p.add_argument("--binary", default=os.path.join(ROOT, "build", "nanoformer"),
                   help="the nanoformer started here (another build to compare; default: %(default)s)")
    p.add_argument("--client-timeout", type=float, default=60, help="seconds a normal request may take")
    p.add_argument("--chunked-mib", type=int, default=100, help="MiB of the chunked body sent at the end (0: none)")
    a = p.parse_args()

    def flood(url, rss):
        if a.chunked_mib <= 0:
            return
        host, port = url.replace("http://", "").rstrip("/").split(":")
        before = rss()
        status, sent = chunked_flood(host, int(port), a.chunked_mib)
        after = rss()
        print(f"chunked body of {a.chunked_mib} MiB: {status} after {sent / 2**20:.2f} MiB sent; "
              f"server RSS {before:.1f} -> {after:.1f} MiB ({after - before:+.1f})", flush=True)
        check(status == 413 and sent < a.chunked_mib << 20, "the chunked body got 413 before it was all sent")
        if before == before:  # known: a server started here
            check(after - before < 10, "the server's RSS grew by less than 10 MiB")

    def run(url, rss):
        host, port = url.replace("http://", "").rstrip("/").split(":")
        port = int(port)
        run_clients(host, port, a.clients, 1, a.max_tokens, a.client_timeout)  # warm-up: threads, arenas, slot caches
        base, base_errors, base_probe = measure(host, port, a, 0)
        attacked, attacked_errors, attacked_probe = measure(host, port, a, a.attackers)
        ratio = percentile(attacked, 0.99) / percentile(base, 0.99)
        print(f"p99 with / without attackers: x{ratio:.2f}; p50 x{percentile(attacked, 0.5) / percentile(base, 0.5):.2f}")
        flood(url, rss)
        check(not base_errors and not attacked_errors, "every normal request was answered")
        check(base_probe.answered == base_probe.probes and attacked_probe.answered == attacked_probe.probes,
              "/health answered every probe")
        check(ratio <= 2.0, "first-token p99 under attack within 2x of the run without")

    if a.url:
        run(a.url, lambda: float("nan"))
    else:
        args = ["--model", a.model, "--tokenizer", a.tokenizer] + a.serve_args.split()
        with ServerProcess(args, binary=a.binary, env={"NANOFORMER_THREADS": a.threads}) as server:
            run(server.url, server.rss_mib)
            print(f"server RSS {server.rss_mib():.1f} MiB, alive: {server.alive()}")


if __name__ == "__main__":
    main()
