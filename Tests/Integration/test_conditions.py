"""Failure injection, one fault per transport condition, each asserting that
exactly that condition is reported; doctor on a healthy pair; and exactly one
outcome for every willContinue when the sender dies, stalls, the receiver
stops, or two accepts race.

Needs root: it creates network namespaces through Scripts/lab and signals daemons."""
import json
import os
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import LAB, lab, listed, offer_of, peer, peer_json, require_root, wait_until  # noqa: E402

ARGS = ["--ble", "--announce-interval", "1", "--peer-ttl", "4", "--proximity-ttl", "3", "--transfer-timeout", "3",
        "--log-level", "debug"]
LAB_DIR = os.environ.get("HANDOFF_LAB_DIR", "/tmp/handoff-lab")
TYPE = "org.example.reader.document"


def daemon_pid(host):
    with open(os.path.join(LAB_DIR, host, "handoffd.pid")) as f:
        return int(f.read())


def accept_error(host, name):
    """Runs accept and returns the failed condition's code (the command must fail)."""
    result = peer(host, "accept", name, "--json", check=False)
    assert result.returncode == 1, f"accept succeeded: {result.stdout}"
    return json.loads(result.stdout)["error"]


def doctor(host, name=None):
    result = peer(host, "doctor", *([name] if name else []), "--json", check=False)
    report = json.loads(result.stdout)
    return report, {c["code"]: c for c in report["conditions"]}, result.returncode


class Watcher:
    """`handoff-peer watch --json` on a host, collecting events."""

    def __init__(self, host):
        self.process = subprocess.Popen([LAB, "peer", host, "watch", "--json"], stdout=subprocess.PIPE, text=True)
        self.events = []

    def collect(self, until, timeout=15):
        deadline = time.monotonic() + timeout
        os.set_blocking(self.process.stdout.fileno(), False)
        while time.monotonic() < deadline and not until(self.events):
            line = self.process.stdout.readline()
            if line:
                self.events.append(json.loads(line))
            else:
                time.sleep(0.05)
        return self.events

    def outcomes(self):
        """acceptId -> [event names after willContinue]."""
        table = {}
        for event in self.events:
            if event["event"] in ("willContinue", "continued", "failed"):
                table.setdefault(event["acceptId"], []).append(event["event"])
        return table

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=5)


