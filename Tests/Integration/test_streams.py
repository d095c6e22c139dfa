"""Continuation streams between apps: an activity published with
supportsContinuationStreams on laptop-a, continued on laptop-b, then a byte
stream between the app waiting on a (awaitStream) and the app on b
(openStream): 4 MiB each way at once, byte for byte; half-close each way;
refusals with their codes (no app waiting, an activity without streams, an
activity that is no longer current).

The test clients speak the local API (JSON lines) directly, as any app may,
then the raw bytes of the stream on the same connection.
Needs root: it creates network namespaces through Scripts/lab."""
import json
import os
import socket
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import LAB, lab, offer_of, peer, peer_json, require_root, wait_until  # noqa: E402

ARGS = ["--announce-interval", "1", "--peer-ttl", "4", "--transfer-timeout", "3", "--log-level", "debug"]
LAB_DIR = os.environ.get("HANDOFF_LAB_DIR", "/tmp/handoff-lab")
TYPE = "org.example.streams.document"
READER_TYPE = "org.example.handoff-reader.document"


class Local:
    """One local API connection; after a successful awaitStream/openStream it carries raw bytes."""

    def __init__(self, host):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(os.path.join(LAB_DIR, host, "run", "handoff.sock"))
        self.pending = b""

    def call(self, op, **params):
        self.sock.sendall((json.dumps({"op": op, "id": 1, **params}) + "\n").encode())
        while b"\n" not in self.pending:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise AssertionError(f"{op}: the daemon closed the connection")
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return json.loads(line)

    def recv(self, size=1 << 20):
        if self.pending:
            data, self.pending = self.pending, b""
            return data
        return self.sock.recv(size)

    def read_all(self):
        chunks = []
        while chunk := self.recv():
            chunks.append(chunk)
        return b"".join(chunks)

    def close(self):
        self.sock.close()


def call(host, op, **params):
    client = Local(host)
    try:
        return client.call(op, **params)
    finally:
        client.close()


