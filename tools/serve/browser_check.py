"""The web chat page of `nanoformer serve` in a real headless Chromium (Debian's `chromium`), driven
over the DevTools protocol (scripts/install-serve-tools-deps.sh, scripts/install-python.sh): the page loads, a message is typed into
the box and sent with Enter, the answer streams in (the text is seen growing), the stats line shows
tokens/s, a second turn keeps the conversation; then a screenshot is written.

    python tools/serve/browser_check.py --out serve-page.png
"""
import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request

import websocket

from server_process import argument_parser, check, ServerProcess


class Browser:
    def __init__(self, chromium, width, height):
        self.profile = tempfile.mkdtemp(prefix="nanoformer-chromium-")
        self.process = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-port=0",
             f"--user-data-dir={self.profile}", f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = os.path.join(self.profile, "DevToolsActivePort")
        for _ in range(300):
            if os.path.exists(port_file) and open(port_file).read().strip():
                break
            time.sleep(0.1)
        port = open(port_file).read().split()[0]
        pages = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json"))
        page = next(p for p in pages if p["type"] == "page")
        self.socket = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=60)
        self.next_id = 0

    def call(self, method, **params):
        self.next_id += 1
        self.socket.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    def eval(self, expression):
        return self.call("Runtime.evaluate", expression=expression, returnByValue=True)["result"].get("value")

    def wait_for(self, expression, seconds=60):
        deadline = time.time() + seconds
        while time.time() < deadline:
            value = self.eval(expression)
            if value:
                return value
            time.sleep(0.05)
        raise RuntimeError(f"timed out waiting for {expression}")

    def type_and_send(self, text):
        self.eval("document.getElementById('input').focus()")
        self.call("Input.insertText", text=text)
        for kind in ("keyDown", "keyUp"):
            self.call("Input.dispatchKeyEvent", type=kind, key="Enter", code="Enter", windowsVirtualKeyCode=13,
                      **({"text": "\r"} if kind == "keyDown" else {}))

    def close(self):
        self.socket.close()
        self.process.terminate()
        self.process.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


def main():
    p = argument_parser(__doc__)
    p.add_argument("--chromium", default="chromium")
    p.add_argument("--out", default="serve-page.png")
    a = p.parse_args()
    with ServerProcess(["--model", a.model, "--tokenizer", a.tokenizer, "--context", "512", "--name", a.model],
                       env={"NANOFORMER_THREADS": "1"}) as server:
        browser = Browser(a.chromium, 1000, 760)
        try:
            browser.call("Page.enable")
            browser.call("Page.navigate", url=server.url + "/")
            title = browser.wait_for("document.readyState === 'complete' && document.title")
            check(title == "nanoformer chat", f"the page loads: title {title!r}")
            model = browser.wait_for("document.getElementById('model').textContent")
            check(a.model in model, f"it shows the model from /v1/models: {model!r}")
            browser.eval("document.getElementById('max_tokens').value = 60")
            browser.type_and_send("Hello! Who are you?")
            last = "document.querySelector('.msg.assistant:last-child .content').textContent"
            lengths = set()
            while "tokens/s" not in (browser.eval("document.getElementById('stats').textContent") or ""):
                lengths.add(len(browser.eval(last) or ""))
                time.sleep(0.02)
            answer = browser.eval(last)
            check(len(lengths) > 2, f"the answer streams in: seen at {len(lengths)} different lengths on its way")
            check(len(answer) > 0, f"the answer appears: {answer[:60]!r}...")
            stats = browser.eval("document.getElementById('stats').textContent")
            check("tokens/s" in stats, f"the stats line: {stats!r}")
            browser.type_and_send("Tell me more.")
            browser.wait_for("document.querySelectorAll('.msg').length === 4 && "
                             "document.getElementById('stats').textContent.includes('tokens/s') && "
                             "!document.getElementById('send').disabled")
            roles = browser.eval("[...document.querySelectorAll('.msg .role')].map(e => e.textContent).join(',')")
            check(roles == "user,assistant,user,assistant", f"the conversation is kept: {roles}")
            shot = browser.call("Page.captureScreenshot", format="png")
            with open(a.out, "wb") as f:
                f.write(base64.b64decode(shot["data"]))
            print(f"screenshot: {a.out}")
        finally:
            browser.close()


if __name__ == "__main__":
    main()
