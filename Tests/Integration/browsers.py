"""Real browsers in lab hosts, driven from outside: Chromium through the
DevTools protocol over a pipe (--remote-debugging-pipe, so no port is opened
anywhere), Firefox ESR through Marionette on loopback inside the host's
network namespace (the socket is made from a thread that joined it with
setns). No pip packages: both protocols are a few lines of framing."""
import ctypes
import json
import os
import shutil
import socket
import subprocess
import threading
import time

from harness import LAB, wait_until

CLONE_NEWNET = 0x40000000


def connect_in_namespace(netns_path, address, timeout=30.0):
    """A TCP connection made inside another network namespace. setns changes only
    the calling thread's namespace, so a short-lived thread joins it, connects,
    and the socket keeps that namespace after the thread ends."""
    result = {}

    def run():
        libc = ctypes.CDLL(None, use_errno=True)
        fd = os.open(netns_path, os.O_RDONLY)
        try:
            if libc.setns(fd, CLONE_NEWNET) != 0:
                result["error"] = OSError(ctypes.get_errno(), "setns")
                return
        finally:
            os.close(fd)
        deadline = time.monotonic() + timeout
        while True:
            try:
                result["socket"] = socket.create_connection(address, timeout=5)
                return
            except OSError as error:
                if time.monotonic() > deadline:
                    result["error"] = error
                    return
                time.sleep(0.2)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if "error" in result:
        raise result["error"]
    return result["socket"]


def start_in_host(host, argv, env, log, fds=None):
    """Runs argv in a lab host; `fds` maps descriptor numbers in the child to ours
    (Chromium reads its DevTools pipe on 3 and writes on 4)."""
    assignments = [f"{k}={v}" for k, v in env.items()]
    fds = fds or {}

    def place():
        # Through fresh copies first: a target number may be one of the sources.
        copies = {target: os.dup(source) for target, source in fds.items()}
        for target, copy in copies.items():
            os.dup2(copy, target)
    return subprocess.Popen([LAB, "exec", host, "env", *assignments, *argv], stdin=subprocess.DEVNULL, stdout=log,
                            stderr=subprocess.STDOUT, pass_fds=tuple(fds), preexec_fn=place if fds else None)


class Chromium:
    """Chromium with the unpacked extension, driven over --remote-debugging-pipe."""

    def __init__(self, host, home, display, extension, log, session_bus=None):
        self.host = host
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        flags = ["--no-sandbox", "--no-first-run", "--no-default-browser-check", "--disable-gpu", "--password-store=basic",
                 "--disable-features=DisableLoadExtensionCommandLineSwitch,Translate,MediaRouter",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--remote-debugging-pipe", f"--load-extension={extension}", "--window-position=0,0", "--window-size=1024,700",
                 "about:blank"]
        self.process = start_in_host(host, ["chromium", *flags], {"HOME": home, "DISPLAY": display, "DBUS_SESSION_BUS_ADDRESS": session_bus or "disabled:"}, log,
                                     fds={3: to_browser_r, 4: from_browser_w})
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._next = 0
        self._lock = threading.Lock()
        self._replies = {}
        self._cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        buffer = b""
        while True:
            chunk = os.read(self._from_browser, 65536)
            if not chunk:
                with self._cond:
                    self._replies["closed"] = True
                    self._cond.notify_all()
                return
            buffer += chunk
            while b"\0" in buffer:
                raw, buffer = buffer.split(b"\0", 1)
                message = json.loads(raw)
                if "id" in message:
                    with self._cond:
                        self._replies[message["id"]] = message
                        self._cond.notify_all()

    def call(self, method, params=None, session=None, timeout=30):
        with self._lock:
            self._next += 1
            ident = self._next
        message = {"id": ident, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        with self._cond:
            if not self._cond.wait_for(lambda: ident in self._replies or "closed" in self._replies, timeout):
                raise AssertionError(f"Chromium did not answer {method} within {timeout}s")
            reply = self._replies.pop(ident, None)
        if reply is None:
            raise AssertionError(f"Chromium closed the DevTools pipe during {method}")
        if "error" in reply:
            raise AssertionError(f"{method}: {reply['error']}")
        return reply["result"]

    def targets(self):
        return self.call("Target.getTargets")["targetInfos"]

    def pages(self):
        """Normal, non-private tabs."""
        return [t for t in self.targets() if t["type"] == "page" and not t.get("browserContextId", "").startswith("incognito")
                and t["url"] != "about:blank"]

    def open_tab(self, url, context=None, new_window=False):
        params = {"url": url, "newWindow": new_window}
        if context:
            params["browserContextId"] = context
        target = self.call("Target.createTarget", params)["targetId"]
        if url.startswith("http"):
            self.wait_loaded(target)
        return target

    def activate(self, target):
        self.call("Target.activateTarget", {"targetId": target})

    def wait_loaded(self, target, timeout=15):
        """Until the page's load event: evaluating earlier may hit a context being replaced."""
        def loaded():
            try:
                return self.evaluate(target, "document.readyState") == "complete"
            except AssertionError:
                return False
        wait_until("the page to load", loaded, timeout=timeout, interval=0.1)

    def evaluate(self, target, expression):
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        try:
            result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}, session=session)
            return result["result"].get("value")
        finally:
            self.call("Target.detachFromTarget", {"sessionId": session})

    def close_target(self, target):
        self.call("Target.closeTarget", {"targetId": target})

    def quit(self):
        try:
            self.call("Browser.close", timeout=5)
        except AssertionError:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass


class Firefox:
    """Firefox ESR with Marionette, the extension installed into its profile."""

    def __init__(self, host, home, display, xpi, log, port=2828, session_bus=None):
        self.host = host
        profile = os.path.join(home, "profile")
        os.makedirs(profile, exist_ok=True)
        prefs = {
            "xpinstall.signatures.required": False,      # ESR honours it: the extension is not signed by Mozilla
            "extensions.autoDisableScopes": 0,
            "extensions.enabledScopes": 15,
            "marionette.port": port,
            "browser.shell.checkDefaultBrowser": False,
            "browser.startup.homepage_override.mstone": "ignore",
            "browser.aboutwelcome.enabled": False,
            "datareporting.policy.dataSubmissionEnabled": False,
            "toolkit.telemetry.reportingpolicy.firstRun": False,
            "app.update.disabledForTesting": True,
            "browser.tabs.warnOnClose": False,
            "browser.sessionstore.resume_from_crash": False,
        }
        with open(os.path.join(profile, "user.js"), "w") as f:
            for key, value in prefs.items():
                f.write(f"user_pref({json.dumps(key)}, {json.dumps(value)});\n")
        # Installed the way a person's profile holds it: the xpi named by its id.
        extensions = os.path.join(profile, "extensions")
        os.makedirs(extensions, exist_ok=True)
        shutil.copy(xpi, os.path.join(extensions, "handoff@handoff.github.io.xpi"))
        argv = ["firefox-esr", "--marionette", "--no-remote", "--profile", profile, "--width", "1024", "--height", "700", "about:blank"]
        self.process = start_in_host(host, argv, {"HOME": home, "DISPLAY": display, "MOZ_CRASHREPORTER_DISABLE": "1",
                                                 "DBUS_SESSION_BUS_ADDRESS": session_bus or "disabled:"}, log)
        self.socket = connect_in_namespace(f"/run/netns/{os.environ.get('HANDOFF_LAB_PREFIX', 'hlab')}-{host}", ("127.0.0.1", port), timeout=60)
        self.socket.settimeout(60)
        self._buffer = b""
        self._next = 0
        self._read()  # the server's greeting
        self.call("WebDriver:NewSession", {"capabilities": {"alwaysMatch": {"acceptInsecureCerts": True}}})
        # The first, normal window: new tabs open beside it (never in a private window opened later).
        self.main = self.handles()[0]

    def _read(self):
        while b":" not in self._buffer:
            self._recv()
        length, rest = self._buffer.split(b":", 1)
        length = int(length)
        while len(rest) < length:
            self._recv()
            rest = self._buffer.split(b":", 1)[1]
        self._buffer = rest[length:]
        return json.loads(rest[:length])

    def _recv(self):
        chunk = self.socket.recv(65536)
        if not chunk:
            raise AssertionError("Marionette closed the connection")
        self._buffer += chunk

    def call(self, command, params=None):
        self._next += 1
        body = json.dumps([0, self._next, command, params or {}]).encode()
        self.socket.sendall(str(len(body)).encode() + b":" + body)
        while True:
            kind, ident, error, result = self._read()
            if ident == self._next:
                if error:
                    raise AssertionError(f"{command}: {error}")
                return result.get("value", result) if isinstance(result, dict) else result

    def handles(self):
        return self.call("WebDriver:GetWindowHandles")

    def open_tab(self, url, private=False, window=False):
        self.call("WebDriver:SwitchToWindow", {"handle": self.main, "focus": False})
        params = {"type": "window" if window or private else "tab", "focus": True}
        if private:
            params["private"] = True
        handle = self.call("WebDriver:NewWindow", params)["handle"]
        self.activate(handle)
        self.call("WebDriver:Navigate", {"url": url})
        return handle

    def activate(self, handle):
        self.call("WebDriver:SwitchToWindow", {"handle": handle, "focus": True})

    def evaluate(self, handle, script):
        self.call("WebDriver:SwitchToWindow", {"handle": handle, "focus": False})
        return self.call("WebDriver:ExecuteScript", {"script": script, "args": []})

    def quit(self):
        # Quitting answers at once or not at all: do not wait the 60 s a navigation may take.
        self.socket.settimeout(10)
        try:
            self.call("Marionette:Quit", {"flags": ["eForceQuit"]})
        except (AssertionError, OSError):
            pass
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pass
        self.socket.close()
