"""A 64 MiB activity whose transfer is cut midway resumes from the last
authenticated record once the link is back, and fails with the right
condition when it does not come back in time.

The link from laptop-b to laptop-a's transfer port is cut with nftables in
laptop-a's namespace (`Scripts/lab block laptop-a port-reject`: laptop-b's
acknowledgements are answered with a TCP reset, so laptop-b's connection dies at
once and reconnecting is refused) when laptop-b reports 16 MiB received; tc
tbf slows laptop-a's link (a token bucket) so the cut lands mid-transfer.

Needs root: it creates network namespaces through Scripts/lab."""
import base64
import json
import os
import re
import socket
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_local_api import Connection, sealed_payload  # noqa: E402
from harness import lab, listed, publish_by_descriptor, require_root, wait_until  # noqa: E402

LAB_DIR = os.environ.get("HANDOFF_LAB_DIR", "/tmp/handoff-lab")
DAEMON_ARGS = ["--announce-interval", "1", "--log-level", "debug"]
TYPE = "org.example.bench.large"
SIZE = 64 * 1024 * 1024 - 8192  # the largest userInfo under the hard limit, with room for the fixed fields
RECORD = 1 << 20
CUT_AT = 16 * RECORD
RESUME_WINDOW = 30  # seconds, Docs/PROTOCOL.md "Resume"


class Client:
    """The local API over the host's socket: requests, replies and (after subscribe) events."""

    def __init__(self, host):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(os.path.join(LAB_DIR, host, "run", "handoff.sock"))
        self.file = self.sock.makefile("rb")
        self.next_id = 0

    def close(self):
        self.file.close()
        self.sock.close()

    def send(self, op, **params):
        self.next_id += 1
        self.sock.sendall((json.dumps({"op": op, "id": self.next_id, **params}) + "\n").encode())
        return self.next_id

    def reply(self, op, **params):
        """The whole reply message (ok or not), skipping events."""
        wanted = self.send(op, **params)
        while True:
            message = json.loads(self.file.readline())
            if message.get("id") == wanted and "event" not in message:
                return message

    def call(self, op, **params):
        message = self.reply(op, **params)
        if not message["ok"]:
            raise AssertionError(f"{op} failed: {message['error']}")
        return message["result"]


class Events:
    """Every event laptop-b broadcasts, collected on a thread; `on_progress` sees progress as it comes."""

    def __init__(self, host, on_progress=None):
        self.client = Client(host)
        self.client.call("subscribe")
        self.events = []
        self.on_progress = on_progress
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        try:
            for line in self.client.file:
                event = json.loads(line)
                if "event" not in event:
                    continue
                event["received"] = time.monotonic()  # when this test heard it
                self.events.append(event)
                if event["event"] == "progress" and self.on_progress:
                    self.on_progress(event)
        except (OSError, ValueError):
            pass

    def named(self, name):
        return [e for e in self.events if e["event"] == name]

    def close(self):
        self.client.sock.shutdown(socket.SHUT_RDWR)
        self.client.close()


class Cut:
    """Cuts laptop-b's transfer from laptop-a once laptop-b has 16 MiB, optionally restoring it ~1 s later."""

    def __init__(self, restore_after):
        self.restore_after = restore_after
        self.progress_at_cut = None
        self.cut = threading.Event()
        self.restored = threading.Event()

    def on_progress(self, event):
        if event["bytes"] >= CUT_AT and not self.cut.is_set():
            self.progress_at_cut = event["bytes"]
            self.cut.set()
            lab("block", "laptop-a", "port-reject")
            if self.restore_after is not None:
                threading.Timer(self.restore_after, self.restore).start()

    def restore(self):
        lab("block", "laptop-a", "none")
        self.restored.set()


def fetched_again(log):
    """Bytes of records cut midway that laptop-b fetched again, from its log line for the fetch."""
    matches = re.findall(r"fetched (\d+) payload bytes of type " + re.escape(TYPE) + r" .*; (\d+) resumes, (\d+) bytes fetched again", log)
    return matches


