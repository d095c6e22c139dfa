"""The typed local API in the lab: payloads by descriptor (sealed memfds over
SCM_RIGHTS) to whoever asked and to no one else, the API version rule, and
descriptors a client must not be able to pass.

Needs root: it creates network namespaces through Scripts/lab."""
import base64
import fcntl
import json
import mmap
import os
import socket
import subprocess
import sys
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import lab, listed, offer_of, peer, require_root, wait_until  # noqa: E402

LAB_DIR = os.environ.get("HANDOFF_LAB_DIR", "/tmp/handoff-lab")
DAEMON_ARGS = ["--announce-interval", "1", "--log-level", "debug"]
TYPE = "org.example.api.document"
SEALS = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE


class Connection:
    """A raw local API connection that keeps every byte and descriptor it receives."""

    def __init__(self, host):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(os.path.join(LAB_DIR, host, "run", "handoff.sock"))
        self.buffer, self.fds, self.received_bytes, self.next_id = b"", [], 0, 0

    def send(self, request, fds=()):
        self.next_id += 1
        line = (json.dumps({"id": self.next_id, **request}) + "\n").encode()
        if fds:
            socket.send_fds(self.sock, [line], list(fds))
        else:
            self.sock.sendall(line)
        return self.next_id

    def message(self):
        """The next line and the descriptor it declares (payloadFd), if any."""
        while b"\n" not in self.buffer:
            data, fds, _, _ = socket.recv_fds(self.sock, 1 << 16, 4)
            if not data:
                raise EOFError("handoffd closed the connection")
            self.buffer += data
            self.received_bytes += len(data)
            self.fds += fds
        line, self.buffer = self.buffer.split(b"\n", 1)
        message = json.loads(line)
        declares = "payloadFd" in message or "payloadFd" in (message.get("result") or {})
        return message, (self.fds.pop(0) if declares else None)

    def call(self, request, fds=()):
        wanted = self.send(request, fds)
        while True:
            message, fd = self.message()
            if message.get("id") == wanted and "event" not in message:
                return message, fd

    def close(self):
        for fd in self.fds:
            os.close(fd)
        self.sock.close()


class Collector(threading.Thread):
    """A subscriber on its own thread: events, descriptors and byte count, until `done` shows up."""

    def __init__(self, connection, done):
        super().__init__(daemon=True)
        self.connection, self.done, self.events, self.payloads = connection, done, [], []
        self.finished = threading.Event()

    def run(self):
        try:
            while True:
                message, fd = self.connection.message()
                if "event" not in message:
                    continue
                self.events.append(message)
                if fd is not None:
                    self.payloads.append(fd)
                if self.done(message):
                    break
        finally:
            self.finished.set()


def sealed_payload(fd):
    """The bytes of a received payload descriptor, after checking it is a sealed memfd."""
    assert fcntl.fcntl(fd, fcntl.F_GET_SEALS) & SEALS == SEALS, "the payload descriptor is not sealed"
    with mmap.mmap(fd, 0, prot=mmap.PROT_READ) as mapped:
        return bytes(mapped)


