# SPDX-License-Identifier: BSD-2-Clause
"""A small Chrome DevTools Protocol client over --remote-debugging-pipe.

Chromium reads commands from fd 3 and writes replies and events to fd 4,
each message one JSON object ended by a NUL byte: no WebSocket, no network
port, only the standard library. One browser, one page (a flat session).
"""

import base64
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time

CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
    "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--remote-debugging-pipe", "--hide-scrollbars",
    "--force-device-scale-factor=1",
]


class CDPError(Exception):
    pass


class Browser:
    def __init__(self, binary="/usr/bin/chromium", width=1280, height=1000, timeout=60):
        self.timeout = timeout
        self.profile_dir = tempfile.mkdtemp(prefix="kiln-chromium-")
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def child_fds():
            # fds 3 and 4 in the child; F_DUPFD first so neither end is
            # already 3 or 4 (dup2 onto itself would keep close-on-exec)
            a = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10)
            b = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [binary, *CHROMIUM_FLAGS, "--user-data-dir=" + self.profile_dir,
             "--window-size=%d,%d" % (width, height), "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, close_fds=False, preexec_fn=child_fds)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buf = b""
        self._next_id = 0
        self.events = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target,
                                 flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Network", "Log"):
            self.page(domain + ".enable")
        self.page("Emulation.setDeviceMetricsOverride", width=width, height=height,
                  deviceScaleFactor=1, mobile=False)

    def close(self):
        try:
            self.call("Browser.close")
        except (CDPError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_chrome)
        os.close(self._from_chrome)
        shutil.rmtree(self.profile_dir, ignore_errors=True)

    def _read_message(self, deadline):
        while b"\0" not in self._buf:
            if time.monotonic() > deadline:
                raise CDPError("no answer from chromium in %d s" % self.timeout)
            chunk = os.read(self._from_chrome, 1 << 20)
            if not chunk:
                raise CDPError("chromium closed the pipe (exit %s)" % self.proc.poll())
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, session=None, **params):
        """Sends one command and returns its result; events seen meanwhile
        are kept in self.events."""
        self._next_id += 1
        msg = {"id": self._next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self._to_chrome, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise CDPError("%s: %s" % (method, reply["error"].get("message")))
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def page(self, method, **params):
        return self.call(method, session=self.session, **params)

    def wait_event(self, method, timeout=None):
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            for i, ev in enumerate(self.events):
                if ev["method"] == method:
                    return self.events.pop(i)
            ev = self._read_message(deadline)
            if "method" in ev:
                self.events.append(ev)

    def open(self, url):
        """Navigates and waits for the load event; returns the seconds."""
        self.events = [e for e in self.events if e["method"] != "Page.loadEventFired"]
        start = time.monotonic()
        self.page("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired")
        return time.monotonic() - start

    def eval(self, expression):
        res = self.page("Runtime.evaluate", expression=expression,
                        returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in res:
            raise CDPError("%s: %s" % (expression, res["exceptionDetails"].get("exception", {})
                                       .get("description", res["exceptionDetails"].get("text"))))
        return res["result"].get("value")

    def click(self, x, y, shift=False):
        mods = 8 if shift else 0
        self.page("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y, modifiers=mods)
        for kind in ("mousePressed", "mouseReleased"):
            self.page("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left",
                      clickCount=1, modifiers=mods)

    def hover(self, x, y):
        self.page("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y)

    def type_text(self, text):
        self.page("Input.insertText", text=text)

    def screenshot(self, path):
        data = self.page("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        with open(path, "wb") as f:
            f.write(base64.b64decode(data["data"]))

    def take_events(self, method):
        """Removes and returns the events of one kind seen so far."""
        taken = [e for e in self.events if e["method"] == method]
        self.events = [e for e in self.events if e["method"] != method]
        return taken
