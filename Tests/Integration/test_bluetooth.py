"""Bluetooth LE presence and proximity against Bumble's emulated controllers:
one per lab host, all on one emulated link, each behind a Unix socket that
handoffd reaches with --hci unix:PATH (Scripts/lab start HOST --ble).

Needs root: it creates network namespaces through Scripts/lab."""
import json
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import lab, listed, offer_of, peer, peer_json, require_root, wait_until  # noqa: E402

BLE_ARGS = ["--ble", "--announce-interval", "1", "--peer-ttl", "4", "--proximity-ttl", "3", "--log-level", "debug"]


def proximity_of(host, name):
    for entry in peer_json(host, "list"):
        if entry["name"] == name:
            return entry["proximity"]
    return None


def bluetooth_status(host):
    return peer_json(host, "status")["bluetooth"]


class Bluetooth(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_root()
        lab("down")
        lab("up", "laptop-a", "laptop-b", "laptop-c")
        cls.started = time.monotonic()
        for host in ("laptop-a", "laptop-b"):
            lab("start", host, *BLE_ARGS)
        lab("pair-all", "laptop-a", "laptop-b")

    @classmethod
    def tearDownClass(cls):
        if not os.environ.get("HANDOFF_KEEP_LAB"):
            lab("down")

    def test_1_b_marks_a_near_from_its_beacon(self):
        near = wait_until("b to hear a's beacon", lambda: (p := proximity_of("laptop-b", "laptop-a")) and p.get("near") and p)
        self.assertTrue(near["enforced"])
        self.assertGreaterEqual(near["rssi"], near["thresholdDBM"])
        self.assertIn("bluetooth", [e for e in peer_json("laptop-b", "list") if e["name"] == "laptop-a"][0]["paths"])
        status = bluetooth_status("laptop-b")
        self.assertTrue(status["available"], status)
        self.assertEqual(status["backend"], "hci")
        self.assertRegex(status["address"], r"^[0-3][0-9A-F]:([0-9A-F]{2}:){4}[0-9A-F]{2}$")  # non-resolvable private: top bits 00
        self.assertGreater(status["beaconsHeard"], 0)

    def test_2_out_of_range_disappears_within_the_ttl_and_comes_back(self):
        peer("laptop-a", "publish", "--type", "org.example.reader.document", "--title", "Chapter 9")
        wait_until("b to list a's offer", lambda: offer_of("laptop-b", "laptop-a"))
        lab("range", "laptop-a", "out")
        moved = time.monotonic()
        wait_until("a to vanish from b's list", lambda: not listed("laptop-b", "laptop-a"), timeout=6)
        print(f"\n  a left b's list {time.monotonic() - moved:.1f} s after leaving range (proximity TTL 3 s)")
        failed = peer("laptop-b", "accept", "laptop-a", "--json", check=False)
        self.assertEqual(failed.returncode, 1)
        self.assertEqual(json.loads(failed.stdout)["error"]["code"], "proximity")
        lab("range", "laptop-a", "in")
        wait_until("a back in b's list with its offer", lambda: offer_of("laptop-b", "laptop-a"), timeout=10)
        self.assertEqual(peer_json("laptop-b", "accept", "laptop-a")["title"], "Chapter 9")

    def test_3_a_weak_beacon_is_not_near(self):
        wait_until("a near", lambda: (p := proximity_of("laptop-b", "laptop-a")) and p.get("near"))
        lab("rssi", "laptop-a", "-85")
        try:
            wait_until("a to drop below the threshold", lambda: not listed("laptop-b", "laptop-a"), timeout=10)
        finally:
            lab("rssi", "laptop-a", "reset")
        wait_until("a near again", lambda: (p := proximity_of("laptop-b", "laptop-a")) and p.get("near"), timeout=10)

    def test_4_a_beacon_from_an_unpaired_key_is_not_near_and_not_listed(self):
        lab("start", "laptop-c", *BLE_ARGS)
        try:
            wait_until("b to hear c's beacon without recognising it", lambda: bluetooth_status("laptop-b")["unknownBeacons"] > 0)
            self.assertFalse(listed("laptop-b", "laptop-c"))
            self.assertEqual(peer_json("laptop-c", "list"), [])
        finally:
            lab("stop", "laptop-c")

    def test_5_a_host_without_bluetooth_says_so(self):
        lab("start", "laptop-c")
        try:
            status = bluetooth_status("laptop-c")
            self.assertFalse(status["enabled"])
            self.assertIn("proximity is not enforced", status["state"])
        finally:
            lab("stop", "laptop-c")


if __name__ == "__main__":
    unittest.main(verbosity=2)
