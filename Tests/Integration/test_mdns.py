"""Discovery through Avahi mDNS with a real avahi-daemon (and dbus-daemon) on
every lab host: the service as other tools see it, a handoff with multicast
announcements off, avahi-daemon restarting under a running handoffd,
handoffd starting before avahi-daemon, and a service-name collision.

Needs root: it creates network namespaces through Scripts/lab."""
import json
import os
import re
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import LAB, lab, offer_of, peer, peer_json, require_root, wait_until  # noqa: E402

MDNS_ONLY = ["--discovery", "mdns", "--announce-interval", "1", "--peer-ttl", "4", "--log-level", "debug"]
# How long B may take to see A again after A's avahi-daemon restarts.
RECOVERY_BOUND_S = 10


def browse(host):
    """avahi-browse on `host`: resolved _handoff._tcp services as (instance, protocol, address, port, txt)."""
    out = lab("exec", host, "avahi-browse", "-rpt", "_handoff._tcp").stdout
    services = []
    for line in out.splitlines():
        fields = line.split(";")
        if fields[0] == "=" and len(fields) >= 10:
            # avahi-browse -p writes unsafe characters as \DDD (decimal).
            name = re.sub(r"\\(\d{3})", lambda m: chr(int(m.group(1))), fields[3])
            services.append({"instance": name, "protocol": fields[2], "address": fields[7],
                             "port": int(fields[8]), "txt": fields[9]})
    return services


def daemon_pid(host):
    with open(os.path.join(os.environ.get("HANDOFF_LAB_DIR", "/tmp/handoff-lab"), host, "handoffd.pid")) as f:
        return f.read().strip()


def mdns_status(host):
    return peer_json(host, "status")["mdns"]


def paths_to(host, name):
    for entry in peer_json(host, "list"):
        if entry["name"] == name:
            return entry["paths"]
    return []


