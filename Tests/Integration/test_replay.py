"""Replay across restarts (issue 15, finding 12): a datagram captured before
the receiver restarts cannot bring back an offer that was withdrawn. (Clocks
that disagree are unit tests, PeerTableHardeningTests: a lab host's wall
clock cannot be shifted on its own, and libfaketime hides a Swift program's
arguments.) Needs root (network namespaces)."""
import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import LAB, addresses_of, drops, lab, offer_of, peer, peer_json, require_root, wait_until  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
LABPACKET = os.path.join(HERE, "labpacket.py")
DAEMON_ARGS = ["--announce-interval", "1", "--peer-ttl", "4"]
TYPE = "org.example.clocks"


class ReplayAcrossRestarts(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_root()
        lab("down")
        lab("up", "laptop-a", "laptop-b")
        lab("start", "laptop-a", *DAEMON_ARGS)
        lab("start", "laptop-b", *DAEMON_ARGS)
        lab("pair-all", "laptop-a", "laptop-b", timeout=90)

    @classmethod
    def tearDownClass(cls):
        if not os.environ.get("HANDOFF_KEEP_LAB"):
            lab("down")

    def handoff(self, sender, receiver, title):
        receipt = json.loads(peer(sender, "publish", "--type", TYPE, "--title", title, "--expires", "120", "--json").stdout)
        wait_until(f"{receiver} to list {title!r}",
                   lambda: (o := offer_of(receiver, sender)) and o["sequence"] == receipt["sequence"], timeout=15)
        activity = peer_json(receiver, "accept", sender)
        self.assertEqual(activity["title"], title)

    def test_1_a_datagram_captured_before_a_restart_does_not_bring_back_a_withdrawn_offer(self):
        self.handoff("laptop-a", "laptop-b", "soon withdrawn")
        capture = "/tmp/handoff-clocks-capture.bin"
        # A datagram from a that still carries the offer (sealed for b).
        lab("exec", "laptop-b", "python3", LABPACKET, "capture", capture, *addresses_of("laptop-a"), "--timeout", "10")
        peer("laptop-a", "invalidate")
        wait_until("b to see the offer withdrawn", lambda: offer_of("laptop-b", "laptop-a") is None, timeout=10)
        # a goes quiet, so only what b kept on disk can tell the capture is old.
        lab("stop", "laptop-a")
        lab("stop", "laptop-b")
        lab("start", "laptop-b", *DAEMON_ARGS)
        before = drops("laptop-b")["replayed"]
        for _ in range(3):
            lab("exec", "laptop-b", "python3", LABPACKET, "send", capture)
            time.sleep(0.3)
        wait_until("b to count the replay", lambda: drops("laptop-b")["replayed"] > before, timeout=10)
        self.assertIsNone(offer_of("laptop-b", "laptop-a"), "a replayed datagram re-listed a withdrawn offer")
        self.assertFalse(any(e["name"] == "laptop-a" for e in peer_json("laptop-b", "list")))
        lab("start", "laptop-a", *DAEMON_ARGS)


if __name__ == "__main__":
    unittest.main(verbosity=2)