class Conditions(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_root()
        lab("down")
        lab("up", "laptop-a", "laptop-b", "laptop-c")
        for host in ("laptop-a", "laptop-b"):
            lab("start", host, *ARGS)
        lab("pair-all", "laptop-a", "laptop-b")

    @classmethod
    def tearDownClass(cls):
        if not os.environ.get("HANDOFF_KEEP_LAB"):
            lab("down")

    def setUp(self):
        self.publish(TYPE, "Chapter 3")

    def publish(self, type_, title, *extra):
        receipt = json.loads(peer("laptop-a", "publish", "--type", type_, "--title", title, "--json", *extra).stdout)
        wait_until("b to list a's offer", lambda: (o := offer_of("laptop-b", "laptop-a")) and o["sequence"] == receipt["sequence"])
        return receipt

    def restart_a(self):
        lab("start", "laptop-a", *ARGS)
        wait_until("a back", lambda: listed("laptop-b", "laptop-a"), timeout=15)

    def test_01_doctor_on_a_healthy_pair_passes_all_six(self):
        for host, other in (("laptop-b", "laptop-a"), ("laptop-a", "laptop-b")):
            report, checks, code = doctor(host, other)
            self.assertEqual(code, 0, report)
            self.assertEqual(sorted(checks), ["app", "bluetooth", "enabled", "network", "proximity", "trust"])
            for name, check in checks.items():
                self.assertEqual(check["status"], "pass", f"{host}: {name}: {check}")
        self.assertIn("dBm", checks["proximity"]["evidence"])

    def test_02_trust_an_unpaired_peer(self):
        lab("start", "laptop-c", *ARGS)
        try:
            self.assertEqual(accept_error("laptop-b", "laptop-c")["code"], "trust")
            _, checks, code = doctor("laptop-b", "laptop-c")
            self.assertEqual(code, 1)
            self.assertEqual(checks["trust"]["status"], "fail")
        finally:
            lab("stop", "laptop-c")

    def test_03_bluetooth_controller_taken_away(self):
        lab("controller", "laptop-b", "remove")
        try:
            wait_until("b to notice", lambda: not peer_json("laptop-b", "status")["bluetooth"]["available"])
            self.assertEqual(accept_error("laptop-b", "laptop-a")["code"], "bluetooth")
            _, checks, _ = doctor("laptop-b", "laptop-a")
            self.assertEqual(checks["bluetooth"]["status"], "fail")
        finally:
            lab("controller", "laptop-b", "restore")
        wait_until("b's controller back", lambda: peer_json("laptop-b", "status")["bluetooth"]["available"], timeout=10)
        wait_until("a near again", lambda: offer_of("laptop-b", "laptop-a"), timeout=10)

    def test_04_network_link_down(self):
        lab("link", "laptop-a", "down")
        try:
            wait_until("a's announcements to expire on b", lambda: not listed("laptop-b", "laptop-a"), timeout=8)
            error = accept_error("laptop-b", "laptop-a")
            self.assertEqual(error["code"], "network", error)
            self.assertIn("beacon is heard", error["message"])
        finally:
            lab("link", "laptop-a", "up")
        wait_until("a back", lambda: offer_of("laptop-b", "laptop-a"), timeout=10)

    def test_05_network_transfer_port_dropped_and_refused(self):
        lab("block", "laptop-a", "port-drop")
        try:
            self.assertEqual(accept_error("laptop-b", "laptop-a")["code"], "network")
            _, checks, _ = doctor("laptop-b", "laptop-a")
            self.assertEqual(checks["network"]["status"], "fail")
            self.assertIn("silently dropped", checks["network"]["evidence"])
            self.assertIn("47181", checks["network"]["fix"])
            lab("block", "laptop-a", "port-reject")
            _, checks, _ = doctor("laptop-b", "laptop-a")
            self.assertIn("refuses connections", checks["network"]["evidence"])
            self.assertIn("ufw", checks["network"]["fix"])
        finally:
            lab("block", "laptop-a", "none")

    def test_06_network_multicast_filtered_while_unicast_works(self):
        lab("block", "laptop-b", "multicast")
        try:
            # a stays listed through mDNS and unicast announcements; doctor names the filtering.
            wait_until("multicast to go stale", lambda: "multicast" not in
                       next(p for p in peer_json("laptop-b", "list") if p["name"] == "laptop-a")["paths"], timeout=10)
            _, checks, code = doctor("laptop-b", "laptop-a")
            self.assertEqual(checks["network"]["status"], "warn")
            self.assertIn("not by multicast", checks["network"]["evidence"])
            self.assertEqual(code, 0)
            self.assertEqual(peer_json("laptop-b", "accept", "laptop-a")["title"], "Chapter 3")
        finally:
            lab("block", "laptop-b", "none")

    def test_07_enabled_handoff_disabled_on_the_peer(self):
        peer("laptop-a", "disable")
        try:
            wait_until("b to learn a is disabled", lambda: accept_error("laptop-b", "laptop-a")["code"] == "enabled")
            _, checks, _ = doctor("laptop-b", "laptop-a")
            self.assertEqual(checks["enabled"]["status"], "fail")
            self.assertIsNone(offer_of("laptop-b", "laptop-a"))
            # It survives a restart.
            lab("stop", "laptop-a")
            lab("start", "laptop-a", *ARGS)
            self.assertFalse(peer_json("laptop-a", "status")["enabled"])
        finally:
            peer("laptop-a", "enable")
        # The restart dropped a's activity (apps make theirs current again); enabled, a offers again.
        self.publish(TYPE, "Chapter 3")

    def test_08_proximity_peer_moved_out_of_range(self):
        lab("range", "laptop-a", "out")
        try:
            wait_until("a not near", lambda: not listed("laptop-b", "laptop-a"), timeout=8)
            error = accept_error("laptop-b", "laptop-a")
            self.assertEqual(error["code"], "proximity", error)
            _, checks, _ = doctor("laptop-b", "laptop-a")
            self.assertEqual(checks["proximity"]["status"], "fail")
            self.assertIn("threshold -70 dBm", checks["proximity"]["evidence"])
        finally:
            lab("range", "laptop-a", "in")
        wait_until("a back", lambda: offer_of("laptop-b", "laptop-a"), timeout=10)

    def test_09_app_type_not_declared_on_the_receiver(self):
        self.publish("org.example.undeclared", "Nobody continues this")
        served = peer_json("laptop-a", "status")["transfers"]["served"]
        self.assertEqual(accept_error("laptop-b", "laptop-a")["code"], "app")
        _, checks, _ = doctor("laptop-b", "laptop-a")
        self.assertEqual(checks["app"]["status"], "fail")
        # Refused before anything was fetched.
        self.assertEqual(peer_json("laptop-a", "status")["transfers"]["served"], served)

    def test_10_sender_killed_mid_transfer_gives_one_failed_with_connection_lost(self):
        watcher = Watcher("laptop-b")
        try:
            watcher.collect(lambda e: False, timeout=0.5)
            pid = daemon_pid("laptop-a")
            os.kill(pid, signal.SIGSTOP)  # a accepts the connection (kernel) but never answers
            accept = subprocess.Popen([LAB, "peer", "laptop-b", "accept", "laptop-a", "--json"], stdout=subprocess.PIPE, text=True)
            time.sleep(1)
            os.kill(pid, signal.SIGKILL)
            out, _ = accept.communicate(timeout=15)
            self.assertEqual(json.loads(out)["error"]["code"], "connection-lost")
            events = watcher.collect(lambda e: any(x["event"] == "failed" for x in e))
            self.assertEqual(list(watcher.outcomes().values()), [["willContinue", "failed"]])
            failed = [e for e in events if e["event"] == "failed"][0]
            self.assertEqual(failed["error"]["code"], "connection-lost")
        finally:
            watcher.stop()
            self.restart_a()

    def test_11_a_stalled_sender_times_out_once(self):
        watcher = Watcher("laptop-b")
        pid = daemon_pid("laptop-a")
        try:
            watcher.collect(lambda e: False, timeout=0.5)
            os.kill(pid, signal.SIGSTOP)
            self.assertEqual(accept_error("laptop-b", "laptop-a")["code"], "timed-out")
            watcher.collect(lambda e: any(x["event"] == "failed" for x in e))
            self.assertEqual(list(watcher.outcomes().values()), [["willContinue", "failed"]])
        finally:
            os.kill(pid, signal.SIGCONT)
            watcher.stop()

    def test_12_two_racing_accepts_share_one_outcome(self):
        watcher = Watcher("laptop-b")
        try:
            watcher.collect(lambda e: False, timeout=0.5)
            runs = [subprocess.Popen([LAB, "peer", "laptop-b", "accept", "laptop-a", "--json"], stdout=subprocess.PIPE, text=True)
                    for _ in range(2)]
            results = [json.loads(run.communicate(timeout=15)[0]) for run in runs]
            self.assertEqual(results[0], results[1])
            self.assertEqual(results[0]["title"], "Chapter 3")
            watcher.collect(lambda e: sum(x["event"] == "continued" for x in e) >= 1, timeout=5)
            for outcome in watcher.outcomes().values():
                self.assertEqual(outcome, ["willContinue", "continued"])
        finally:
            watcher.stop()

    def test_13_receiver_stopped_mid_transfer_still_reports_once(self):
        watcher = Watcher("laptop-b")
        pid = daemon_pid("laptop-a")
        try:
            watcher.collect(lambda e: False, timeout=0.5)
            os.kill(pid, signal.SIGSTOP)
            accept = subprocess.Popen([LAB, "peer", "laptop-b", "accept", "laptop-a", "--json"], stdout=subprocess.PIPE, text=True)
            watcher.collect(lambda e: any(x["event"] == "willContinue" for x in e))
            lab("stop", "laptop-b")
            accept.communicate(timeout=15)
            watcher.collect(lambda e: any(x["event"] == "failed" for x in e), timeout=5)
            self.assertEqual(list(watcher.outcomes().values()), [["willContinue", "failed"]])
        finally:
            os.kill(pid, signal.SIGCONT)
            watcher.stop()
            lab("start", "laptop-b", *ARGS)
            wait_until("b sees a again", lambda: listed("laptop-b", "laptop-a"), timeout=15)


if __name__ == "__main__":
    unittest.main(verbosity=2)
