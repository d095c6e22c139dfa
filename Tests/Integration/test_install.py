"""Scripts/install and Scripts/uninstall into a temporary DESTDIR: every
promised file with a sane mode, the manifest equal to what is on disk, the
systemd unit accepted by `systemd-analyze verify` (where systemd is
installed), completions and manual pages that match the binaries' --help,
the firewall definitions opening the documented ports, and an uninstall that
leaves the DESTDIR empty.

Reuses the debug binaries the test run already built (--bindir-from), so it
takes seconds, not a release build. Needs no root and no lab."""
import configparser
import hashlib
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ElementTree

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import REPO  # noqa: E402

INSTALL = os.path.join(REPO, "Scripts", "install")
UNINSTALL = os.path.join(REPO, "Scripts", "uninstall")
BIN = os.environ.get("HANDOFF_BIN", os.path.join(REPO, ".build", "debug"))
PREFIX = "/usr/local"
PROGRAMS = ["handoffd", "handoff-peer", "handoff-ble-check"]
# Every file install promises (README, Scripts/install --help), with its mode.
PROMISED = {
    **{f"{PREFIX}/bin/{program}": 0o755 for program in PROGRAMS},
    f"{PREFIX}/lib/systemd/user/handoffd.service": 0o644,
    "/etc/default/handoffd": 0o644,
    "/etc/ufw/applications.d/handoff": 0o644,
    "/etc/firewalld/services/handoff.xml": 0o644,
    f"{PREFIX}/share/bash-completion/completions/handoff-peer": 0o644,
    f"{PREFIX}/share/zsh/site-functions/_handoff-peer": 0o644,
    f"{PREFIX}/share/man/man1/handoff-peer.1": 0o644,
    f"{PREFIX}/share/man/man1/handoff-ble-check.1": 0o644,
    f"{PREFIX}/share/man/man8/handoffd.8": 0o644,
    f"{PREFIX}/share/handoff/install-manifest": 0o644,
}
# The ports handoffd uses (README "handoffd", Docs): protocol, port.
PORTS = {("udp", 47180), ("udp", 47181), ("tcp", 47181), ("udp", 5353)}


def run(*argv, env=None, check=True):
    result = subprocess.run(list(argv), capture_output=True, text=True, timeout=300,
                            env={**os.environ, **(env or {})})
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} exited {result.returncode}\n{result.stdout}\n{result.stderr}")
    return result


def tree(root):
    """Every path under root, relative with a leading /, directories included."""
    found = set()
    for directory, subdirectories, files in os.walk(root):
        for name in subdirectories + files:
            found.add("/" + os.path.relpath(os.path.join(directory, name), root))
    return found


def commands_of(peer):
    overview = run(peer, "--help").stdout
    section = overview.split("Commands:\n", 1)[1].split("\n\n", 1)[0]
    return [line.split()[0] for line in section.splitlines() if line.startswith("  ") and not line.startswith("   ")]


def options_of(peer, command):
    text = run(peer, command, "--help").stdout
    section = text.split("Options:\n", 1)[1].split("\n\n", 1)[0]
    return [line.split()[0] for line in section.splitlines() if line.startswith("  --")]