class MDNS(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_root()
        lab("down")
        lab("up", "laptop-a", "laptop-b", "laptop-c")
        lab("start", "laptop-a", *MDNS_ONLY)
        lab("start", "laptop-b", *MDNS_ONLY)
        lab("pair-all", "laptop-a", "laptop-b")

    @classmethod
    def tearDownClass(cls):
        if not os.environ.get("HANDOFF_KEEP_LAB"):
            lab("down")

    def a_instance(self):
        return wait_until("a to publish its service", lambda: mdns_status("laptop-a")["instance"])

    def test_1_avahi_browse_sees_the_service_and_it_reveals_nothing(self):
        instance = self.a_instance()
        services = wait_until("avahi-browse on b to resolve a", lambda: [s for s in browse("laptop-b") if s["instance"] == instance])
        self.assertEqual({s["protocol"] for s in services}, {"IPv4", "IPv6"})
        for service in services:
            self.assertEqual(service["port"], peer_json("laptop-a", "status")["transferPort"])
            self.assertIn('"v=1"', service["txt"])
            self.assertIn('"caps=udp"', service["txt"])
            # Neither the device name nor any activity appears in the service.
            for secret in ("laptop-a", "org.example", "Rust"):
                self.assertNotIn(secret, service["instance"] + service["txt"])

    def test_2_publish_list_accept_with_mdns_alone(self):
        user_info = {"page": 7, "data": {"$data": "AAEC"}}
        receipt = json.loads(peer("laptop-a", "publish", "--type", "org.example.reader.document", "--title",
                                  "Rust atomics, chapter 3", "--user-info", json.dumps(user_info), "--json").stdout)
        wait_until("b to list a's offer", lambda: (o := offer_of("laptop-b", "laptop-a")) and o["sequence"] == receipt["sequence"])
        paths = paths_to("laptop-b", "laptop-a")
        self.assertIn("mdns", paths)
        self.assertNotIn("multicast", paths)
        activity = peer_json("laptop-b", "accept", "laptop-a")
        self.assertEqual(activity["userInfo"], user_info)
        self.assertEqual(activity["sequence"], receipt["sequence"])
        for host in ("laptop-a", "laptop-b"):
            self.assertNotIn("multicast", [d["path"] for d in peer_json(host, "status")["discovery"]])

    def test_3_avahi_restart_is_survived_without_restarting_handoffd(self):
        instance = self.a_instance()
        pid_before = daemon_pid("laptop-a")
        wait_until("b to see a by mdns", lambda: "mdns" in paths_to("laptop-b", "laptop-a"))
        lab("avahi", "laptop-a", "stop")
        wait_until("a to report mdns unavailable", lambda: not mdns_status("laptop-a")["available"])
        self.assertIn("not running", mdns_status("laptop-a")["state"])
        wait_until("b to lose a's service", lambda: "mdns" not in paths_to("laptop-b", "laptop-a"))
        started = time.monotonic()
        lab("avahi", "laptop-a", "start")
        wait_until("b to see a by mdns again", lambda: "mdns" in paths_to("laptop-b", "laptop-a"), timeout=RECOVERY_BOUND_S)
        recovered = time.monotonic() - started
        print(f"\n  b saw a again {recovered:.2f} s after a's avahi-daemon restarted (bound {RECOVERY_BOUND_S} s)")
        self.assertEqual(mdns_status("laptop-a")["instance"], instance)
        wait_until("avahi-browse on b to resolve a again", lambda: any(s["instance"] == instance for s in browse("laptop-b")))
        self.assertEqual(daemon_pid("laptop-a"), pid_before)

    def test_4_handoffd_started_before_avahi_registers_when_it_comes_up(self):
        lab("avahi", "laptop-c", "stop")
        lab("start", "laptop-c", *MDNS_ONLY)
        try:
            status = mdns_status("laptop-c")
            self.assertFalse(status["available"])
            self.assertIsNone(status["instance"])
            lab("avahi", "laptop-c", "start")
            instance = wait_until("c to publish once avahi is up", lambda: mdns_status("laptop-c")["instance"])
            wait_until("b to resolve c's service", lambda: any(s["instance"] == instance for s in browse("laptop-b")))
        finally:
            lab("stop", "laptop-c")

    def test_5_a_name_collision_resolves_to_two_services(self):
        # a moves to a period's instance name at a random time in that period, and a daemon that
        # starts takes the current period's at once. Restarted here (not in a period's last minute,
        # so the test stays inside one period), a registers the name it will ask for again below.
        into = time.time() % 900
        if into > 840:
            time.sleep(900 - into + 2)
        lab("stop", "laptop-a")
        lab("start", "laptop-a", *MDNS_ONLY)
        wait_until("a to publish the period's name", lambda: mdns_status("laptop-a")["instance"] and
                   mdns_status("laptop-a")["state"].startswith("published"), timeout=10)
        instance = self.a_instance()
        lab("stop", "laptop-a")
        wait_until("a's service to go", lambda: not any(s["instance"] == instance for s in browse("laptop-b")))
        # Another program on c takes a's instance name first.
        squatter = subprocess.Popen([LAB, "exec", "laptop-c", "avahi-publish", "-s", instance, "_handoff._tcp", "9", "v=1"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_until("the squatter's service", lambda: any(s["instance"] == instance and s["port"] == 9 for s in browse("laptop-b")))
            lab("start", "laptop-a", *MDNS_ONLY)
            renamed = wait_until("a to register under another name",
                                 lambda: (n := mdns_status("laptop-a")["instance"]) and n != instance and n)
            services = wait_until("both services on b",
                                  lambda: (names := {s["instance"] for s in browse("laptop-b")}) >= {instance, renamed} and names)
            self.assertIn(instance, services)
            self.assertTrue(renamed.startswith(instance))
            # The renamed service still carries a's token, so b still recognises a.
            wait_until("b to see a by mdns", lambda: "mdns" in paths_to("laptop-b", "laptop-a"))
        finally:
            lab("pkill", "laptop-c", "-x", "avahi-publish", check=False)
            squatter.wait(timeout=10)

    def test_6_a_burst_of_enable_and_disable_does_not_hold_the_registration(self):
        """Round two, 6: after 1,400 enable/disable toggles avahi kept the entry group "registering"
        for 40 s and more (it adds a hold-off at every commit of a group, 60 s each from the 15th);
        handoffd now commits fresh groups at most once a second, with a watchdog."""
        socket_path = lab("exec", "laptop-a", "sh", "-c", "echo $HANDOFF_SOCKET").stdout.strip()
        toggle = (
            "import json, socket, sys\n"
            "s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); f = s.makefile('rwb')\n"
            "for n in range(1400):\n"
            "    for op in ('disable', 'enable'):\n"
            "        f.write((json.dumps({'id': n, 'op': op}) + '\\n').encode()); f.flush(); json.loads(f.readline())\n")
        lab("exec", "laptop-a", "python3", "-c", toggle, socket_path, timeout=120)
        started = time.monotonic()
        wait_until("a to publish again", lambda: mdns_status("laptop-a")["state"].startswith("published"), timeout=5, interval=0.1)
        print(f"\n  published again {time.monotonic() - started:.2f} s after 1,400 enable/disable toggles (bound 5 s)")
        # Its own name again (after test 5 it had carried a collision's alternative; the squatter is gone).
        instance = mdns_status("laptop-a")["instance"]
        self.assertTrue(instance)
        wait_until("avahi-browse on b to resolve a again", lambda: any(s["instance"] == instance for s in browse("laptop-b")))


if __name__ == "__main__":
    unittest.main(verbosity=2)