class LocalAPI(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_root()
        lab("down")
        lab("up", "laptop-a", "laptop-b")
        for host in ("laptop-a", "laptop-b"):
            lab("start", host, *DAEMON_ARGS)
        lab("pair-all")
        wait_until("b to see a", lambda: listed("laptop-b", "laptop-a"))

    @classmethod
    def tearDownClass(cls):
        if not os.environ.get("HANDOFF_KEEP_LAB"):
            lab("down")

    def publish(self, user_info, title):
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            json.dump(user_info, f)
            f.flush()
            receipt = json.loads(peer("laptop-a", "publish", "--type", TYPE, "--title", title, "--user-info-file", f.name, "--json").stdout)
        wait_until("b to list the offer", lambda: (offer_of("laptop-b", "laptop-a") or {}).get("sequence") == receipt["sequence"], timeout=15)
        return receipt

    def test_1_accept_json_of_16_MiB_is_what_was_published_and_subscribers_get_no_payload(self):
        blob = os.urandom(16 << 20)
        user_info = {"blob": {"$data": base64.b64encode(blob).decode()}, "page": 7}
        # A plain subscriber, and one that asks for payloads but is not the app the activity goes to.
        plain, asking = Connection("laptop-b"), Connection("laptop-b")
        plain.call({"op": "subscribe"})
        asking.call({"op": "subscribe", "payloads": True})
        watchers = [Collector(c, lambda e: e["event"] in ("continued", "failed")) for c in (plain, asking)]
        for watcher in watchers:
            watcher.start()
        self.publish(user_info, "Sixteen")
        out = peer("laptop-b", "accept", "laptop-a", "--json").stdout
        activity = json.loads(out)
        self.assertEqual(activity["userInfo"], user_info)
        self.assertEqual((activity["type"], activity["title"]), (TYPE, "Sixteen"))
        for watcher in watchers:
            self.assertTrue(watcher.finished.wait(15), "no continued event")
            continued = watcher.events[-1]
            self.assertEqual(continued["event"], "continued")
            self.assertEqual(continued["deliverTo"], "terminal")
            self.assertNotIn("userInfo", continued["activity"])
            self.assertNotIn("payloadFd", continued)
            self.assertEqual(watcher.payloads, [])
            self.assertEqual(watcher.connection.fds, [])
            # Nothing of the 16 MiB came their way, in JSON or otherwise.
            self.assertLess(watcher.connection.received_bytes, 64 * 1024)
        plain.close()
        asking.close()

    def test_2_the_app_that_asked_gets_the_payload_by_descriptor(self):
        blob = os.urandom(2 << 20)
        app = Connection("laptop-b")
        app.call({"op": "subscribe", "payloads": True})
        reply, _ = app.call({"op": "declare", "app": "API Test App", "types": [TYPE], "payloads": True})
        self.assertTrue(reply["ok"], reply)
        collector = Collector(app, lambda e: e["event"] in ("continued", "failed"))
        collector.start()
        receipt = self.publish({"blob": {"$data": base64.b64encode(blob).decode()}}, "For the app")
        # Through the API, asking for the payload too: the caller gets its own descriptor.
        caller = Connection("laptop-b")
        reply, fd = caller.call({"op": "accept", "peer": "laptop-a", "payload": True})
        self.assertTrue(reply["ok"], reply)
        self.assertEqual(reply["result"]["deliverTo"], "API Test App")
        self.assertEqual(reply["result"]["payloadFd"], 0)
        self.assertNotIn("userInfo", reply["result"]["activity"])
        caller_payload = sealed_payload(fd)
        os.close(fd)
        self.assertEqual(len(caller_payload), receipt["payloadBytes"])
        self.assertIn(blob, caller_payload)
        self.assertTrue(collector.finished.wait(15), "the app got no continued event")
        continued = collector.events[-1]
        self.assertEqual((continued["event"], continued["payloadFd"], continued["payloadBytes"]), ("continued", 0, receipt["payloadBytes"]))
        self.assertEqual(len(collector.payloads), 1)
        self.assertEqual(sealed_payload(collector.payloads[0]), caller_payload)
        os.close(collector.payloads[0])
        caller.close()
        app.close()

    def test_3_an_old_client_is_told_both_versions(self):
        connection = Connection("laptop-b")
        reply, _ = connection.call({"op": "status", "version": 1})
        self.assertEqual(reply["error"]["code"], "invalid-request")
        self.assertEqual(reply["error"]["message"], "This client speaks local API version 1; this handoffd speaks version 2.")
        reply, _ = connection.call({"op": "hello", "version": 2})
        self.assertEqual(reply["result"], {"version": 2, "supported": {"min": 2, "max": 2}})
        connection.close()

    def test_4_a_payload_descriptor_must_be_a_sealed_memfd_and_bad_ones_change_nothing(self):
        before = json.loads(peer("laptop-a", "status", "--json").stdout)["current"]
        connection = Connection("laptop-a")
        unsealed = os.memfd_create("unsealed", os.MFD_ALLOW_SEALING)
        os.write(unsealed, b"\x01" * 64)
        with tempfile.TemporaryFile() as plain_file:
            for fd in (unsealed, plain_file.fileno()):
                reply, _ = connection.call({"op": "publish", "payloadFd": 0}, fds=[fd])
                self.assertEqual(reply["error"]["code"], "invalid-request", reply)
                self.assertIn("sealed memfd", reply["error"]["message"])
        os.close(unsealed)
        # Sealed but not an activity.
        garbage = os.memfd_create("garbage", os.MFD_ALLOW_SEALING)
        os.write(garbage, b"\x07" * 64)
        fcntl.fcntl(garbage, fcntl.F_ADD_SEALS, SEALS)
        reply, _ = connection.call({"op": "publish", "payloadFd": 0}, fds=[garbage])
        self.assertEqual(reply["error"]["code"], "invalid-activity", reply)
        os.close(garbage)
        # A descriptor on an op that takes none, or declared without one: refused, and the next line still works.
        stray = os.memfd_create("stray")
        reply, _ = connection.call({"op": "status", "payloadFd": 0}, fds=[stray])
        self.assertEqual(reply["error"]["code"], "invalid-request")
        os.close(stray)
        reply, _ = connection.call({"op": "publish", "payloadFd": 0})
        self.assertEqual(reply["error"]["code"], "invalid-request")
        reply, _ = connection.call({"op": "status"})
        self.assertTrue(reply["ok"])
        self.assertEqual(reply["result"]["current"], before)
        self.assertEqual(connection.fds, [])
        connection.close()

    def test_5_another_user_is_refused_even_when_the_socket_is_open_to_them(self):
        """The directory keeps other users out; if it is opened up (or the socket passed on),
        the kernel's word on who connected (SO_PEERCRED) still does: EOF, nothing answered."""
        path = os.path.join(LAB_DIR, "laptop-a", "run", "handoff.sock")
        opened = [path]
        directory = os.path.dirname(path)
        while directory not in ("/", "/tmp"):
            opened.append(directory)
            directory = os.path.dirname(directory)
        modes = {item: os.stat(item).st_mode & 0o7777 for item in opened}
        try:
            for item in opened:
                os.chmod(item, modes[item] | (0o777 if item == path else 0o711))
            # The daemon may close before the request is written or read: a broken pipe or a
            # reset is as much a refusal as EOF; what counts is that no byte came back.
            probe = ("import json,socket,sys\ns=socket.socket(socket.AF_UNIX)\ns.connect(sys.argv[1])\n"
                     "try:\n  s.sendall(json.dumps({'id':1,'op':'status'}).encode()+b'\\n')\n"
                     "except (BrokenPipeError, ConnectionResetError): pass\ns.settimeout(10)\n"
                     "data=b''\nwhile True:\n  try: chunk=s.recv(4096)\n  except ConnectionResetError: break\n"
                     "  if not chunk: break\n  data+=chunk\nprint(len(data))")
            result = subprocess.run(["setpriv", "--reuid=4242", "--regid=4242", "--clear-groups", sys.executable, "-c", probe, path],
                                    capture_output=True, text=True, timeout=30)
        finally:
            for item, mode in modes.items():
                os.chmod(item, mode)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.strip(), "0", "another user's client was answered")
        # This user's clients are served as before.
        connection = Connection("laptop-a")
        reply, _ = connection.call({"op": "status"})
        self.assertTrue(reply["ok"])
        connection.close()


if __name__ == "__main__":
    unittest.main()