class Resume(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_root()
        lab("down")
        try:
            lab("up", "laptop-a", "laptop-b")
            for host in ("laptop-a", "laptop-b"):
                lab("start", host, *DAEMON_ARGS)
            lab("pair-all", "laptop-a", "laptop-b")
            wait_until("b to see a", lambda: listed("laptop-b", "laptop-a"), timeout=20)
            # About 5 s for 64 MiB (a token bucket: the lab kernel has no netem), room
            # to cut at 16 MiB however fast the build is.
            lab("exec", "laptop-a", "tc", "qdisc", "add", "dev", "eth0", "root", "tbf", "rate", "100mbit", "burst", "64kb", "latency", "50ms")
        except BaseException:
            lab("down", check=False)
            raise
        cls.blob = base64.b64encode(os.urandom(SIZE)).decode()

    @classmethod
    def tearDownClass(cls):
        lab("block", "laptop-a", "none", check=False)
        if not os.environ.get("HANDOFF_KEEP_LAB"):
            lab("down")

    def publish(self, title):
        receipt = publish_by_descriptor("laptop-a", TYPE, title, {"blob": {"$data": self.blob}})
        b = Client("laptop-b")
        try:
            def offered():
                return any(p["offer"] and p["offer"]["sequence"] == receipt["sequence"] for p in b.call("list")["peers"])
            wait_until("b to see the 64 MiB offer", offered, timeout=20)
        finally:
            b.close()
        return receipt

    def accept(self, cut):
        """The accept's reply and, on success, the payload it passed by descriptor."""
        events = Events("laptop-b", on_progress=cut.on_progress)
        b = Connection("laptop-b")
        try:
            started = time.monotonic()
            reply, fd = b.call({"op": "accept", "peer": "laptop-a", "payload": True})
            elapsed = time.monotonic() - started
            if fd is not None:
                reply["payload"] = sealed_payload(fd)
                os.close(fd)
        finally:
            b.close()
            time.sleep(0.2)  # the last events after the reply
            events.close()
        return reply, events, elapsed

    def test_1_cut_and_restored_resumes_without_refetching(self):
        receipt = self.publish("64 MiB, cut once")
        cut = Cut(restore_after=1.0)
        reply, events, _ = self.accept(cut)
        self.assertTrue(cut.cut.is_set(), "the transfer finished before it could be cut: slow the link further")
        self.assertTrue(reply["ok"], reply)
        activity = reply["result"]["activity"]
        self.assertEqual(activity["sequence"], receipt["sequence"])
        # The payload (Activity's encoding) holds the published bytes whole.
        self.assertEqual(len(reply["payload"]), reply["result"]["payloadBytes"])
        self.assertIn(base64.b64decode(self.blob), reply["payload"])

        waiting = events.named("transferWaiting")
        resumed = events.named("transferResumed")
        self.assertEqual(len(waiting), 1, events.events)
        self.assertGreaterEqual(len(resumed), 1, events.events)
        self.assertEqual(waiting[0]["name"], "laptop-a")
        self.assertTrue(waiting[0]["reason"])
        # It resumed from no earlier than what it had reported as received and authenticated.
        self.assertGreaterEqual(resumed[0]["fromByte"], cut.progress_at_cut)
        self.assertLess(resumed[0]["fromByte"], SIZE)
        # Progress: at most ~10 a second, ending at the total.
        progress = events.named("progress")
        self.assertEqual(progress[-1]["bytes"], progress[-1]["total"])
        self.assertTrue(all(p["acceptId"] == waiting[0]["acceptId"] for p in progress))
        order = [e["event"] for e in events.events if e["event"] in ("transferWaiting", "transferResumed", "continued")]
        self.assertEqual(order[:2], ["transferWaiting", "transferResumed"])

        # Refetched: only the record that was cut midway, at most one record (1 MiB).
        lines = fetched_again(lab("log", "laptop-b").stdout)
        self.assertTrue(lines, "no fetch line in laptop-b's log")
        total, resumes, again = map(int, lines[-1])
        self.assertGreaterEqual(resumes, 1)
        self.assertLessEqual(again, RECORD)
        self.assertGreater(total, SIZE)

    def test_2_cut_not_restored_fails_after_the_window_with_the_condition(self):
        self.publish("64 MiB, cut for good")
        cut = Cut(restore_after=None)
        try:
            reply, events, elapsed = self.accept(cut)
        finally:
            lab("block", "laptop-a", "none")
        self.assertTrue(cut.cut.is_set())
        self.assertFalse(reply["ok"], reply)
        # laptop-a is still announced and near; its transfer port refuses: the network condition.
        self.assertEqual(reply["error"]["code"], "network", reply)
        self.assertGreaterEqual(elapsed, RESUME_WINDOW - 1)
        self.assertLess(elapsed, RESUME_WINDOW + 15)
        waiting = events.named("transferWaiting")
        self.assertEqual(len(waiting), 1, events.events)
        self.assertFalse(events.named("transferResumed"))
        failed = events.named("failed")
        self.assertEqual(failed[-1]["error"]["code"], "network")


if __name__ == "__main__":
    unittest.main()
