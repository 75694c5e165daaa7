"""A minimal W3C WebDriver client (Python stdlib only) for headless Chromium via chromedriver,
plus the process handling the dashboard tests share. Everything listens on loopback only."""
import base64
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


def wait_port(port, timeout=20.0, proc=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listening on 127.0.0.1:{port} after {timeout} s")


def stop(proc, timeout=5):
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class WebDriverError(RuntimeError):
    pass


class Browser:
    """Starts chromedriver on `driver_port`, which starts headless Chromium with its DevTools on
    `devtools_port` and a throw-away profile. Use as a context manager: everything is stopped and
    removed on exit, also when the test fails."""

    def __init__(self, driver_port, devtools_port, width=1400, height=1000):
        self.driver_port = driver_port
        self.devtools_port = devtools_port
        self.size = (width, height)
        self.profile = None
        self.driver = None
        self.session = None

    def __enter__(self):
        self.profile = tempfile.mkdtemp(prefix="wdb-chromium-")
        self.driver = subprocess.Popen(
            [CHROMEDRIVER, f"--port={self.driver_port}", "--allowed-ips=127.0.0.1"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_port(self.driver_port, proc=self.driver)
            args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                    "--no-first-run", "--disable-component-update", "--disable-sync",
                    "--disable-dev-shm-usage", f"--user-data-dir={self.profile}",
                    f"--remote-debugging-port={self.devtools_port}",
                    f"--window-size={self.size[0]},{self.size[1]}"]
            caps = {"capabilities": {"alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": {"binary": CHROMIUM, "args": args},
                "goog:loggingPrefs": {"browser": "ALL"},
            }}}
            r = self._call("POST", "/session", caps)
            self.session = r["sessionId"]
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        if self.session:
            try:
                self._call("DELETE", f"/session/{self.session}", timeout=15)
            except Exception:
                pass
            self.session = None
        stop(self.driver)
        if self.profile:
            shutil.rmtree(self.profile, ignore_errors=True)
        return False

    def _call(self, method, path, body=None, timeout=120):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{self.driver_port}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                out = json.load(resp)
        except urllib.error.HTTPError as e:
            raise WebDriverError(f"{method} {path}: HTTP {e.code} {e.read()[:600]!r}") from None
        return out.get("value", out) if path != "/session" else out["value"]

    def s(self, method, path, body=None, timeout=120):
        return self._call(method, f"/session/{self.session}{path}", body, timeout)

    def get(self, url):
        self.s("POST", "/url", {"url": url})

    def js(self, script, *args):
        """Runs `script` as a function body in the page and returns its value."""
        return self.s("POST", "/execute/sync", {"script": script, "args": list(args)})

    def wait_for(self, script, timeout=30.0, what="condition"):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            last = self.js(script)
            if last:
                return last
            time.sleep(0.1)
        raise AssertionError(f"timed out after {timeout} s waiting for {what} (last value {last!r})")

    def click_at(self, x, y):
        """A real pointer click at viewport coordinates (goes through the page's event handlers)."""
        self.s("POST", "/actions", {"actions": [{
            "type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"},
            "actions": [{"type": "pointerMove", "duration": 0, "x": int(x), "y": int(y), "origin": "viewport"},
                        {"type": "pointerDown", "button": 0}, {"type": "pointerUp", "button": 0}]}]})
        self.s("DELETE", "/actions")

    def move_to(self, x, y):
        self.s("POST", "/actions", {"actions": [{
            "type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"},
            "actions": [{"type": "pointerMove", "duration": 0, "x": int(x), "y": int(y), "origin": "viewport"}]}]})

    def console_errors(self):
        """Browser log entries at SEVERE level (console.error, uncaught exceptions, failed loads)."""
        entries = self.s("POST", "/se/log", {"type": "browser"})
        return [e for e in entries if e.get("level") == "SEVERE"]

    def screenshot(self, path):
        png = base64.b64decode(self.s("GET", "/screenshot"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(png)
        return path