class Streams(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_root()
        lab("down")
        lab("up", "laptop-a", "laptop-b")
        for host in ("laptop-a", "laptop-b"):
            lab("start", host, *ARGS)
        lab("pair-all")

    @classmethod
    def tearDownClass(cls):
        if not os.environ.get("HANDOFF_KEEP_LAB"):
            lab("down")

    def publish(self, title, streams=True):
        activity = {"type": TYPE, "title": title, "userInfo": {"draft": "unsaved"}}
        if streams:
            activity["supportsContinuationStreams"] = True
        reply = call("laptop-a", "publish", activity=activity)
        self.assertTrue(reply["ok"], reply)
        sequence = reply["result"]["sequence"]
        wait_until("b to list the offer", lambda: (o := offer_of("laptop-b", "laptop-a")) and o["sequence"] == sequence, timeout=15)
        continued = peer_json("laptop-b", "accept", "laptop-a")
        self.assertEqual(continued.get("supportsContinuationStreams", False), streams)
        return sequence

    def waiting_app(self, sequence):
        """An app on a waiting for a stream; returns (connection, thread, result holder)."""
        app = Local("laptop-a")
        result = {}
        thread = threading.Thread(target=lambda: result.update(reply=app.call("awaitStream", sequence=sequence)))
        thread.start()
        return app, thread, result

    def open_stream(self, sequence):
        """Opens from b, retrying while a's app has not started waiting yet (code app)."""
        deadline = time.monotonic() + 10
        while True:
            app = Local("laptop-b")
            reply = app.call("openStream", peer="laptop-a", sequence=sequence)
            if reply["ok"] or reply["error"]["code"] != "app" or time.monotonic() > deadline:
                return app, reply
            app.close()
            time.sleep(0.1)

    def connected_pair(self, title):
        sequence = self.publish(title)
        a, waiter, result = self.waiting_app(sequence)
        b, reply = self.open_stream(sequence)
        self.assertTrue(reply["ok"], reply)
        waiter.join(10)
        self.assertTrue(result["reply"]["ok"], result)
        self.assertEqual(result["reply"]["result"]["sequence"], sequence)
        return a, b

    def test_1_four_mebibytes_each_way_at_once(self):
        a, b = self.connected_pair("Both ways")
        to_b, to_a = os.urandom(4 << 20), os.urandom(4 << 20)
        received = {}

        def side(name, conn, data):
            # Send in odd-sized pieces while the other thread reads, then half-close.
            def send():
                for offset in range(0, len(data), 100_003):
                    conn.sock.sendall(data[offset:offset + 100_003])
                conn.sock.shutdown(socket.SHUT_WR)
            sender = threading.Thread(target=send)
            sender.start()
            received[name] = conn.read_all()
            sender.join()

        threads = [threading.Thread(target=side, args=("a", a, to_b)), threading.Thread(target=side, args=("b", b, to_a))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertEqual(len(received["b"]), len(to_b))
        self.assertTrue(received["b"] == to_b, "a -> b bytes differ")
        self.assertEqual(len(received["a"]), len(to_a))
        self.assertTrue(received["a"] == to_a, "b -> a bytes differ")
        a.close()
        b.close()

    def test_2_half_close_each_way(self):
        a, b = self.connected_pair("Half close")
        # a says its piece and stops writing: b reads it, then end of stream...
        a.sock.sendall(b"unsaved text from a")
        a.sock.shutdown(socket.SHUT_WR)
        self.assertEqual(b.read_all(), b"unsaved text from a")
        # ...while b can still write, and a still reads, until b stops too.
        b.sock.sendall(b"thanks from b")
        b.sock.shutdown(socket.SHUT_WR)
        self.assertEqual(a.read_all(), b"thanks from b")
        a.close()
        b.close()
        # The other way round: b stops first.
        a, b = self.connected_pair("Half close, b first")
        b.sock.sendall(b"b first")
        b.sock.shutdown(socket.SHUT_WR)
        self.assertEqual(a.read_all(), b"b first")
        a.sock.sendall(b"a after")
        a.sock.shutdown(socket.SHUT_WR)
        self.assertEqual(b.read_all(), b"a after")
        a.close()
        b.close()

    def test_3_closing_one_app_ends_the_stream_for_the_other(self):
        a, b = self.connected_pair("Close")
        a.close()
        # b reads end of stream; once its bytes find a's app gone, the whole stream ends.
        self.assertEqual(b.read_all(), b"")
        def write_fails():
            try:
                b.sock.sendall(b"x" * 65536)
                return False
            except OSError:
                return True
        wait_until("b's writes to fail", write_fails, timeout=10, interval=0.1)
        b.close()

    def test_4_no_app_waiting_is_refused_with_app(self):
        sequence = self.publish("Nobody waits")
        reply = call("laptop-b", "openStream", peer="laptop-a", sequence=sequence)
        self.assertFalse(reply["ok"])
        self.assertEqual(reply["error"]["code"], "app")
        self.assertIn("laptop-a refused the stream", reply["error"]["message"])

    def test_5_an_activity_without_streams_is_refused(self):
        sequence = self.publish("No streams", streams=False)
        # The app on a cannot wait for one...
        reply = call("laptop-a", "awaitStream", sequence=sequence)
        self.assertFalse(reply["ok"])
        self.assertEqual(reply["error"]["code"], "invalid-request")
        # ...and a refuses b's request, authenticated, with the same code.
        reply = call("laptop-b", "openStream", peer="laptop-a", sequence=sequence)
        self.assertFalse(reply["ok"])
        self.assertEqual(reply["error"]["code"], "invalid-request")
        self.assertIn("without continuation streams", reply["error"]["message"])

    def test_6_a_wait_ends_when_the_activity_stops_being_current(self):
        sequence = self.publish("Resigned")
        a, waiter, result = self.waiting_app(sequence)
        time.sleep(0.5)
        peer("laptop-a", "resign")
        waiter.join(10)
        self.assertFalse(result["reply"]["ok"])
        self.assertEqual(result["reply"]["error"]["code"], "not-current")
        a.close()
        # A stale sequence is refused by b's daemon or by a's: not-current either way.
        reply = call("laptop-b", "openStream", peer="laptop-a", sequence=sequence)
        self.assertFalse(reply["ok"])
        self.assertEqual(reply["error"]["code"], "not-current")

    def test_7_the_reader_gets_the_unsaved_text_over_a_stream(self):
        log_b = os.path.join(LAB_DIR, "laptop-b", "reader-stream.log")
        readers = [subprocess.Popen([LAB, "exec", "laptop-b", "handoff-reader", "--log", log_b, "--exit-after", "1"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
        try:
            wait_until("b's reader to declare", lambda: any(a["running"] for a in peer_json("laptop-b", "apps")))
            readers.append(subprocess.Popen([LAB, "exec", "laptop-a", "handoff-reader", "ch3.txt:12", "--unsaved", "draft: the third paragraph, rewritten"],
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            wait_until("b to list a's reader", lambda: (o := offer_of("laptop-b", "laptop-a")) and o["type"] == READER_TYPE, timeout=15)
            self.assertTrue(peer_json("laptop-b", "accept", "laptop-a")["supportsContinuationStreams"])
            lines = wait_until("b's reader to get the text", lambda: [l for l in read(log_b) if l.startswith(("unsaved text", "no unsaved"))])
            self.assertEqual(lines, ["unsaved text (37 bytes) from the stream: draft: the third paragraph, rewritten"])
        finally:
            for process in readers:
                process.terminate()
                process.wait(10)
            subprocess.run([LAB, "exec", "laptop-a", "pkill", "-f", "handoff-reader"], capture_output=True)
            subprocess.run([LAB, "exec", "laptop-b", "pkill", "-f", "handoff-reader"], capture_output=True)


def read(path):
    try:
        with open(path) as f:
            return f.read().splitlines()
    except FileNotFoundError:
        return []


if __name__ == "__main__":
    unittest.main(verbosity=2)
