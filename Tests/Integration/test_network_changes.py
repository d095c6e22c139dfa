"""Network changes are noticed at once (issue 24): with the default 30 s
keepalive, an address added to or removed from laptop-b's link makes b
announce to its paired device within a second (route netlink), where before
it waited for the next tick (23 s measured). Each host has two links (eth0 and
eth1, as a cable beside Wi-Fi): a transfer over a link that goes away moves to
the other at once, and a publish right after a restart reaches the peer
without waiting for a keepalive.

Needs root: it creates network namespaces through Scripts/lab."""
import base64
import os
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import lab, listed, peer_json, publish_by_descriptor, require_root, wait_until  # noqa: E402
from test_local_api import Connection, sealed_payload  # noqa: E402
from test_resume import Client, Events  # noqa: E402

TYPE = "org.example.bench.large"
SIZE = 32 * 1024 * 1024
CUT_AT = 8 * 1024 * 1024

NOTICED = "a network interface or address changed (netlink)"


def offered_on_b(sequence):
    b = Client("laptop-b")
    try:
        return any(p["offer"] and p["offer"]["sequence"] == sequence for p in b.call("list")["peers"])
    finally:
        b.close()


class NetworkChanges(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_root()
        lab("down")
        os.environ["HANDOFF_LAB_SECOND_LINK"] = "1"
        try:
            lab("up", "laptop-a", "laptop-b")
        finally:
            del os.environ["HANDOFF_LAB_SECOND_LINK"]
        for host in ("laptop-a", "laptop-b"):
            # The default keepalive (no tick within the test), on both links.
            lab("start", host, "--any-interface", "--log-level", "debug")
        lab("pair-all", "laptop-a", "laptop-b", timeout=90)
        wait_until("b to see a", lambda: listed("laptop-b", "laptop-a"), timeout=20)

    @classmethod
    def tearDownClass(cls):
        if not os.environ.get("HANDOFF_KEEP_LAB"):
            lab("down")

    def noticed(self):
        return lab("log", "laptop-b").stdout.count(NOTICED)

    def quiet(self, seconds=1.0):
        """Waits until b has noticed no change for `seconds`: a change still settling from the test
        before (a link brought back up reaches its carrier, IPv6 finishes duplicate address detection)
        would be counted as the one measured. CI once counted such a notice as the add; the del then
        came within the same 0.1 s burst as the add, which together change nothing, and b rightly
        announced nothing."""
        count, since = self.noticed(), time.monotonic()
        deadline = since + 15
        while time.monotonic() - since < seconds:
            self.assertLess(time.monotonic(), deadline, "b's network never settled")
            time.sleep(0.1)
            now = self.noticed()
            if now != count:
                count, since = now, time.monotonic()

    def test_an_address_change_is_announced_within_a_second(self):
        figures = []
        for change in ("add", "del"):
            self.quiet()
            before = self.noticed()
            announced = peer_json("laptop-a", "status")["drops"]  # touch a's API: it is up
            self.assertIsNotNone(announced)
            started = time.monotonic()
            lab("exec", "laptop-b", "ip", "addr", change, "169.254.40.2/16", "dev", "eth0")
            wait_until(f"b to notice the address {change}", lambda: self.noticed() > before, timeout=5, interval=0.02)
            figures.append(time.monotonic() - started)
        print(f"\n  address added / removed -> b announces: {figures[0]:.2f} s / {figures[1]:.2f} s (netlink; the keepalive is 30 s)",
              file=sys.stderr)
        self.assertLess(max(figures), 1.0)


    def test_a_transfer_moves_to_the_other_link_when_its_link_goes_down(self):
        # a's sending is slowed on both links (a token bucket) so the cut lands mid-transfer.
        for interface in ("eth0", "eth1"):
            lab("exec", "laptop-a", "tc", "qdisc", "replace", "dev", interface, "root", "tbf", "rate", "100mbit", "burst", "64kb", "latency", "50ms")
        try:
            blob = base64.b64encode(os.urandom(SIZE)).decode()
            receipt = publish_by_descriptor("laptop-a", TYPE, "over two links", {"blob": {"$data": blob}})
            wait_until("b to see the offer", lambda: offered_on_b(receipt["sequence"]), timeout=20)
            cut = {}

            def on_progress(event):
                if event["bytes"] >= CUT_AT and "at" not in cut:
                    # The link this transfer uses: pull b's cable there.
                    sockets = lab("exec", "laptop-b", "ss", "-tnH", "state", "established").stdout
                    interface = "eth1" if ("10.77.0." in sockets or "%eth1" in sockets) else "eth0"
                    cut["interface"] = interface
                    cut["at"] = time.monotonic()
                    lab("link", "laptop-b", "down", interface)

            events = Events("laptop-b", on_progress=on_progress)
            b = Connection("laptop-b")
            try:
                reply, fd = b.call({"op": "accept", "peer": "laptop-a", "payload": True})
                payload = sealed_payload(fd) if fd is not None else None
                if fd is not None:
                    os.close(fd)
            finally:
                b.close()
                time.sleep(0.2)
                events.close()
            self.assertIn("at", cut, "the transfer finished before it could be cut: slow the link further")
            self.assertTrue(reply["ok"], reply)
            self.assertIn(base64.b64decode(blob), payload)
            resumed = events.named("transferResumed")
            self.assertGreaterEqual(len(resumed), 1, events.events)
            moved = resumed[0]["received"] - cut["at"]
            print(f"\n  b's {cut['interface']} pulled mid-transfer -> resumed over the other link in {moved:.2f} s "
                  f"(was: 3 s without bytes, then addresses tried in turn)", file=sys.stderr)
            self.assertLess(moved, 1.0)
        finally:
            for interface in ("eth0", "eth1"):
                lab("link", "laptop-b", "up", interface)
                lab("exec", "laptop-a", "tc", "qdisc", "del", "dev", interface, "root", check=False)
        wait_until("b to list a again", lambda: listed("laptop-b", "laptop-a"), timeout=20)

    def test_a_publish_right_after_a_restart_reaches_the_peer_at_once(self):
        # Issue 24: it reached the paired peer only at the next 30 s keepalive.
        lab("stop", "laptop-a")
        lab("start", "laptop-a", "--any-interface", "--log-level", "debug")
        started = time.monotonic()
        receipt = peer_json("laptop-a", "publish", "--type", "org.example.after-restart", "--title", "right after a restart")
        wait_until("b to see the offer", lambda: offered_on_b(receipt["sequence"]), timeout=40, interval=0.05)
        took = time.monotonic() - started
        print(f"\n  publish right after a restart -> offered on b in {took:.2f} s (the keepalive is 30 s)", file=sys.stderr)
        self.assertLess(took, 5.0)


if __name__ == "__main__":
    unittest.main()
