"""Attack regression tests (issue 15): an unpaired host on the link and a
stuck local client attack laptop-a and laptop-b, which are paired. Each test
reproduces an attack from the outside review and checks what the fix
guarantees; it prints the figures (RSS, threads, time to a real publish) as
`FIGURE` lines for Docs/SECURITY.md. Needs root (network namespaces)."""
import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import LAB, lab, listed, offer_of, peer, peer_json, require_root, wait_until  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ATTACKER = os.path.join(HERE, "attacker.py")
LAB_DIR = os.path.realpath(os.environ.get("HANDOFF_LAB_DIR", "/tmp/handoff-lab"))
DAEMON_ARGS = ["--announce-interval", "1", "--peer-ttl", "4"]
TRANSFER_PORT = "47181"


def figure(name, value):
    print(f"FIGURE {name} {value}", file=sys.stderr, flush=True)


def daemon_pid(host):
    with open(os.path.join(LAB_DIR, host, "handoffd.pid")) as f:
        return int(f.read().strip())


def proc_status(host):
    """RSS in MiB and thread count of host's handoffd."""
    fields = {}
    with open(f"/proc/{daemon_pid(host)}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["Threads"])


def address(host):
    out = lab("exec", host, "ip", "-4", "-o", "addr", "show", "eth0").stdout
    return out.split()[3].split("/")[0]


def attack(host, *args, timeout=120):
    result = lab("exec", host, "python3", ATTACKER, *args, timeout=timeout)
    return json.loads(result.stdout.strip().splitlines()[-1])


def attack_in_background(host, *args):
    return subprocess.Popen([LAB, "exec", host, "python3", ATTACKER, *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


class Attacks(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_root()
        lab("down")
        lab("up", "laptop-a", "laptop-b", "laptop-c", "attacker")
        for host in ("laptop-a", "laptop-b"):
            lab("start", host, *DAEMON_ARGS)
        lab("pair-all", "laptop-a", "laptop-b", timeout=90)
        cls.a_address = address("laptop-a")
        cls.b_address = address("laptop-b")

    @classmethod
    def tearDownClass(cls):
        if not os.environ.get("HANDOFF_KEEP_LAB"):
            lab("down")

    def local_socket(self, host):
        path = lab("exec", host, "sh", "-c", "echo $HANDOFF_SOCKET").stdout.strip()
        self.assertTrue(path, "the lab sets HANDOFF_SOCKET in each host")
        return path

    def time_to_publish(self, title):
        """Publish on a; seconds until b lists it."""
        started = time.monotonic()
        receipt = json.loads(peer("laptop-a", "publish", "--type", "org.example.attack", "--title", title, "--json").stdout)
        wait_until(f"b to list '{title}'", lambda: (o := offer_of("laptop-b", "laptop-a")) and o["sequence"] == receipt["sequence"],
                   timeout=30, interval=0.02)
        return time.monotonic() - started

    def test_1_a_closed_subscriber_socket_never_reaches_another_connection(self):
        """Finding 1: stuck subscribers fall more than 1,024 events behind and are
        disconnected while the daemon's threads still hold their sockets; when they
        go away those threads wake up. An unpaired host that keeps reconnecting to
        the transfer port meanwhile must never receive a byte of the local user's
        events or an API reply."""
        path = self.local_socket("laptop-a")
        stuck = attack_in_background("laptop-a", "stuck", path, "16", "120")
        stuck.stdout.readline()
        probe = attack_in_background("attacker", "reconnect", self.a_address, TRANSFER_PORT, "20")
        attack("laptop-a", "toggle", path, "3000", timeout=120)
        # The subscribers go away: threads blocked on their sockets return and carry on.
        stuck.kill()
        stuck.communicate()
        attack("laptop-a", "toggle", path, "1000", timeout=120)
        out, _ = probe.communicate(timeout=60)
        result = json.loads(out.strip().splitlines()[-1])
        figure("f1.attempts", result["attempts"])
        figure("f1.bytesReceivedByAttacker", result["bytes"])
        self.assertGreater(result["attempts"], 20, "the attacker did not get to connect")
        self.assertEqual(result["bytes"], 0, f"the transfer port sent an unpaired host: {result['sample']!r}")
        self.assertTrue(peer_json("laptop-a", "status")["enabled"])

    def test_2_an_oversized_clear_frame_is_refused_from_its_header(self):
        """Finding 2: 12 connections declaring 64 MiB handshake frames took the daemon to 1.3 GB."""
        before, _ = proc_status("laptop-b")
        result = attack("attacker", "bigframe", self.b_address, TRANSFER_PORT, "12", timeout=120)
        after, _ = proc_status("laptop-b")
        figure("f2.rssBeforeMiB", round(before, 1))
        figure("f2.rssAfterMiB", round(after, 1))
        figure("f2.maxBytesAcceptedPerConnection", result["maxBytesSent"])
        self.assertEqual(result["connections"], 12)
        # What a connection could push is what the kernel's socket buffers take, not the declared 64 MiB.
        self.assertLess(result["maxBytesSent"], 8 << 20)
        self.assertLess(after - before, 32, "memory grew with the declared frame sizes")

    def test_3_a_beacon_flood_neither_grows_memory_nor_hides_a_real_publish(self):
        """Finding 4: 20k forged beacons/s took RSS 46 -> 234 MB and delayed a real publish by seconds."""
        baseline = self.time_to_publish("before the flood")
        before, _ = proc_status("laptop-b")
        flood = attack_in_background("attacker", "beacons", "20", self.b_address)
        time.sleep(3)
        delays = []
        for n in range(10):  # round two, 4: two of five changes were lost under a 20k/s flood
            delays.append(self.time_to_publish(f"during the flood {n}"))
            time.sleep(0.3)
        out, _ = flood.communicate(timeout=60)
        after, _ = proc_status("laptop-b")
        sent = json.loads(out.strip().splitlines()[-1])
        budgets = peer_json("laptop-b", "status").get("budgets", {}).get("discovery") or {"rateLimited": 0, "queueFull": 0}
        figure("f4.floodDatagramsPerSecond", sent["perSecond"])
        figure("f4.publishVisibleBeforeSeconds", round(baseline, 3))
        figure("f4.publishVisibleDuringFloodSeconds", ",".join(f"{d:.3f}" for d in delays))
        figure("f4.rssBeforeMiB", round(before, 1))
        figure("f4.rssAfterMiB", round(after, 1))
        figure("f4.rateLimited", budgets["rateLimited"])
        self.assertGreater(sent["perSecond"], 1000, "the flood did not happen")
        self.assertGreater(budgets["rateLimited"] + budgets["queueFull"], 0, "nothing was refused: the flood did not arrive")
        self.assertLess(after - before, 32, "memory grew with the flood")
        self.assertLess(max(delays), 5.0, "a real publish waited behind the flood")
        figure("f4.publishesWithinOneSecond", f"{sum(d < 1.0 for d in delays)}/{len(delays)}")

    def test_4_trickled_connections_are_bounded_and_cut(self):
        """Finding 6: 2,000 trickled connections held 2,012 threads and stalled the local API."""
        _, threads_before = proc_status("laptop-b")
        trickle = attack_in_background("attacker", "trickle", self.b_address, TRANSFER_PORT, "400", "9")
        time.sleep(3)
        _, threads_during = proc_status("laptop-b")
        started = time.monotonic()
        peer("laptop-b", "status")
        status_seconds = time.monotonic() - started
        out, _ = trickle.communicate(timeout=60)
        result = json.loads(out.strip().splitlines()[-1])
        counters = (peer_json("laptop-b", "status").get("budgets", {}).get("transferConnections")
                    or {"refusedOverLimit": 0})
        figure("f6.threadsBefore", threads_before)
        figure("f6.threadsDuring", threads_during)
        figure("f6.statusSecondsDuring", round(status_seconds, 3))
        figure("f6.connectionsOpened", result["opened"])
        figure("f6.stillOpenAfter9s", result["stillOpen"])
        figure("f6.refusedOverLimit", counters["refusedOverLimit"])
        self.assertLessEqual(threads_during - threads_before, 40, "a thread per trickled connection")
        self.assertEqual(result["stillOpen"], 0, "trickled connections outlived the handshake deadline")
        self.assertGreater(counters["refusedOverLimit"], 0)

    def test_4b_a_stranger_with_many_addresses_cannot_hold_every_transfer_slot(self):
        """Round two, 1: from 16 addresses, sending nothing, a stranger held all 32 slots until each 5 s
        handshake deadline; every accept failed with connection-lost. A full pool now evicts the
        oldest connection that has not proven who it is."""
        self.hold_slots_from(16)

    def test_4d_from_256_addresses_accepts_and_pairing_still_work(self):
        """Round two, 1, the figure's second row: 256 stranger addresses, 10 of 10 accepts, and a new
        device (c) pairs with a while the stranger holds a's slots, opening up to 200 new connections a
        second. At 100 a second c's connection used to be reset eight times running: the overall rate
        for unknown addresses was charged at accept, so the stranger's silent connections spent it.
        It is now charged when a hello asks for a handshake."""
        lab("start", "laptop-c", *DAEMON_ARGS)
        try:
            # Twice the rate at which pairing failed in CI (102 a second), when the rate for unknown
            # addresses was charged at accept.
            self.hold_slots_from(256, pair_with="laptop-c", rate=200)
        finally:
            c_id = peer_json("laptop-c", "id")["deviceId"]
            peer("laptop-a", "untrust", c_id, check=False)
            lab("stop", "laptop-c", check=False)

    def hold_slots_from(self, count, pair_with=None, rate=80):
        sources = [f"169.254.{31 + n // 250}.{1 + n % 250}" for n in range(count)]
        batch = "".join(f"addr add {source}/16 dev eth0\n" for source in sources)
        subprocess.run([LAB, "exec", "attacker", "ip", "-batch", "-"], input=batch, text=True, check=True, capture_output=True)
        try:
            receipt = json.loads(peer("laptop-a", "publish", "--type", "org.example.attack", "--title", "Slots", "--json").stdout)
            wait_until("b to list it", lambda: (o := offer_of("laptop-b", "laptop-a")) and o["sequence"] == receipt["sequence"], timeout=20)
            hold = attack_in_background("attacker", "hold", self.a_address, TRANSFER_PORT, ",".join(sources), "40", str(rate))
            wait_until("the stranger to fill a's transfer slots", lambda: peer_json("laptop-a", "status")["budgets"]
                       ["transferConnections"]["active"] >= 32, timeout=15, interval=0.2)
            outcomes = []
            for _ in range(10):
                result = peer("laptop-b", "accept", "laptop-a", "--json", check=False)
                outcomes.append(result.returncode)
                time.sleep(0.5)
            paired = None
            if pair_with:
                listener = subprocess.Popen([LAB, "peer", "laptop-a", "pair", "--yes", "--timeout", "30"],
                                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                time.sleep(0.5)
                initiator = peer(pair_with, "pair", "--address", self.a_address, "--yes", check=False)
                output, _ = listener.communicate(timeout=60)
                paired = initiator.returncode == 0 and listener.returncode == 0
                figure(f"slots{count}.pairingWhileHeld", "paired" if paired else f"failed: {initiator.stdout}{initiator.stderr}{output}")
            counters = peer_json("laptop-a", "status")["budgets"]["transferConnections"]
            out, _ = hold.communicate(timeout=90)
            opened = json.loads(out.strip().splitlines()[-1])
            figure(f"slots{count}.acceptsSucceeded", f"{outcomes.count(0)}/10")
            figure(f"slots{count}.strangerConnectionsPerSecond", opened["perSecond"])
            figure(f"slots{count}.evictedUnproven", counters["evictedUnproven"])
            figure(f"slots{count}.handshakesRefused", counters.get("handshakesRefused"))
            self.assertEqual(outcomes, [0] * 10, "an accept failed while a stranger held the transfer slots")
            self.assertGreater(counters["evictedUnproven"], 0)
            if pair_with:
                self.assertTrue(paired, "a new device could not pair while a stranger held the transfer slots")
        finally:
            batch = "".join(f"addr del {source}/16 dev eth0\n" for source in sources)
            subprocess.run([LAB, "exec", "attacker", "ip", "-force", "-batch", "-"], input=batch, text=True, capture_output=True)

    def test_4c_a_stranger_polling_pairing_cannot_take_the_window(self):
        """Round two, 2: a stranger polling with pairing hellos 5 times a second took the only pairing
        session, so the real laptop was told "pairing is not open here". Now every device that asks is
        a candidate with its own code (one per address); b's user compares codes with c's screen,
        declines the stranger, and pairs with c in the same window, 5 times of 5."""
        lab("start", "attacker", *DAEMON_ARGS)
        lab("start", "laptop-c", *DAEMON_ARGS)
        b_id = peer_json("laptop-b", "id")["deviceId"]
        c_id = peer_json("laptop-c", "id")["deviceId"]
        stranger_id = peer_json("attacker", "id")["deviceId"]
        # The stranger: handoffd's own tool in a loop, 5 tries a second, confirming whatever it sees.
        poll = subprocess.Popen([LAB, "exec", "attacker", "sh", "-c",
                                 f"while :; do handoff-peer pair --address {self.b_address} --yes --json; sleep 0.2; done"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        paired, strangers_shown = 0, 0
        try:
            for _ in range(5):
                listener = subprocess.Popen([LAB, "peer", "laptop-b", "pair", "--timeout", "60"], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
                lines = iter(listener.stdout.readline, "")
                next(line for line in lines if line.startswith("Pairing is open"))
                time.sleep(0.5)  # the stranger, polling, asks first
                initiator = None
                for _ in range(50):  # c is refused until b's handshake slot for c is free: retry as the lab does
                    initiator = subprocess.Popen([LAB, "peer", "laptop-c", "pair", "--address", self.b_address, "--yes"],
                                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
                    c_lines = iter(initiator.stdout.readline, "")
                    c_code = next((line.split(":", 1)[1].strip() for line in c_lines if line.startswith("Both screens")), None)
                    if c_code:
                        break
                    initiator.wait(timeout=30)
                    initiator.stdout.close()
                    time.sleep(0.1)
                self.assertTrue(c_code, "c never reached b's pairing")
                # b's user: each device that asks is shown with its code; pair only the one c's screen shows.
                while True:
                    asking = next(line for line in lines if line.endswith("asks to pair.\n"))
                    code = next(line for line in lines if line.startswith("Both screens")).split(":", 1)[1].strip()
                    if code == c_code:
                        self.assertIn(c_id, asking)
                        listener.stdin.write("y\n")
                        listener.stdin.flush()
                        break
                    self.assertIn(stranger_id, asking, "a device other than c or the stranger asked")
                    strangers_shown += 1
                    listener.stdin.write("n\n")
                    listener.stdin.flush()
                self.assertEqual(initiator.wait(timeout=60), 0, "c did not pair with b")
                initiator.stdout.close()
                rest = "".join(lines)
                listener.stdout.close()
                listener.stdin.close()
                self.assertEqual(listener.wait(timeout=30), 0, rest)
                paired += 1
                peer("laptop-b", "untrust", c_id)
                peer("laptop-c", "untrust", b_id)
        finally:
            os.killpg(poll.pid, 9)
            poll.wait()
            lab("stop", "attacker", check=False)
            lab("stop", "laptop-c", check=False)
        figure("pairing.realPairings", f"{paired}/5")
        figure("pairing.strangerCandidatesDeclined", strangers_shown)
        self.assertEqual(paired, 5)
        self.assertGreater(strangers_shown, 0, "the stranger never reached b's pairing: the test did not attack")
        self.assertFalse(listed("laptop-b", "attacker"), "b paired with the stranger")

    def test_5_sigterm_with_stuck_subscribers_still_says_goodbye(self):
        """Finding 7: a subscriber that does not read blocked shutdown (no goodbye, signal ignored)."""
        self.time_to_publish("before stopping")
        path = self.local_socket("laptop-a")
        stuck = attack_in_background("laptop-a", "stuck", path, "100", "30")
        stuck.stdout.readline()
        # Enough events to fill the subscribers' sockets, too few to put them over
        # the 1,024-event backlog (which would disconnect them): they stay, stuck.
        attack("laptop-a", "toggle", path, "700", timeout=120)
        pid = daemon_pid("laptop-a")
        started = time.monotonic()
        os.kill(pid, 15)
        wait_until("a's handoffd to exit", lambda: not os.path.exists(f"/proc/{pid}"), timeout=10, interval=0.02)
        exit_seconds = time.monotonic() - started
        # The goodbye makes b drop a at once rather than after the 4 s TTL.
        wait_until("b to drop a", lambda: not any(e["name"] == "laptop-a" for e in peer_json("laptop-b", "list")), timeout=10, interval=0.05)
        gone_seconds = time.monotonic() - started
        stuck.kill()
        stuck.communicate()
        figure("f7.exitSeconds", round(exit_seconds, 3))
        figure("f7.peerDroppedAfterSeconds", round(gone_seconds, 3))
        self.assertLess(exit_seconds, 5.0)
        self.assertLess(gone_seconds, 3.5, "b dropped a only at the TTL: no goodbye was sent")
        lab("start", "laptop-a", *DAEMON_ARGS)


if __name__ == "__main__":
    unittest.main(verbosity=2)
