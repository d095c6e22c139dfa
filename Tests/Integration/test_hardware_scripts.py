"""Scripts/hardware/handoff-check in lab mode, end to end: the script that
checks two real laptops, run unchanged against two lab hosts with emulated
Bluetooth controllers (only its "run a command on host X" differs), so it
cannot rot. Its JSON report must say that every check passed and carry the
latency figures.

The ssh mode runs too, through a stand-in for ssh that runs the remote
command in the lab host of that name: the quoting, the prompts over a pipe
and the already-paired path, as on laptops.

Needs root: the script builds its lab through Scripts/lab."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import LAB, REPO, lab, require_root  # noqa: E402

CHECK = os.path.join(REPO, "Scripts", "hardware", "handoff-check")
EXPECTED_CHECKS = [
    "prerequisites a (hw-a)", "prerequisites b (hw-b)", "bluetooth a (hw-a)", "bluetooth b (hw-b)", "pair",
    "discovery latency", "handoff A to B", "doctor a -> b (hw-a about hw-b)", "doctor b -> a (hw-b about hw-a)",
]


class HardwareScriptsInLab(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_root()
        lab("down")  # like every lab test: start from no lab (the script refuses to replace one)
        cls.scratch = tempfile.TemporaryDirectory(prefix="handoff-check-")
        cls.report_path = os.path.join(cls.scratch.name, "report.json")
        # --keep: test_5 drives the same two hosts again, in ssh mode.
        cls.process = subprocess.run([CHECK, "--mode", "lab", "--rounds", "3", "--keep", "--report", cls.report_path],
                                 capture_output=True, text=True, timeout=600)
        print("\n" + cls.process.stdout + cls.process.stderr)
        with open(cls.report_path) as handle:
            cls.report = json.load(handle)

    @classmethod
    def tearDownClass(cls):
        cls.scratch.cleanup()
        lab("down")

    def test_1_every_check_passed(self):
        failed = [check for check in self.report["checks"] if check["status"] != "pass"]
        self.assertEqual(failed, [], json.dumps(failed, indent=2))
        self.assertEqual([check["name"] for check in self.report["checks"]], EXPECTED_CHECKS)
        self.assertTrue(self.report["ok"])
        self.assertEqual(self.process.returncode, 0)
        self.assertEqual(self.report["mode"], "lab")

    def test_2_the_report_has_the_latency_figures(self):
        latency = self.report["latency"]
        discovery = latency["discovery"]
        for key in ("bListsAMillis", "aListsBMillis", "startCommandMillis"):
            self.assertIsInstance(discovery[key], (int, float), key)
            self.assertGreater(discovery[key], 0, key)
        for key in ("offer", "accept"):
            self.assertEqual(len(latency[key]["samples"]), 3, key)
            self.assertLessEqual(latency[key]["min"], latency[key]["median"])
            self.assertLessEqual(latency[key]["median"], latency[key]["max"])
            self.assertGreater(latency[key]["min"], 0, key)
        print(f"\n  discovery: B listed A {discovery['bListsAMillis']} ms, A listed B {discovery['aListsBMillis']} ms "
              f"after A's daemon start; offer median {latency['offer']['median']} ms; accept median {latency['accept']['median']} ms")

    def test_3_the_report_names_both_hosts_and_what_they_run(self):
        hosts = self.report["hosts"]
        self.assertEqual(hosts["a"]["target"], "lab:hw-a")
        self.assertEqual(hosts["b"]["target"], "lab:hw-b")
        for host in hosts.values():
            self.assertTrue(host["deviceId"])
            self.assertTrue(host["bluetooth"]["available"])
            self.assertIn("multicast", [path["path"] for path in host["discovery"]])
        doctor = [check for check in self.report["checks"] if check["name"].startswith("doctor")]
        for check in doctor:
            codes = {condition["code"] for condition in check["details"]["doctor"]["conditions"]}
            self.assertTrue({"trust", "bluetooth", "network", "enabled", "proximity", "app"} <= codes, codes)

    def test_4_the_text_report_sits_next_to_the_json(self):
        with open(self.report_path[:-len(".json")] + ".txt") as handle:
            text = handle.read()
        self.assertIn("[PASS] handoff A to B", text)
        self.assertIn("Result: no check failed", text)

    def test_5_the_ssh_mode_runs_the_same_checks_over_ssh(self):
        fake = os.path.join(self.scratch.name, "bin")
        os.makedirs(fake, exist_ok=True)
        with open(os.path.join(fake, "ssh"), "w") as handle:
            # ssh [options] DESTINATION -- COMMAND: COMMAND in the lab host DESTINATION, through sh as sshd would.
            handle.write(f"""#!/bin/sh
while [ "$1" != "--" ]; do destination=$1; shift; done
shift
exec {LAB} exec "$destination" sh -c "$1"
""")
        os.chmod(os.path.join(fake, "ssh"), 0o755)
        report_path = os.path.join(self.scratch.name, "ssh.json")
        process = subprocess.run([CHECK, "--mode", "ssh", "--a", "hw-a", "--b", "hw-b", "--no-restart", "--rounds", "2",
                                  "--ssh-options", "-p 22", "--report", report_path],
                                 capture_output=True, text=True, timeout=300,
                                 env={**os.environ, "PATH": fake + ":" + os.environ["PATH"]})
        print("\n" + process.stdout + process.stderr)
        with open(report_path) as handle:
            report = json.load(handle)
        self.assertEqual(report["mode"], "ssh")
        self.assertEqual(report["hosts"]["b"]["target"], "ssh:hw-b")
        self.assertEqual([c["name"] for c in report["checks"]], EXPECTED_CHECKS)
        failed = [check for check in report["checks"] if check["status"] != "pass"]
        self.assertEqual(failed, [], json.dumps(failed, indent=2))
        self.assertIn("already paired", [c for c in report["checks"] if c["name"] == "pair"][0]["evidence"])
        self.assertEqual(len(report["latency"]["accept"]["samples"]), 2)
        self.assertEqual(process.returncode, 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
