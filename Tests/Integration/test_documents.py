"""Documents hand off on their own: a real GTK app (Debian's mousepad) opens a
file on laptop-a under Xvfb, GTK itself records it in a's recently-used list,
a's handoff-documents offers it, and accepting on laptop-b saves the same bytes
at the same place under b's home and opens them there, once, in b's own default
document app for the type (mousepad, found through shared-mime-info and its
MimeType=); a script named as a document is saved and never opened. Each
host has its own home, session bus and documents agent; both share one Xvfb.
Hidden files, a refused list (symbolic link, oversized, malformed) and a name
already taken on b are covered too.

Needs root: it creates network namespaces through Scripts/lab."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import install_missing, stop_pid, start_xvfb, LAB, lab, listed, offer_of, peer, peer_json, require_root, wait_until  # noqa: E402

ARGS = ["--announce-interval", "1", "--peer-ttl", "4", "--log-level", "debug"]
HOSTS = ("laptop-a", "laptop-b")
PACKAGES = {"mousepad": "mousepad", "Xvfb": "xvfb", "dbus-daemon": "dbus", "dunst": "dunst"}
DOCUMENT_TYPE = "io.github.handoff.document"






def read(path):
    try:
        with open(path, errors="replace") as file:
            return file.read()
    except FileNotFoundError:
        return ""


def content_of(path):
    try:
        with open(path, "rb") as file:
            return file.read()
    except FileNotFoundError:
        return None


def write(path, content):
    with open(path, "wb") as file:
        file.write(content)


class Documents(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_root()
        install_missing(PACKAGES)
        cls.pids, cls.popens = [], []
        cls.tmp = tempfile.mkdtemp(prefix="handoff-documents-")  # under /tmp, which lab hosts share
        os.chmod(cls.tmp, 0o755)
        xvfb, cls.display = start_xvfb()
        cls.pids.append(xvfb.pid)
        cls.popens.append(xvfb)
        cls.homes, cls.env = {}, {}
        for host in HOSTS:
            home = os.path.join(cls.tmp, host)
            os.makedirs(os.path.join(home, "Documents"))
            bus = f"unix:path={cls.tmp}/{host}.bus"
            cls.background(["dbus-daemon", "--session", "--nofork", f"--address={bus}"], f"{host}-dbus.log")
            wait_until(f"{host}'s session bus", lambda: os.path.exists(f"{cls.tmp}/{host}.bus"))
            cls.homes[host] = home
            # A session as a desktop gives it: its own home, bus and display; nothing else of ours.
            cls.env[host] = ["env", "-u", "XDG_DATA_HOME", "-u", "XDG_CONFIG_HOME", "-u", "XDG_RUNTIME_DIR",
                             f"HOME={home}", f"DBUS_SESSION_BUS_ADDRESS={bus}", f"DISPLAY={cls.display}", "NO_AT_BRIDGE=1"]
        # b's notification server: what its documents agent tells the user, printed (dunst -print).
        cls.notifications = os.path.join(cls.tmp, "laptop-b-dunst.log")
        cls.background(cls.env["laptop-b"] + ["dunst", "-print"], "laptop-b-dunst.log")
        lab("down")
        lab("up", *HOSTS)
        for host in HOSTS:
            lab("start", host, *ARGS)
        lab("pair-all", *HOSTS)
        cls.agent_logs = {host: os.path.join(cls.tmp, f"{host}-documents.log") for host in HOSTS}
        for host in HOSTS:
            cls.spawn(host, "documents", cls.env[host] + ["handoff-documents"], log=cls.agent_logs[host])
        wait_until("b's documents agent to declare the type", lambda: any(
            app["running"] and DOCUMENT_TYPE in app["types"] for app in peer_json("laptop-b", "apps")), timeout=20)
        wait_until("a's documents agent to watch its list", lambda: "watching" in read(cls.agent_logs["laptop-a"]), timeout=20)

    @classmethod
    def background(cls, argv, log):
        with open(os.path.join(cls.tmp, log), "w") as out:
            process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        cls.pids.append(process.pid)
        cls.popens.append(process)

    @classmethod
    def spawn(cls, host, name, argv, log=None):
        """Runs argv in a lab host; the pid file names the process itself, to stop it by id."""
        pidfile = os.path.join(cls.tmp, f"{host}-{name}.pid")
        out = open(log or os.path.join(cls.tmp, f"{host}-{name}.log"), "w")
        process = subprocess.Popen([LAB, "exec", host, "sh", "-c", 'echo $$ >"$0"; exec "$@"', pidfile, *argv],
                                   stdout=out, stderr=out, stdin=subprocess.DEVNULL)
        out.close()
        cls.popens.append(process)
        pid = int(wait_until(f"{name} to start on {host}", lambda: read(pidfile).strip()))
        cls.pids.append(pid)
        return pid

    @classmethod
    def tearDownClass(cls):
        for pid in cls.mousepads():
            cls.pids.append(pid)
        for pid in reversed(cls.pids):
            stop_pid(pid)
        for process in cls.popens:
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        logs = "".join(read(path) for path in cls.agent_logs.values()) + lab("log", "laptop-a", check=False).stdout
        assert "notes.md" not in logs and "Draft" not in logs, "a log carries a document's name or content"
        if not os.environ.get("HANDOFF_KEEP_LAB"):
            lab("down")
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def mousepads(cls, path_part=""):
        """Pids of mousepad processes started under this test's directory (by us or by b's agent)."""
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            cmdline = read(f"/proc/{entry}/cmdline").split("\0")
            if cmdline and os.path.basename(cmdline[0]) == "mousepad" and any(cls.tmp in arg and path_part in arg for arg in cmdline[1:]):
                found.append(int(entry))
        return found

    def offer(self):
        return offer_of("laptop-b", "laptop-a")

    def open_on_a(self, relative, content):
        """Writes a file in a's home and opens it in mousepad there, as a person would; GTK records it."""
        path = os.path.join(self.homes["laptop-a"], relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write(path, content)
        self.spawn("laptop-a", f"mousepad-{time.monotonic_ns()}", self.env["laptop-a"] + ["mousepad", path])
        return path

    def list_changed_after(self, since):
        path = os.path.join(self.homes["laptop-a"], ".local/share/recently-used.xbel")
        return os.path.exists(path) and os.stat(path).st_mtime > since and os.stat(path).st_mtime

    def test_1_opened_document_continues_in_the_same_app_once(self):
        content = b"# Draft\n\nThe plan, third version.\n" * 40
        before = self.offer()
        started = time.time()
        self.open_on_a("Documents/notes.md", content)
        recorded = wait_until("GTK to record the file in a's list", lambda: self.list_changed_after(started), timeout=30)
        offer = wait_until("b to list a's document", lambda: (o := self.offer()) and o["type"] == DOCUMENT_TYPE and o != before and o,
                           timeout=30)
        seen = time.time()
        print(f"\n  recorded by GTK -> offer listed on b: {seen - recorded:.2f} s (b polled through handoff-peer list)")
        self.assertLess(seen - recorded, 2.0)
        self.assertEqual(offer["title"], "notes.md in Mousepad")
        self.assertEqual(offer["deliverTo"], "handoff-documents")
        accepted = json.loads(peer("laptop-b", "accept", "laptop-a", "--json").stdout)
        self.assertEqual(accepted["title"], "notes.md in Mousepad")
        saved = os.path.join(self.homes["laptop-b"], "Documents", "notes.md")
        wait_until("b to save the document", lambda: content_of(saved) == content, timeout=10)
        opened = wait_until("mousepad to open it on b", lambda: self.mousepads(f"{os.path.basename(self.homes['laptop-b'])}/Documents/notes.md"),
                            timeout=20)
        time.sleep(1)  # a second delivery would start a second one
        self.assertEqual(len(self.mousepads(f"{os.path.basename(self.homes['laptop-b'])}/Documents/notes.md")), 1, opened)
        self.assertEqual(sorted(os.listdir(os.path.join(self.homes["laptop-b"], "Documents"))), ["notes.md"])

    def test_2_a_different_file_of_that_name_is_never_overwritten(self):
        taken = os.path.join(self.homes["laptop-b"], "Documents", "todo.txt")
        write(taken, b"b's own list\n")
        before = self.offer()
        self.open_on_a("Documents/todo.txt", b"a's list\n")
        wait_until("b to list a's todo.txt", lambda: (o := self.offer()) and o != before and o["title"].startswith("todo.txt"), timeout=30)
        peer("laptop-b", "accept", "laptop-a")
        copy = os.path.join(self.homes["laptop-b"], "Documents", "todo (from laptop-a).txt")
        wait_until("b to save a copy beside it", lambda: content_of(copy) == b"a's list\n", timeout=10)
        self.assertEqual(content_of(taken), b"b's own list\n")

    def test_2b_a_script_named_as_a_document_is_saved_and_never_opened(self):
        """Round three, 1: what the sender names it, and the app it names, decide nothing on b."""
        script = b"#!/bin/sh\necho pwned > /tmp/handoff-documents-pwned\n"
        before = self.offer()
        log_before = len(read(self.agent_logs["laptop-b"]))
        self.open_on_a("Documents/plan.md", script)
        wait_until("b to list a's plan.md", lambda: (o := self.offer()) and o != before and o["title"].startswith("plan.md"), timeout=30)
        peer("laptop-b", "accept", "laptop-a")
        saved = os.path.join(self.homes["laptop-b"], "Documents", "plan.md")
        wait_until("b to save it", lambda: content_of(saved) == script, timeout=10)
        refused = wait_until("b's agent to leave it unopened", lambda: "without opening it" in (log := read(self.agent_logs["laptop-b"])[log_before:]) and log,
                             timeout=10)
        self.assertIn("x-shellscript", refused)
        time.sleep(1)
        self.assertEqual(self.mousepads("laptop-b/Documents/plan.md"), [])
        self.assertFalse(os.path.exists("/tmp/handoff-documents-pwned"))

    def test_2c_a_full_disk_leaves_nothing_partial_and_says_why(self):
        """Round three, faults: b's documents folder is full. The save fails whole (no partial file,
        no temporary left), the user who pressed Continue is told why, and the pairing stays."""
        documents = os.path.join(self.homes["laptop-b"], "Documents")
        lab("exec", "laptop-b", "mount", "-t", "tmpfs", "-o", "size=256k,mode=0755", "tmpfs", documents)
        try:
            before = self.offer()
            log_before, shown_before = len(read(self.agent_logs["laptop-b"])), len(read(self.notifications))
            self.open_on_a("Documents/large.txt", b"a line of a long text\n" * 48_000)  # about 1 MiB
            wait_until("b to list a's large.txt", lambda: (o := self.offer()) and o != before and o["title"].startswith("large.txt"),
                       timeout=30)
            peer("laptop-b", "accept", "laptop-a")
            wait_until("b's agent to fail the save", lambda: "cannot save a continued document (storage)" in
                       read(self.agent_logs["laptop-b"])[log_before:], timeout=15)
            shown = wait_until("b's user to be told why", lambda: "No space left on device" in (text := read(self.notifications)[shown_before:]) and text,
                               timeout=10)
            self.assertIn("not saved", shown)
            self.assertEqual(lab("exec", "laptop-b", "ls", "-A", documents).stdout.split(), [], "something partial was left")
            self.assertTrue(listed("laptop-b", "laptop-a"))
            self.assertEqual([d["name"] for d in peer_json("laptop-b", "devices")], ["laptop-a"])
        finally:
            lab("exec", "laptop-b", "umount", documents, check=False)

    def test_3_hidden_files_are_never_offered(self):
        before = wait_until("an offer from a", self.offer, timeout=10)
        log_before = len(read(self.agent_logs["laptop-a"]))
        started = time.time()
        self.open_on_a(".private/key.txt", b"secret\n")
        wait_until("GTK to record the hidden file", lambda: self.list_changed_after(started), timeout=30)
        wait_until("a's agent to refuse it", lambda: "hidden" in read(self.agent_logs["laptop-a"])[log_before:], timeout=10)
        time.sleep(1.5)
        self.assertEqual(self.offer()["sequence"], before["sequence"])

    def test_4_a_refused_list_changes_nothing(self):
        before = wait_until("an offer from a", self.offer, timeout=10)
        share = os.path.join(self.homes["laptop-a"], ".local", "share")
        list_path = os.path.join(share, "recently-used.xbel")
        saved = os.path.join(self.tmp, "list-backup")
        shutil.copy(list_path, saved)
        cases = [
            ("symbolic link", lambda: os.symlink("/etc/passwd", list_path), "not a regular file"),
            ("oversized", lambda: write(list_path, b" " * (9 * 1024 * 1024)), "more than a recently-used list holds"),
            ("malformed", lambda: write(list_path, b"<not xbel"), "is not a recently-used list"),
        ]
        for name, make, message in cases:
            log_before = len(read(self.agent_logs["laptop-a"]))
            os.remove(list_path)
            make()
            wait_until(f"a's agent to refuse the {name} list", lambda: message in read(self.agent_logs["laptop-a"])[log_before:], timeout=10)
        os.remove(list_path)
        shutil.copy(saved, list_path)
        time.sleep(1)
        self.assertEqual(self.offer()["sequence"], before["sequence"])
        self.assertTrue(any(app["running"] and DOCUMENT_TYPE in app["types"] for app in peer_json("laptop-b", "apps")))
        pid = int(read(os.path.join(self.tmp, "laptop-a-documents.pid")))
        os.kill(pid, 0)  # still running


if __name__ == "__main__":
    unittest.main(verbosity=2)