class Install(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        for program in PROGRAMS:
            if not os.access(os.path.join(BIN, program), os.X_OK):
                raise AssertionError(f"no {BIN}/{program}: build first (Scripts/build), or set HANDOFF_BIN")
        cls.destdir = tempfile.mkdtemp(prefix="handoff-destdir-")
        cls.installed = run(INSTALL, "--destdir", cls.destdir, "--bindir-from", BIN)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.destdir, ignore_errors=True)

    def path(self, path):
        return self.destdir + path

    def manifest(self):
        entries = {}
        with open(self.path(f"{PREFIX}/share/handoff/install-manifest")) as handle:
            for line in handle:
                if line.strip() and not line.startswith("#"):
                    fields = line.split()
                    entries[fields[-1]] = fields
        return entries

    def test_1_every_promised_file_is_there_with_a_sane_mode(self):
        for path, mode in PROMISED.items():
            info = os.lstat(self.path(path))
            self.assertTrue(stat.S_ISREG(info.st_mode), f"{path} is not a regular file")
            self.assertEqual(stat.S_IMODE(info.st_mode), mode, f"{path} has mode {oct(stat.S_IMODE(info.st_mode))}")
        for path in tree(self.destdir):
            info = os.lstat(self.path(path))
            if stat.S_ISDIR(info.st_mode):
                self.assertEqual(stat.S_IMODE(info.st_mode), 0o755, f"directory {path}")
            self.assertFalse(stat.S_IMODE(info.st_mode) & 0o022, f"{path} is group- or world-writable")
        self.assertEqual(tree(self.destdir) - {p for p in tree(self.destdir) if os.path.isdir(self.path(p))}, set(PROMISED),
                         "install put files there that it does not promise")
        for program in PROGRAMS:
            run(self.path(f"{PREFIX}/bin/{program}"), "--help")

    def test_2_the_manifest_is_exactly_what_is_on_disk(self):
        entries = self.manifest()
        self.assertEqual(set(entries), tree(self.destdir))
        for path, fields in entries.items():
            if fields[0] in ("file", "config"):
                with open(self.path(path), "rb") as handle:
                    self.assertEqual(hashlib.sha256(handle.read()).hexdigest(), fields[2], path)
                self.assertEqual(int(fields[1], 8), stat.S_IMODE(os.stat(self.path(path)).st_mode), path)
        self.assertEqual(entries["/etc/default/handoffd"][0], "config")

    def test_3_the_user_unit_has_no_privileges_and_systemd_accepts_it(self):
        with open(self.path(f"{PREFIX}/lib/systemd/user/handoffd.service")) as handle:
            unit = handle.read()
        settings = {}
        for line in unit.splitlines():
            if "=" in line and not line.startswith("#"):
                key, value = line.split("=", 1)
                settings.setdefault(key, []).append(value)
        # A user unit: no User=, no capabilities, the sandbox made possible by its own user namespace.
        self.assertNotIn("User", settings)
        self.assertEqual(settings["CapabilityBoundingSet"], [""])
        self.assertEqual(settings["AmbientCapabilities"], [""])
        self.assertEqual(settings["PrivateUsers"], ["yes"])
        self.assertEqual(settings["NoNewPrivileges"], ["yes"])
        self.assertEqual(settings["ProtectSystem"], ["strict"])
        self.assertEqual(settings["LimitNOFILE"], ["4096"])
        self.assertEqual(settings["WantedBy"], ["default.target"])
        self.assertNotIn("AF_BLUETOOTH", settings["RestrictAddressFamilies"][0])
        self.assertEqual(settings["EnvironmentFile"], ["-/etc/default/handoffd", "-%E/handoff/handoffd.env"])
        self.assertEqual(settings["ExecStart"], [f"{PREFIX}/bin/handoffd --state-dir %h/.local/state/handoff "
                                                 "--socket %t/handoff/handoffd.sock $HANDOFF_OPTIONS"])
        self.assertEqual(settings["ReadWritePaths"], ["%h/.local/state/handoff"])
        # The Debian package ships the file as it is in the tree: /usr/bin.
        with open(os.path.join(REPO, "Packaging", "systemd", "handoffd.service")) as handle:
            self.assertEqual(handle.read(), unit.replace(f"{PREFIX}/bin/handoffd", "/usr/bin/handoffd"))

        analyze = shutil.which("systemd-analyze")
        if not analyze:
            print("\n  skipped systemd-analyze verify: systemd-analyze is not installed here (Debian package 'systemd')")
            return
        # verify needs the binary where ExecStart says; point it into the DESTDIR.
        with tempfile.TemporaryDirectory() as scratch:
            path = os.path.join(scratch, "handoffd.service")
            with open(path, "w") as handle:
                handle.write(unit.replace(f"{PREFIX}/bin/", self.path(f"{PREFIX}/bin/")))
            environment = {"XDG_RUNTIME_DIR": scratch}
            result = run(analyze, "--user", "verify", "--man=no", path, check=False, env=environment)
            self.assertEqual(result.returncode, 0, f"systemd-analyze verify:\n{result.stdout}{result.stderr}")
            self.assertNotRegex(result.stdout + result.stderr, r"(?i)unknown|ignoring|invalid|warning",
                                f"systemd-analyze verify complained:\n{result.stdout}{result.stderr}")
            security = run(analyze, "--user", "security", "--offline=yes", path, check=False, env=environment)
            score = re.search(r"Overall exposure level for \S+: ([0-9.]+)", security.stdout)
            if score:
                print(f"\n  systemd-analyze --user security: exposure {score.group(1)} (0 safest, 10 unsafe)")
                self.assertLess(float(score.group(1)), 4.0, security.stdout[-2000:])

    def test_4_completions_offer_exactly_the_commands_and_options_of_the_binary(self):
        peer = os.path.join(BIN, "handoff-peer")
        commands = commands_of(peer)
        self.assertIn("publish", commands)
        completion = self.path(f"{PREFIX}/share/bash-completion/completions/handoff-peer")

        def complete(*words):
            # A bash that sources the completion and asks it about the command line `words`.
            script = ('source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); '
                      '_handoff_peer; printf "%s\\n" "${COMPREPLY[@]}"')
            result = run("bash", "-c", script, "bash", completion, "handoff-peer", *words,
                         env={"PATH": os.path.dirname(peer) + ":" + os.environ["PATH"], "HANDOFF_SOCKET": "/nonexistent"})
            return sorted(filter(None, result.stdout.splitlines()))

        self.assertEqual(complete(""), sorted(commands + ["help"]))
        for command in commands:
            self.assertEqual(complete(command, "--"), sorted(options_of(peer, command)), command)
        with tempfile.TemporaryDirectory() as scratch:
            open(os.path.join(scratch, "user-info.json"), "w").close()
            self.assertEqual(complete("publish", "--user-info-file", scratch + "/us"), [scratch + "/user-info.json"])
        self.assertEqual(complete("--socket", "/x", "pu"), ["publish"])

        zsh_file = self.path(f"{PREFIX}/share/zsh/site-functions/_handoff-peer")
        with open(zsh_file) as handle:
            text = handle.read()
        self.assertTrue(text.startswith("#compdef handoff-peer\n"))
        for command in commands:
            self.assertIn(f"\n        '{command}:", text, command)
            for option in options_of(peer, command):
                self.assertIn(f"'{option}", text.split(f"\n                {command}) _arguments", 1)[1].split(" && ret=0", 1)[0], (command, option))
        if shutil.which("zsh"):
            run("zsh", "-n", zsh_file)
        else:
            print("\n  skipped zsh -n: zsh is not installed here")

    def test_5_manual_pages_document_every_command_and_option(self):
        peer = os.path.join(BIN, "handoff-peer")
        pages = {"man1/handoff-peer.1": None, "man1/handoff-ble-check.1": None, "man8/handoffd.8": None}
        for page in pages:
            with open(self.path(f"{PREFIX}/share/man/{page}")) as handle:
                pages[page] = handle.read()
            self.assertIn(".TH ", pages[page])
        source = pages["man1/handoff-peer.1"]
        for command in commands_of(peer):
            self.assertIn(f'.SS "{command.replace("-", chr(92) + "-")}', source, command)
        for option in ("state\\-dir", "hci", "discovery", "rssi\\-threshold"):
            self.assertIn(f".B \\-\\-{option}", pages["man8/handoffd.8"])
        if shutil.which("man"):
            for page in pages:
                result = run("man", "--warnings", "-l", self.path(f"{PREFIX}/share/man/{page}"),
                             env={"MANWIDTH": "80", "MAN_KEEP_FORMATTING": "0", "LC_ALL": "C.UTF-8"})
                self.assertNotIn("warning", result.stderr, f"{page}: {result.stderr}")
                self.assertIn("SYNOPSIS", re.sub(".\b", "", result.stdout))  # without overstrike bold
        else:
            print("\n  skipped man -l: man is not installed here")

    def test_6_firewall_definitions_open_the_documented_ports(self):
        profile = configparser.ConfigParser()
        profile.read(self.path("/etc/ufw/applications.d/handoff"))
        self.assertEqual(profile.sections(), ["Handoff"])
        self.assertTrue(profile["Handoff"]["title"] and profile["Handoff"]["description"])
        ufw_ports = set()
        for part in profile["Handoff"]["ports"].split("|"):
            numbers, protocol = part.split("/")
            ufw_ports |= {(protocol, int(number)) for number in numbers.split(",")}
        self.assertEqual(ufw_ports, PORTS)

        service = ElementTree.parse(self.path("/etc/firewalld/services/handoff.xml")).getroot()
        self.assertEqual(service.tag, "service")
        self.assertEqual(service.find("short").text, "Handoff")
        self.assertEqual({(p.get("protocol"), int(p.get("port"))) for p in service.findall("port")}, PORTS)
        with open(os.path.join(REPO, "README.md")) as handle:
            readme = handle.read()
        for protocol, port in PORTS:
            self.assertIn(f"{port}/{protocol}", readme, "README must document every port")

    def test_7_uninstall_removes_exactly_what_install_put_there(self):
        with tempfile.TemporaryDirectory(prefix="handoff-destdir-") as destdir:
            # Something that was there before install stays.
            os.makedirs(destdir + "/etc/default")
            with open(destdir + "/etc/default/unrelated", "w") as handle:
                handle.write("keep me\n")
            # PREFIX and DESTDIR from the environment, like make install.
            environment = {"PREFIX": "/usr", "DESTDIR": destdir}
            run(INSTALL, "--bindir-from", BIN, env=environment)
            self.assertTrue(os.path.isfile(destdir + "/usr/lib/systemd/user/handoffd.service"))
            self.assertTrue(os.path.isfile(destdir + "/usr/share/handoff/install-manifest"))
            # A settings change survives a reinstall and the uninstall.
            with open(destdir + "/etc/default/handoffd", "a") as handle:
                handle.write("HANDOFF_HCI=none\n")
            run(INSTALL, "--bindir-from", BIN, env=environment)
            with open(destdir + "/etc/default/handoffd") as handle:
                self.assertIn("HANDOFF_HCI=none\n", handle.read())
            result = run(UNINSTALL, env=environment)
            self.assertIn("kept /etc/default/handoffd", result.stdout)
            self.assertEqual(tree(destdir), {"/etc", "/etc/default", "/etc/default/unrelated", "/etc/default/handoffd"})

        with tempfile.TemporaryDirectory(prefix="handoff-destdir-") as destdir:
            # A prefix user managers do not search gets the unit in /etc/systemd/user.
            run(INSTALL, "--prefix", "/opt/handoff", "--destdir", destdir, "--bindir-from", BIN)
            with open(destdir + "/etc/systemd/user/handoffd.service") as handle:
                self.assertIn("\nExecStart=/opt/handoff/bin/handoffd ", handle.read())
            run(UNINSTALL, "--prefix", "/opt/handoff", "--destdir", destdir)
            self.assertEqual(os.listdir(destdir), [])

        with tempfile.TemporaryDirectory(prefix="handoff-destdir-") as destdir:
            # An install that fails half way (here: a handoff-peer whose --help fails, so no
            # completions) still leaves a manifest, and uninstall takes away what it put there.
            broken = os.path.join(destdir, "..", os.path.basename(destdir) + "-bin")
            os.makedirs(broken)
            try:
                for program in ("handoffd", "handoff-ble-check"):
                    shutil.copy(os.path.join(BIN, program), broken)
                with open(os.path.join(broken, "handoff-peer"), "w") as handle:
                    handle.write("#!/bin/sh\nexit 3\n")
                os.chmod(os.path.join(broken, "handoff-peer"), 0o755)
                failed = run(INSTALL, "--destdir", destdir, "--bindir-from", broken, check=False)
                self.assertEqual(failed.returncode, 1)
                self.assertIn("removes what it installed so far", failed.stderr)
                self.assertTrue(os.path.isfile(destdir + f"{PREFIX}/bin/handoffd"))
                run(UNINSTALL, "--destdir", destdir)
                self.assertEqual(os.listdir(destdir), [])
            finally:
                shutil.rmtree(broken)

    def test_8_after_uninstall_the_destdir_is_empty(self):
        result = run(UNINSTALL, "--destdir", self.destdir)
        self.assertIn("removed", result.stdout)
        self.assertEqual(tree(self.destdir), set(), "uninstall left files or directories behind")
        again = run(UNINSTALL, "--destdir", self.destdir, check=False)
        self.assertEqual(again.returncode, 1)
        self.assertIn("no manifest", again.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
