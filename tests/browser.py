"""A page as a person sees it, in Debian's headless Chromium: the DOM after its scripts ran, the
images it loaded, the errors it logged, and a screenshot.

Chromium runs headless with its DevTools protocol on a loopback port, driven over one websocket
(`websocket-client`): one load of the page answers every question, where its command-line
`--dump-dom` and `--screenshot` would each load it again and neither reports the console.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import shutil
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium")  # Debian's package; `.ci/run` installs it
WINDOW = (1280, 900)

# every <img> of the page, whether it loaded (a broken or missing image has no natural width)
IMAGES = """[...document.images].map(img => ({
    src: img.currentSrc.slice(0, 80), alt: img.alt, complete: img.complete,
    width: img.naturalWidth, shown: img.getBoundingClientRect().width
}))"""


class Page:
    """One Chromium tab on a page: `evaluate` runs JavaScript in it; `errors` holds every console
    error, uncaught exception and failed load it has logged since it was opened."""

    def __init__(self, socket: Any) -> None:
        self._socket = socket
        self._next_id = 0
        self.errors: list[str] = []
        self._events: list[str] = []  # the names of the events read so far

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        """A DevTools command's result; the events that arrive before it are read on the way."""
        self._next_id += 1
        self._socket.send(json.dumps({"id": self._next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self._socket.recv())
            if message.get("id") == self._next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self._event(message)

    def _event(self, message: dict[str, Any]) -> None:
        method, params = message.get("method"), message.get("params", {})
        if method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
            said = " ".join(str(a.get("value", a.get("description", ""))) for a in params["args"])
            self.errors.append(f"console.{params['type']}: {said}")
        elif method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            said = details.get("exception", {}).get("description") or details.get("text", "")
            self.errors.append(f"uncaught: {said}")
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            entry = params["entry"]  # the browser's own: a resource that failed to load, a CSP refusal
            self.errors.append(f"{entry['source']}: {entry['text']} {entry.get('url', '')}".rstrip())
        self._events.append(method or "")

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (awaited when it is a promise)."""
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression!r} threw: {result['exceptionDetails']}")
        return result["result"].get("value")

    def open(self, url: str, timeout: float = 30) -> None:
        """Navigate to `url` and return once its load event fired (its images included): read from
        the events, since until the new document commits the old one answers `document.readyState`.
        A route within the same document (`#/...`) loads nothing: wait for what it renders."""
        self._events.clear()
        navigated = self.send("Page.navigate", url=url)
        if "errorText" in navigated:
            raise RuntimeError(f"{url}: {navigated['errorText']}")
        if "loaderId" not in navigated:  # within the document (a single-page app's `#/...` route)
            return
        deadline = time.monotonic() + timeout
        while "Page.loadEventFired" not in self._events:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url} did not load in {timeout:g}s; errors: {self.errors}")
            self._event(json.loads(self._socket.recv()))

    def wait_for(self, expression: str, timeout: float = 30) -> Any:
        """Poll a JavaScript expression until it is truthy (a single-page app renders after load)."""
        deadline = time.monotonic() + timeout
        while not (value := self.evaluate(expression)):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{expression!r} still false after {timeout:g}s; errors: {self.errors}")
            time.sleep(0.2)
        return value

    def images(self) -> list[dict[str, Any]]:
        """Every <img>: its source, alt text, whether it loaded (`width`, its natural width) and
        how wide it is drawn (`shown`)."""
        return self.evaluate(IMAGES)

    def screenshot(self, path: Path) -> bytes:
        """The page as drawn in the window, as PNG, also written to `path` (to look at when a test fails)."""
        png = base64.b64decode(self.send("Page.captureScreenshot", format="png")["data"])
        path.write_bytes(png)
        return png


def distinct_colours(png: bytes) -> int:
    """How many colours a screenshot holds: 1 for a blank page, a few for bare text, many for figures."""
    from PIL import Image

    colours = Image.open(io.BytesIO(png)).convert("RGB").getcolors(maxcolors=1 << 24)
    return len(colours or [])


@contextlib.contextmanager
def chromium_page(url: str, window: tuple[int, int] = WINDOW, timeout: float = 30) -> Iterator[Page]:
    """A headless Chromium showing `url` in a tab of `window` (width, height) pixels, stopped on exit."""
    import websocket

    assert CHROMIUM is not None, "chromium is not on PATH"
    with tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        command = [
            CHROMIUM,
            "--headless=new",
            "--disable-gpu",
            "--no-sandbox",  # root, as in CI, cannot start the sandbox
            "--disable-dev-shm-usage",  # a container's /dev/shm is too small for its renderer
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--disable-background-networking",  # no update or safe-browsing requests to fail
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
            f"--window-size={window[0]},{window[1]}",
            f"--user-data-dir={profile}",
            "--remote-debugging-address=127.0.0.1",
            "--remote-debugging-port=0",  # any free port, written to DevToolsActivePort
            "about:blank",
        ]
        log = Path(profile) / "chromium.log"
        with log.open("wb") as out:
            process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        try:
            port = _devtools_port(Path(profile), process, log, timeout)
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as response:
                (tab,) = [t for t in json.loads(response.read()) if t["type"] == "page"]
            socket = websocket.create_connection(
                tab["webSocketDebuggerUrl"], timeout=timeout, suppress_origin=True
            )
            try:
                page = Page(socket)
                for domain in ("Page", "Runtime", "Log"):
                    page.send(f"{domain}.enable")
                page.open(url, timeout)
                yield page
            finally:
                socket.close()
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _devtools_port(profile: Path, process: subprocess.Popen[bytes], log: Path, timeout: float) -> int:
    """The port Chromium chose, from the first line of the file it writes once it listens."""
    written = profile / "DevToolsActivePort"
    deadline = time.monotonic() + timeout
    while not (written.exists() and written.read_text().strip()):
        if process.poll() is not None:
            raise RuntimeError(f"chromium exited with {process.returncode}: {log.read_text()[-2000:]}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"chromium did not start in {timeout:g}s: {log.read_text()[-2000:]}")
        time.sleep(0.1)
    return int(written.read_text().splitlines()[0])
