"""The Debian package on this machine: Scripts/package builds it, lintian
reports no errors, `apt-get install ./handoff_*.deb` puts every file where
Debian expects it, the installed handoffd and handoff-peer hand an activity
off between two lab hosts, and `apt-get purge handoff` leaves /usr, /etc and
/var/lib exactly as they were.

Needs root (apt-get, network namespaces) and the lab lock. The first run
makes a release build (minutes); Scripts/package reuses it, and the .deb,
while their sources hash the same (.build/package). The runtime
dependencies (avahi-daemon, bluez, the libraries) are installed before the
"before" file list is taken, so the comparison is about this package's own
files."""
import configparser
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import xml.etree.ElementTree as ElementTree

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import REPO, lab, offer_of, peer, peer_json, require_root, wait_until  # noqa: E402

PACKAGE = os.path.join(REPO, "Scripts", "package")
OUTPUT = os.path.join(REPO, ".build", "package", "deb")
# The commands with a --help and a manual page made from it; all of them, handoff-documents and
# handoff-webext-host too, are links to the one program (Scripts/commands).
PROGRAMS = ["handoffd", "handoff-peer", "handoff-ble-check", "handoff-notify"]
COMMANDS = subprocess.run([os.path.join(REPO, "Scripts", "commands")], capture_output=True, text=True, check=True).stdout.split()
# Every file the package ships, with its mode (Scripts/package --help, Docs/INSTALL.md "Package").
FILES = {
    "/usr/libexec/handoff/handoff": 0o755,
    "/usr/libexec/handoff/session": 0o755,
    "/usr/lib/systemd/user/handoffd.service": 0o644,
    "/usr/lib/systemd/user/handoff-launch.socket": 0o644,
    "/usr/lib/systemd/user/handoff-launch@.service": 0o644,
    "/etc/default/handoffd": 0o644,
    "/etc/ufw/applications.d/handoff": 0o644,
    "/usr/lib/firewalld/services/handoff.xml": 0o644,
    "/usr/share/man/man8/handoffd.8.gz": 0o644,
    "/usr/share/man/man1/handoff-peer.1.gz": 0o644,
    "/usr/share/man/man1/handoff-ble-check.1.gz": 0o644,
    "/usr/share/man/man1/handoff-notify.1.gz": 0o644,
    "/etc/xdg/autostart/handoff-notify.desktop": 0o644,
    "/etc/xdg/autostart/handoff-documents.desktop": 0o644,
    "/usr/share/applications/handoff-pair.desktop": 0o644,
    # The browser extension in Debian's webext layout, and the native messaging host manifests.
    **{f"/usr/share/webext/handoff/{family}/{name}": 0o644
       for family in ("chromium", "firefox") for name in ("background.js", "manifest.json", "scrolled.js")},
    "/usr/lib/mozilla/native-messaging-hosts/io.github.handoff.json": 0o644,
    "/etc/chromium/native-messaging-hosts/io.github.handoff.json": 0o644,
    "/usr/share/handoff/native-messaging/chrome/io.github.handoff.json": 0o644,
    "/usr/share/man/man1/handoff-documents.1.gz": 0o644,
    "/usr/share/man/man1/handoff-webext-host.1.gz": 0o644,
    "/usr/share/bash-completion/completions/handoff-peer": 0o644,
    "/usr/share/zsh/vendor-completions/_handoff-peer": 0o644,
    "/usr/share/fish/vendor_completions.d/handoff-peer.fish": 0o644,
    "/usr/share/doc/handoff/copyright": 0o644,
    "/usr/share/doc/handoff/changelog.gz": 0o644,
}
CONFFILES = {"/etc/default/handoffd", "/etc/ufw/applications.d/handoff", "/etc/xdg/autostart/handoff-notify.desktop",
             "/etc/xdg/autostart/handoff-documents.desktop", "/etc/chromium/native-messaging-hosts/io.github.handoff.json"}
# Links the package ships: multi-call programs, and the browsers' extension directories (webext layout).
LINKS = {**{f"/usr/bin/{name}": "../libexec/handoff/handoff" for name in COMMANDS},
         "/usr/share/chromium/extensions/handoff": "../../webext/handoff/chromium",
         "/usr/share/mozilla/extensions/{ec8030f7-c20a-464f-9b0e-13a3a9e97384}/handoff@handoff.github.io": "../../../webext/handoff/firefox"}
