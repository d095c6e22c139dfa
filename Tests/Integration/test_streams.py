"""Continuation streams between real apps: the example reader on laptop-a
publishes with supportsContinuationStreams, the reader on laptop-b continues
it and gets the unsaved text over the stream. The stream itself (4 MiB each
way at once, half-close each way, one app closing, the refusals with their
codes) is tested in process: Tests/InProcessHandoffTests/StreamTests.swift.

Needs root: it creates network namespaces through Scripts/lab."""
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import LAB, lab, offer_of, peer_json, require_root, wait_until  # noqa: E402

ARGS = ["--announce-interval", "1", "--peer-ttl", "4", "--transfer-timeout", "3", "--log-level", "debug"]
LAB_DIR = os.environ.get("HANDOFF_LAB_DIR", "/tmp/handoff-lab")
READER_TYPE = "org.example.handoff-reader.document"


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
            subprocess.run([LAB, "pkill", "laptop-a", "-f", "handoff-reader"], capture_output=True)
            subprocess.run([LAB, "pkill", "laptop-b", "-f", "handoff-reader"], capture_output=True)


def read(path):
    try:
        with open(path) as f:
            return f.read().splitlines()
    except FileNotFoundError:
        return []


if __name__ == "__main__":
    unittest.main(verbosity=2)
