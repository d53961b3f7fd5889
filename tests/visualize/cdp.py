"""A minimal Chrome DevTools Protocol client (the `websockets` package, which
streamlit brings) for checking a live page in headless Chromium: open a URL,
wait until a JavaScript expression is truthy, return its value."""
import json
import socket
import subprocess
import time
import urllib.request
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def evaluate_when_ready(browser: str, url: str, expression: str, profile: Path,
                        timeout: float = 60.0):
    """Load `url` in headless Chromium and poll `expression` (JavaScript) until
    it returns a truthy value; RETURNS that value (None on timeout)."""
    from websockets.sync.client import connect

    port = free_port()
    proc = subprocess.Popen([browser, "--headless", "--no-sandbox", "--disable-gpu",
                             "--disable-background-networking", "--disable-component-update",
                             "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
                             f"--remote-debugging-port={port}", "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + timeout
        target = None
        while target is None and time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json") as answer:
                    pages = [t for t in json.load(answer) if t.get("type") == "page"]
                target = pages[0]["webSocketDebuggerUrl"] if pages else None
            except OSError:
                time.sleep(0.2)
        if target is None:
            return None

        with connect(target, max_size=64 * 2 ** 20, open_timeout=timeout) as conn:
            counter = 0

            def call(method, **params):
                nonlocal counter
                counter += 1
                conn.send(json.dumps({"id": counter, "method": method, "params": params}))
                while True:
                    message = json.loads(conn.recv(timeout=timeout))
                    if message.get("id") == counter:
                        return message.get("result", {})

            call("Page.navigate", url=url)
            while time.monotonic() < deadline:
                result = call("Runtime.evaluate", expression=expression, returnByValue=True)
                value = result.get("result", {}).get("value")
                if value:
                    return value
                time.sleep(0.5)
            return None
    finally:
        proc.terminate()
        proc.wait(timeout=10)
