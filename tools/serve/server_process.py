"""What the scripts of tools/serve/ share: `nanoformer serve` (or a peer's `llama-server`) started
on a free loopback port and stopped, their command line, and their checks.

    with ServerProcess(["--model", "minimind2-small", "--tokenizer", "tok.json"]) as server:
        server.url            # http://127.0.0.1:PORT
        server.rss_mib()      # the server's resident memory now
"""
import argparse
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class ServerProcess:
    def __init__(self, args, binary=os.path.join(ROOT, "build", "nanoformer"), env=None):
        self.args = [binary, "serve", "--port", "0"] + list(args)
        self.env = dict(os.environ, **(env or {}))
        self.log = tempfile.NamedTemporaryFile(prefix="nanoformer-serve-", suffix=".log", delete=False)

    def __enter__(self):
        self.process = subprocess.Popen(self.args, stderr=self.log, stdout=subprocess.DEVNULL, env=self.env, cwd=ROOT)
        deadline = time.time() + 120
        while time.time() < deadline:
            text = open(self.log.name).read()
            found = re.search(r"listening on (http://[\d.]+:\d+)", text)
            if found:
                self.url = found.group(1)
                return self
            if self.process.poll() is not None:
                raise RuntimeError("nanoformer serve exited: " + text)
            time.sleep(0.1)
        raise RuntimeError("nanoformer serve did not start: " + open(self.log.name).read())

    def rss_mib(self):
        return status_mib(self.process.pid, "VmRSS")

    def alive(self):
        return self.process.poll() is None

    def peak_rss_mib(self):
        return status_mib(self.process.pid, "VmHWM")

    def __exit__(self, *exc):
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout=30)
        os.unlink(self.log.name)
        if code != 0 and exc[0] is None:
            raise RuntimeError(f"nanoformer serve exited with {code}")


class PeerServerProcess:
    """A peer's `llama-server` (mainline llama.cpp or ik_llama.cpp, built by tools/peers/ into
    PEERS/NAME/bin) on a free loopback port, ready once its /health answers 200."""

    def __init__(self, name, model, parallel, context, threads, peers_dir=os.path.join(ROOT, ".cache", "peers")):
        binary = os.path.join(peers_dir, name, "bin", "llama-server")
        if not os.access(binary, os.X_OK):
            raise RuntimeError(f"{binary} is not built: run tools/peers/build_{'llamacpp' if name == 'llamacpp' else 'ik_llama'}.sh")
        self.port = free_port()
        # -c is the slots' context together; ik_llama.cpp repacks its weights at load (-rtr), as bench_inference runs it
        self.args = [binary, "-m", os.path.abspath(model), "--host", "127.0.0.1", "--port", str(self.port), "-t", str(threads),
                     "-np", str(parallel), "-c", str(context * parallel)] + (["-rtr"] if name == "ik_llama" else [])
        self.env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(peers_dir, name, "bin"))
        self.log = tempfile.NamedTemporaryFile(prefix=f"{name}-server-", suffix=".log", delete=False)
        self.url = f"http://127.0.0.1:{self.port}"

    def __enter__(self):
        # (in a folder of its own: ik_llama.cpp's server writes llama.log where it runs)
        self.folder = tempfile.TemporaryDirectory(prefix="llama-server-")
        self.process = subprocess.Popen(self.args, stdout=self.log, stderr=subprocess.STDOUT, env=self.env,
                                        cwd=self.folder.name)
        deadline = time.time() + 300
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.args[0]} exited: " + open(self.log.name).read()[-2000:])
            try:
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                connection.request("GET", "/health")
                if connection.getresponse().status == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"{self.args[0]} did not start: " + open(self.log.name).read()[-2000:])

    rss_mib = ServerProcess.rss_mib
    alive = ServerProcess.alive

    def peak_rss_mib(self):
        return status_mib(self.process.pid, "VmHWM")

    def __exit__(self, *exc):
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
        os.unlink(self.log.name)
        self.folder.cleanup()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status_mib(pid, key):
    """A memory line of the process's /proc status (VmRSS: resident now, VmHWM: its high-water mark)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def argument_parser(doc):
    """A script's parser: its docstring as help, and the model to serve (a preset has random weights)."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="minimind2-small", help="model or preset (default: %(default)s)")
    p.add_argument("--tokenizer", default="/work/shared/data/minimind2_tokenizer.json", help="(default: %(default)s)")
    return p


def check(condition, what):
    """Prints `ok` or `FAIL` and the claim; exits non-zero at the first failure."""
    print(("ok    " if condition else "FAIL  ") + what)
    if not condition:
        sys.exit(1)


def stream_tokens(host, port, stamps, stop, prompt):
    """A streamed text completion whose chunk arrival times go to `stamps` until `stop` is set."""
    body = {"prompt": prompt, "stream": True, "max_tokens": 100000, "temperature": 0.8, "grammar": "root ::= [a-z ]*"}
    connection = http.client.HTTPConnection(host, port, timeout=600)
    connection.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
    response = connection.getresponse()
    while not stop.is_set():
        line = response.readline()
        if not line:
            break
        if line.startswith(b"data: {"):
            stamps.append(time.perf_counter())
    connection.close()
