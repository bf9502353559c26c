"""Starts `nanoformer serve` on a free loopback port for the scripts of tools/serve/ and stops it.

    with ServerProcess(["--model", "minimind2-small", "--tokenizer", "tok.json"]) as server:
        server.url            # http://127.0.0.1:PORT
        server.rss_mib()      # the server's resident memory now
"""
import os
import re
import signal
import subprocess
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
