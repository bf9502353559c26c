"""What the scripts of tools/serve/ share: `nanoformer serve` started on a free loopback port and
stopped, their command line, and their checks.

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
        with open(f"/proc/{self.process.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return float("nan")

    def alive(self):
        return self.process.poll() is None

    def __exit__(self, *exc):
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout=30)
        os.unlink(self.log.name)
        if code != 0 and exc[0] is None:
            raise RuntimeError(f"nanoformer serve exited with {code}")


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
