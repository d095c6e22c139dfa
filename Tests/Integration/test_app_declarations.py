"""App declarations (.desktop files) are cached by handoffd and read again when
inotify reports a change: a file installed after the daemon started is used
without a restart, in a directory that existed at the start and in one created
later; a removed one stops being used; and an accept starts an app declared
that way.

Needs root: it creates network namespaces through Scripts/lab."""
import json
import os
import shutil
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import LAB, REPO, lab, offer_of, peer, peer_json, require_root, wait_until  # noqa: E402

ARGS = ["--announce-interval", "1", "--peer-ttl", "4", "--transfer-timeout", "3"]
LAB_DIR = os.environ.get("HANDOFF_LAB_DIR", "/tmp/handoff-lab")
BIN = os.environ.get("HANDOFF_BIN", os.path.join(REPO, ".build", "debug"))
READER_TYPE = "org.example.handoff-reader.document"
HOME_APPS = os.path.join(LAB_DIR, "laptop-b", "share", "applications")
# In $XDG_DATA_DIRS of laptop-b's handoffd, absent when it starts.
LATER = os.path.join(LAB_DIR, "laptop-b", "later")


def app_evidence():
    """What doctor says of the app condition for laptop-a's offer (each call also probes laptop-a's port)."""
    result = peer("laptop-b", "doctor", "laptop-a", "--json", check=False)
    checks = {c["code"]: c for c in json.loads(result.stdout)["conditions"]}
    return checks["app"]["evidence"]


def declared_by(name):
    return f"continued here by {name}" in app_evidence()


def undeclared():
    evidence = app_evidence().lower()
    return evidence.startswith("no app") and READER_TYPE in evidence


def wait(what, condition):
    # Doctor probes the peer's transfer port, which limits each source to 5 connections a second.
    return wait_until(what, condition, timeout=4, interval=0.3)


def write_desktop(directory, file_name, name, exec_line="true"):
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, file_name)
    with open(path, "w") as f:
        f.write(f"[Desktop Entry]\nType=Application\nName={name}\nExec={exec_line}\nX-Handoff-ActivityTypes={READER_TYPE};\n")
    return path


class AppDeclarations(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_root()
        lab("down")
        shutil.rmtree(LATER, ignore_errors=True)
        lab("up", "laptop-a", "laptop-b")
        lab("start", "laptop-a", *ARGS)
        env = dict(os.environ, XDG_DATA_DIRS=LATER)
        subprocess.run([LAB, "start", "laptop-b", *ARGS], check=True, capture_output=True, env=env)
        lab("pair-all")
        cls.reader = subprocess.Popen([LAB, "exec", "laptop-a", "handoff-reader", "ch9.txt:42"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until("the offer", lambda: (o := offer_of("laptop-b", "laptop-a")) and o["type"] == READER_TYPE)

    @classmethod
    def tearDownClass(cls):
        cls.reader.terminate()
        cls.reader.wait(timeout=10)
        subprocess.run([LAB, "pkill", "laptop-b", "-f", "handoff-reader"], capture_output=True)
        shutil.rmtree(LATER, ignore_errors=True)
        if not os.environ.get("HANDOFF_KEEP_LAB"):
            lab("down")

    def test_1_a_file_installed_after_the_start_is_used_and_a_removed_one_is_not(self):
        self.assertTrue(undeclared(), app_evidence())
        path = write_desktop(HOME_APPS, "quiet-note.desktop", "Quiet Note")
        wait("the new declaration", lambda: declared_by("Quiet Note"))
        os.remove(path)
        wait("the declaration to go", undeclared)

    def test_2_a_directory_created_after_the_start_is_watched(self):
        path = write_desktop(os.path.join(LATER, "applications"), "later-note.desktop", "Later Note")
        try:
            wait("the declaration in the new directory", lambda: declared_by("Later Note"))
        finally:
            os.remove(path)
        wait("the declaration to go", undeclared)

    def test_3_an_accept_starts_an_app_declared_after_the_start(self):
        launched = os.path.join(LAB_DIR, "laptop-b", "launched-later.log")
        path = write_desktop(HOME_APPS, "handoff-reader.desktop", "Reader",
                             f"{BIN}/handoff-reader --log {launched} --exit-after 1")
        try:
            wait("the new declaration", lambda: declared_by("Reader"))
            time.sleep(1)  # past the probes' connection rate
            peer("laptop-b", "accept", "laptop-a")
            wait_until("the started reader to continue",
                       lambda: any(l.startswith("continue ") for l in open(launched).read().splitlines()) if os.path.exists(launched) else False,
                       timeout=15)
        finally:
            os.remove(path)

    def test_4_an_app_that_declares_before_it_subscribes_still_gets_its_continuation(self):
        # The order the local API once required undocumented (issue 24): declare, then subscribe.
        launched = os.path.join(LAB_DIR, "laptop-b", "declare-first.log")
        script = os.path.join(LAB_DIR, "laptop-b", "declare-first.py")
        with open(script, "w") as f:
            f.write(DECLARE_FIRST_APP)
        path = write_desktop(HOME_APPS, "declare-first.desktop", "Declare First", f"python3 {script} {launched}")
        try:
            wait("the new declaration", lambda: declared_by("Declare First"))
            time.sleep(1)  # past the probes' connection rate
            peer("laptop-b", "accept", "laptop-a")
            wait_until("the started app to get the continuation with its payload",
                       lambda: "continued with payload" in (open(launched).read() if os.path.exists(launched) else ""), timeout=15)
        finally:
            os.remove(path)


# An app in a few lines of Python speaking the local API: declare (with payloads), then subscribe.
DECLARE_FIRST_APP = r"""
import array, json, os, socket, sys
log = open(sys.argv[1], "a")
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(os.environ["HANDOFF_SOCKET"])
def send(request):
    s.sendall((json.dumps(request) + "\n").encode())
send({"op": "declare", "id": 1, "app": "Declare First", "types": ["org.example.handoff-reader.document"],
      "desktopId": os.environ.get("HANDOFF_DESKTOP_ID"), "payloads": True})
send({"op": "subscribe", "id": 2})
buffer, descriptors = b"", []
while True:
    data, fds, _, _ = socket.recv_fds(s, 65536, 4)
    if not data:
        break
    buffer += data
    descriptors += fds
    while b"\n" in buffer:
        line, buffer = buffer.split(b"\n", 1)
        message = json.loads(line)
        log.write(json.dumps(message) + "\n")
        if message.get("event") == "continued":
            log.write("continued with payload\n" if descriptors else "continued without payload\n")
            log.flush()
            sys.exit(0)
    log.flush()
"""


if __name__ == "__main__":
    unittest.main()