# postinst enables the user unit for every user (deb-systemd-helper --user enable).
ENABLED_LINK = "/etc/systemd/user/default.target.wants/handoffd.service"
PORTS = {("udp", 47180), ("udp", 47181), ("tcp", 47181), ("udp", 5353)}
# Compared before install and after purge.
ROOTS = ["/usr", "/etc", "/var/lib"]
# What dpkg and apt themselves keep (their own database and its backups,
# apt's auto/manual marks), caches that package triggers rewrite, and what other
# programs write at run time: chromium, started as root by test_browser in another
# group while this test runs, creates its external-extensions directory
# /usr/lib/chromium/extensions on its first start (a CI run failed on it).
NOISE = re.compile(r"^/var/lib/(dpkg|apt|ucf|man-db)(/|$)|/__pycache__(/|$)|^/etc/ld\.so\.cache$|^/usr/lib/chromium/extensions(/|$)")
USER_INFO = {"chapter": 3, "scroll": 0.42, "highlights": [120, 388], "cover": {"$data": "iVBORw0KGgo="}}


def run(*argv, check=True, timeout=1800, env=None):
    result = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout,
                            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive", **(env or {})})
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} exited {result.returncode}\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}")
    return result


def file_list():
    """Every path under ROOTS (one file system each), with its type and, for a link, its target."""
    found = {}
    for root in ROOTS:
        for directory, subdirectories, files in os.walk(root):
            if os.path.ismount(directory) and directory != root:
                subdirectories[:] = []
                continue
            for name in subdirectories + files:
                path = os.path.join(directory, name)
                if NOISE.search(path):
                    continue
                if os.path.islink(path):
                    found[path] = "link -> " + os.readlink(path)
                else:
                    found[path] = "dir" if os.path.isdir(path) else "file"
            subdirectories[:] = [d for d in subdirectories if not os.path.islink(os.path.join(directory, d))]
    return found


def installed(package):
    result = run("dpkg-query", "-W", "-f=${Status}", package, check=False)
    return result.returncode == 0 and result.stdout.endswith(" installed")


class DebianPackage(unittest.TestCase):
    maxDiff = None  # a purge that leaves files behind names every one
    @classmethod
    def setUpClass(cls):
        require_root()
        # The tools that build and check a package (Scripts/package --help).
        # And systemd-nspawn for test_3b: installed before the "before" list, or its files would
        # count as left behind by the purge.
        tools = [package for tool, package in (("dpkg-shlibdeps", "dpkg-dev"), ("lintian", "lintian"),
                                               ("systemd-nspawn", "systemd-container")) if not shutil.which(tool)]
        if tools:
            run("apt-get", "install", "-y", "--no-install-recommends", *tools)
        if installed("handoff"):
            raise AssertionError("the handoff package is installed already; remove it first (sudo apt-get purge handoff)")
        started = time.monotonic()
        lines = run(PACKAGE, "--output", OUTPUT, "--no-lintian").stdout.strip().splitlines()
        cls.package_seconds = time.monotonic() - started
        cls.deb = lines[-1]
        assert os.path.isfile(cls.deb), lines
        cls.fields = {key: run("dpkg-deb", "-f", cls.deb, key).stdout.strip()
                      for key in ("Package", "Version", "Architecture", "Depends", "Installed-Size")}
        # Its dependencies first: they stay after the purge, so they belong to "before".
        depends = [re.split(r"[ (]", item.strip())[0] for item in cls.fields["Depends"].split(",")]
        missing = [name for name in depends if not installed(name)]
        if missing:
            run("apt-get", "install", "-y", "--no-install-recommends", *missing)
        cls.before = file_list()

    @classmethod
    def tearDownClass(cls):
        # Never leave it behind, whatever failed.
        if run("dpkg-query", "-W", "handoff", check=False).returncode == 0:
            run("apt-get", "purge", "-y", "handoff", check=False)
        if not os.environ.get("HANDOFF_KEEP_LAB"):
            lab("down", check=False)
        print(f"\npackage: Scripts/package {cls.package_seconds:.0f} s, {os.path.getsize(cls.deb) // 1024} KiB, "
              f"installed {cls.fields['Installed-Size']} KiB", file=sys.stderr)

    def test_1_named_versioned_and_lintian_clean(self):
        version = run("dpkg-parsechangelog", "-l", os.path.join(REPO, "Packaging", "debian", "changelog"), "-S", "Version").stdout.strip()
        architecture = run("dpkg", "--print-architecture").stdout.strip()
        self.assertEqual(os.path.basename(self.deb), f"handoff_{version}_{architecture}.deb")
        self.assertEqual((self.fields["Package"], self.fields["Version"], self.fields["Architecture"]),
                         ("handoff", version, architecture))
        depends = {re.split(r"[ (]", item.strip())[0] for item in self.fields["Depends"].split(",")}
        self.assertLessEqual({"avahi-daemon", "bluez", "libc6", "libsodium23", "libavahi-client3", "libsystemd0"}, depends)
        self.assertFalse([name for name in depends if "swift" in name], depends)

        result = run("lintian", "--fail-on", "error", self.deb, check=False, timeout=900)
        tags = [line for line in result.stdout.splitlines() if re.match(r"^[EW]: ", line)]
        self.assertEqual(result.returncode, 0, f"lintian:\n{result.stdout}\n{result.stderr}")
        self.assertEqual([line for line in tags if line.startswith("E: ")], [], "lintian errors")
        # No warnings either: Docs/INSTALL.md ("Package") says none are expected.
        self.assertEqual(tags, [], "lintian warnings")

    def test_1b_the_program_is_laid_out_for_what_runs(self):
        """Scripts/package links the functions of Packaging/symbol-order.txt first and together
        (Docs/INSTALL.md, "Package"). Nothing fails when that stops working (a flag SwiftPM
        ignores, objects built without function sections): the program only keeps more of itself
        resident. So: every listed function of ours lies before every unlisted one, and the
        packed relocations need the glibc that Depends names."""
        binary = os.path.join(REPO, ".build", "package", "release", "handoff")  # the unstripped build
        with open(os.path.join(REPO, "Packaging", "symbol-order.txt")) as order:
            listed = {line.strip() for line in order}
        ours = []
        for line in run("nm", "-n", "--defined-only", binary).stdout.splitlines():
            fields = line.split()
            if len(fields) == 3 and fields[1] in "tT" and "Handoff" in fields[2]:
                ours.append((int(fields[0], 16), fields[2] in listed))
        hot = [address for address, is_listed in ours if is_listed]
        cold = [address for address, is_listed in ours if not is_listed]
        self.assertGreater(len(hot), 1000, "few of our functions are in the order list: run sudo Scripts/symbol-order")
        self.assertLess(max(hot), min(cold), "listed functions are not laid out before the others")
        if "GLIBC_ABI_DT_RELR" in run("readelf", "-V", binary).stdout:
            self.assertIn("libc6 (>= 2.36)", self.fields["Depends"])

    def test_2_install_puts_every_file_where_debian_expects_it(self):
        run("apt-get", "install", "-y", "--no-install-recommends", self.deb)
        self.assertTrue(installed("handoff"))
        listed = {path for path in run("dpkg", "-L", "handoff").stdout.splitlines() if path and os.path.isfile(path) and not os.path.islink(path)}
        self.assertEqual(listed, set(FILES))
        for path, mode in FILES.items():
            status = os.stat(path)
            self.assertEqual(status.st_mode & 0o7777, mode, path)
            self.assertEqual((status.st_uid, status.st_gid), (0, 0), path)
        for path, target in LINKS.items():
            self.assertEqual(os.readlink(path), target, path)
            self.assertTrue(os.path.exists(path), f"{path} is a dangling link")
        conffiles = {line.split()[0] for line in run("dpkg-query", "-W", "-f=${Conffiles}", "handoff").stdout.splitlines() if line.strip()}
        self.assertEqual(conffiles, CONFFILES)
        self.assertEqual(os.readlink(ENABLED_LINK), "/usr/lib/systemd/user/handoffd.service")
        # The file list sees what the install added (so test_4's comparison can fail).
        added = file_list().keys() - self.before.keys()
        self.assertLessEqual(set(FILES) | {ENABLED_LINK}, added)
        self.assertTrue([path for path in added if path.startswith("/var/lib/systemd/deb-systemd-user-helper-enabled/")], added)

        depends = {re.split(r"[ (]", item.strip())[0] for item in self.fields["Depends"].split(",")}
        for program in PROGRAMS:
            self.assertEqual(run(f"/usr/bin/{program}", "--help").returncode, 0)
            self.assertIn(f"/{program}.", run("man", "-w", program).stdout)
            # It loads only Debian's libraries (no Swift runtime from a toolchain), and each one it
            # names (NEEDED; their own dependencies are theirs) comes from a package in Depends.
            needed = set(re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", run("readelf", "-d", f"/usr/bin/{program}").stdout))
            resolved = dict(re.findall(r"^\s*(\S+) => (\S+)", run("ldd", f"/usr/bin/{program}").stdout, re.M))
            self.assertFalse([name for name in resolved if "swift" in name.lower() or "Foundation" in name], resolved)
            self.assertLessEqual(needed - {"ld-linux-x86-64.so.2"}, set(resolved), "a library is not found")
            # handoffd loads avahi's client library itself (dlopen); no command carries it, or BlueZ's.
            self.assertFalse({"libavahi-client.so.3", "libavahi-common.so.3", "libdbus-1.so.3", "libbluetooth.so.3"} & set(resolved), resolved)
            for soname in needed - {"ld-linux-x86-64.so.2"}:
                library = resolved[soname]
                owner = run("dpkg", "-S", os.path.realpath(library).replace("/usr/lib/", "/lib/", 1), check=False)
                if owner.returncode != 0:
                    owner = run("dpkg", "-S", os.path.realpath(library))
                package = owner.stdout.split(":")[0]
                self.assertIn(package, depends, f"{program} loads {library} from {package}")
        self.assertEqual(run("man", "-w", "8", "handoffd").stdout.strip(), "/usr/share/man/man8/handoffd.8.gz")
        # Manual pages render without warnings.
        for page in PROGRAMS:
            rendered = run("man", "--warnings", page, env={"MANWIDTH": "80", "MAN_KEEP_STDERR": "1"})
            self.assertEqual(rendered.stderr.strip(), "", page)
            self.assertIn("SEE ALSO", rendered.stdout)

        unit = configparser.ConfigParser(strict=False, interpolation=None)
        unit.read("/usr/lib/systemd/user/handoffd.service")
        self.assertTrue(unit["Service"]["ExecStart"].startswith("/usr/bin/handoffd "))
        self.assertEqual(unit["Install"]["WantedBy"], "default.target")
        launcher = configparser.ConfigParser(strict=False, interpolation=None)
        launcher.read("/usr/lib/systemd/user/handoff-launch@.service")
        self.assertEqual(launcher["Service"]["ExecStart"], "/usr/libexec/handoff/handoff handoff-launch")

        ufw = configparser.ConfigParser()
        ufw.read("/etc/ufw/applications.d/handoff")
        opened = set()
        for group in ufw["Handoff"]["ports"].split("|"):
            numbers, protocol = group.split("/")
            opened |= {(protocol, int(number)) for number in numbers.split(",")}
        self.assertEqual(opened, PORTS)
        firewalld = ElementTree.parse("/usr/lib/firewalld/services/handoff.xml").getroot()
        self.assertEqual({(port.get("protocol"), int(port.get("port"))) for port in firewalld.iter("port")}, PORTS)

        # The completions load in their shells and complete the real commands.
        completed = run("bash", "-c", "source /usr/share/bash-completion/completions/handoff-peer && "
                        "COMP_WORDS=(handoff-peer acc) COMP_CWORD=1 && _handoff_peer && echo \"${COMPREPLY[@]}\"").stdout.split()
        self.assertEqual(completed, ["accept"])
        if shutil.which("fish"):
            completed = run("fish", "-c", "complete -C 'handoff-peer accept --'").stdout
            self.assertIn("--app\t", completed)
        if shutil.which("zsh"):
            run("zsh", "-n", "/usr/share/zsh/vendor-completions/_handoff-peer")

    def test_3_installed_programs_hand_off_between_two_lab_hosts(self):
        if not installed("handoff"):
            self.skipTest("not installed (test_2 failed)")
        # Scripts/lab runs the programs from HANDOFF_BIN: the installed ones.
        os.environ["HANDOFF_BIN"] = "/usr/bin"
        try:
            lab("down")
            lab("up", "laptop-a", "laptop-b")
            lab("start", "laptop-a", "--ble", "--announce-interval", "1")
            # The activity has a web page no app here declares: `true` stands in for the browser.
            lab("start", "laptop-b", "--ble", "--announce-interval", "1", "--browser", "true")
            # The lab's daemons (their state is under the lab directory) are the installed program.
            lab_dir = os.environ.get("HANDOFF_LAB_DIR", "/tmp/handoff-lab")
            pids = [pid for pid in run("pgrep", "-x", "handoffd").stdout.split()
                    if lab_dir + "/" in open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace")]
            self.assertEqual(len(pids), 2)
            self.assertEqual({os.readlink(f"/proc/{pid}/exe") for pid in pids}, {"/usr/libexec/handoff/handoff"})

            lab("pair-all", "laptop-a", "laptop-b")
            receipt = json.loads(peer("laptop-a", "publish", "--type", "org.example.reader.document",
                                      "--title", "Rust atomics, chapter 3", "--user-info", json.dumps(USER_INFO),
                                      "--url", "https://example.org/rust-atomics/ch3",
                                      "--content-id", "document:7c1e9a", "--json").stdout)
            wait_until("laptop-b to list the offer", lambda: (offer := offer_of("laptop-b", "laptop-a"))
                       and offer["sequence"] == receipt["sequence"], timeout=30)
            activity = peer_json("laptop-b", "accept", "laptop-a")
            self.assertEqual(
                {key: activity.get(key) for key in ("type", "title", "userInfo", "webpageURL", "targetContentIdentifier")},
                {"type": "org.example.reader.document", "title": "Rust atomics, chapter 3", "userInfo": USER_INFO,
                 "webpageURL": "https://example.org/rust-atomics/ch3", "targetContentIdentifier": "document:7c1e9a"})
            self.assertGreaterEqual(peer_json("laptop-a", "status")["transfers"]["served"], 1)
            # The package's program links the Swift runtime statically, where looking the executor hook
            # up with dlsym failed: the daemons stayed on libdispatch (a worker wakes them every second and
            # logged "Failed to set thread priority" under the unit). handoffd stops at start without the
            # hook, and its actor runs on the event loop: after a pairing and an accept no libdispatch
            # worker runs, and the loop is there by its name.
            for pid in pids:
                names = []
                for task in os.listdir(f"/proc/{pid}/task"):
                    with open(f"/proc/{pid}/task/{task}/comm") as comm:
                        names.append(comm.read().strip())
                self.assertIn("event loop", names)
                self.assertEqual([name for name in names if "qos" in name], [], f"libdispatch workers in {pid}: {sorted(names)}")
        finally:
            os.environ.pop("HANDOFF_BIN", None)
            if not os.environ.get("HANDOFF_KEEP_LAB"):
                lab("down", check=False)

    def test_3b_the_user_unit_runs_in_a_systemd_nspawn_container(self):
        """Issue 22, 7: in a systemd-nspawn container the unit did not start at all (ProtectKernelLogs:
        226/NAMESPACE against the container's /proc/kmsg). Here a container boots this machine's /usr
        (the installed package) and /etc with systemd as its PID 1, logind and user@.service, on a
        network of its own (loopback only); a user with linger gets handoffd.service under its whole
        sandbox, and the launcher starts a declared app for it."""
        if not installed("handoff"):
            self.skipTest("not installed (test_2 failed)")
        user, uid = "handoff-ct", 61234
        scratch = tempfile.mkdtemp(prefix="handoff-nspawn-")
        home = os.path.join(scratch, "home")
        os.mkdir(home, 0o700)
        os.chown(home, uid, uid)
        # The user, in copies of the account files bound over the container's /etc (the machine's own stay
        # as they are); PAM's account check for user@.service needs the shadow entry too.
        for name, line in (("passwd", f"{user}:x:{uid}:{uid}::/home/{user}:/bin/sh"), ("group", f"{user}:x:{uid}:"),
                           ("shadow", f"{user}:*:20000:0:99999:7:::")):
            shutil.copy2(f"/etc/{name}", os.path.join(scratch, name))
            with open(os.path.join(scratch, name), "a") as copy:
                copy.write(line + "\n")
        log_path = os.path.join(scratch, "console.log")
        log = open(log_path, "w")
        container = subprocess.Popen(["systemd-nspawn", "-D", "/", "--volatile=yes", "--private-network", "--register=no",
                                      "--keep-unit", "-M", "handoff-ct", "--bind-ro=/etc",
                                      f"--bind-ro={scratch}/passwd:/etc/passwd", f"--bind-ro={scratch}/group:/etc/group",
                                      f"--bind-ro={scratch}/shadow:/etc/shadow",
                                      f"--bind={home}:/home/{user}", "-b", "--console=read-only"],
                                     stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            def init_pid():
                for line in run("ps", "-eo", "pid=,ppid=,comm=").stdout.splitlines():
                    pid, ppid, comm = line.split(None, 2)
                    if int(ppid) == container.pid and comm == "systemd":
                        return pid
            pid1 = wait_until("the container's systemd", lambda: container.poll() is None and init_pid(), timeout=30)

            def inside(*argv, check=True):
                return run("nsenter", "-t", pid1, "-a", *argv, check=check)

            def as_user(*argv, check=True):
                return inside("runuser", "-u", user, "--", "env", f"XDG_RUNTIME_DIR=/run/user/{uid}", f"HOME=/home/{user}",
                              *argv, check=check)
            wait_until("the container to boot", lambda: inside("systemctl", "is-system-running", check=False).stdout.strip()
                       in ("running", "degraded"), timeout=90, interval=0.5)
            self.assertEqual(inside("systemd-detect-virt", "--container", check=False).stdout.strip(), "systemd-nspawn")
            inside("loginctl", "enable-linger", user)
            wait_until("handoffd in the container", lambda: as_user("systemctl", "--user", "is-active", "handoffd.service",
                                                                     check=False).stdout.strip() == "active", timeout=60, interval=0.5)
            status = wait_until("its local API", lambda: (r := as_user("handoff-peer", "status", "--json", check=False)).returncode == 0
                                and json.loads(r.stdout), timeout=20)
            self.assertTrue(status["enabled"])
            main = as_user("systemctl", "--user", "show", "-P", "MainPID", "handoffd.service").stdout.strip()
            process = inside("cat", f"/proc/{main}/status").stdout
            self.assertIn("NoNewPrivs:\t1", process)
            self.assertIn("CapEff:\t0000000000000000", process)
            self.assertRegex(process, r"Seccomp:\t2")
            # The launcher, started with it, starts a declared app outside its sandbox.
            marker = f"/home/{user}/launched"
            as_user("sh", "-c", f"mkdir -p $HOME/.local/share/applications && printf '[Desktop Entry]\\nType=Application\\n"
                                f"Name=Touch\\nExec=touch {marker}\\nX-Handoff-ActivityTypes=org.example.touch;\\n' "
                                f"> $HOME/.local/share/applications/touch.desktop")
            request = json.dumps({"v": 1, "kind": "app", "desktopID": "touch.desktop", "type": "org.example.touch",
                                  "socket": f"/run/user/{uid}/handoff/handoffd.sock"})
            asked = as_user("python3", "-c", "import socket,sys\ns=socket.socket(socket.AF_UNIX)\ns.connect(sys.argv[1])\n"
                            "s.sendall(sys.argv[2].encode()+b'\\n')\ns.settimeout(25)\ndata=b''\nwhile True:\n"
                            "  chunk=s.recv(8192)\n  if not chunk: break\n  data+=chunk\nprint(data.decode(), end='')",
                            f"/run/user/{uid}/handoff-launch/socket", request).stdout
            self.assertEqual([json.loads(line) for line in asked.splitlines()], [{"state": "started"}, {"state": "exited", "status": 0}])
            self.assertTrue(os.path.exists(os.path.join(home, "launched")))
            journal = inside("journalctl", f"_UID={uid}", "--no-pager", check=False).stdout
            self.assertNotIn("226/NAMESPACE", journal)
            self.assertNotIn("thread priority", journal)
        finally:
            container.terminate()  # nspawn halts the container: its systemd stops every unit
            try:
                container.wait(timeout=60)
            except subprocess.TimeoutExpired:
                container.kill()
                container.wait()
            log.close()
            shutil.rmtree(scratch, ignore_errors=True)

    def test_4_purge_leaves_the_file_system_as_it_was(self):
        if not installed("handoff"):
            self.skipTest("not installed (test_2 failed)")
        run("apt-get", "purge", "-y", "handoff")
        # Not even its conffiles are left ("config-files" state).
        status = run("dpkg-query", "-W", "-f=${db:Status-Status}", "handoff", check=False)
        self.assertTrue(status.returncode != 0 or status.stdout == "not-installed", status.stdout)
        after = file_list()
        added = sorted(f"{path} ({after[path]})" for path in after.keys() - self.before.keys())
        removed = sorted(f"{path} ({self.before[path]})" for path in self.before.keys() - after.keys())
        changed = sorted(path for path in after.keys() & self.before.keys() if after[path] != self.before[path])
        self.assertEqual((added, removed, changed), ([], [], []), "purge left the file list different")


if __name__ == "__main__":
    unittest.main()
