"""Apps continue where they left off, through HandoffKit (the example reader,
Examples/Reader): the continuation lands in the window already showing the
document, needsSave refreshes what peers fetch, callbacks come exactly once,
a declared app that is not running is started, resign/invalidate/expiry
withdraw the offer, and a web page with no app opens in the browser.

Needs root: it creates network namespaces through Scripts/lab."""
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import LAB, REPO, lab, offer_of, peer, peer_json, require_root, wait_until  # noqa: E402

ARGS = ["--announce-interval", "1", "--peer-ttl", "4", "--transfer-timeout", "3", "--log-level", "debug"]
LAB_DIR = os.environ.get("HANDOFF_LAB_DIR", "/tmp/handoff-lab")
BIN = os.environ.get("HANDOFF_BIN", os.path.join(REPO, ".build", "debug"))
READER_TYPE = "org.example.handoff-reader.document"


def read(path):
    try:
        with open(path) as f:
            return f.read().splitlines()
    except FileNotFoundError:
        return []


class Apps(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_root()
        lab("down")
        lab("up", "laptop-a", "laptop-b")
        cls.browser_log = os.path.join(LAB_DIR, "laptop-b", "browser.log")
        cls.browser = os.path.join(LAB_DIR, "laptop-b", "record-browser")
        lab("start", "laptop-a", *ARGS)
        with open(cls.browser, "w") as f:
            f.write(f"#!/bin/sh\necho \"$@\" >> {cls.browser_log}\n")
        os.chmod(cls.browser, 0o755)
        lab("start", "laptop-b", *ARGS, "--browser", cls.browser)
        lab("pair-all")
        cls.readers = []

    @classmethod
    def tearDownClass(cls):
        for process in cls.readers:
            process.terminate()
        if not os.environ.get("HANDOFF_KEEP_LAB"):
            lab("down")

    def reader(self, host, *args, log=None):
        command = [LAB, "exec", host, "handoff-reader"] + (["--log", log] if log else []) + list(args)
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.readers.append(process)
        return process

    def stop_readers(self):
        subprocess.run([LAB, "pkill", "laptop-a", "-f", "handoff-reader"], capture_output=True)
        subprocess.run([LAB, "pkill", "laptop-b", "-f", "handoff-reader"], capture_output=True)

    def tearDown(self):
        self.stop_readers()
        # The next test starts with nothing offered and no reader registered.
        peer("laptop-a", "invalidate")
        wait_until("readers gone", lambda: not any(a["running"] for a in peer_json("laptop-b", "apps")))

    def test_1_continuation_lands_in_the_window_already_showing_the_document(self):
        log_b = os.path.join(LAB_DIR, "laptop-b", "reader-1.log")
        self.reader("laptop-b", "ch1.txt:1", "ch3.txt:5", log=log_b)
        wait_until("b's reader to declare", lambda: any(a["running"] for a in peer_json("laptop-b", "apps")))
        self.reader("laptop-a", "ch3.txt:120")
        wait_until("b to list a's reader", lambda: (o := offer_of("laptop-b", "laptop-a")) and o["type"] == READER_TYPE)
        self.assertEqual(peer_json("laptop-b", "accept", "laptop-a")["userInfo"], {"file": "ch3.txt", "line": 120})
        lines = wait_until("b's reader to continue", lambda: [l for l in read(log_b) if l.startswith("continue ")])
        self.assertEqual(lines, ["continue document:ch3.txt at line 120 in window w2 (already open, step 2)"])
        self.assertEqual(sum(l.startswith("willContinue") for l in read(log_b)), 1)

    def test_2_needs_save_refreshes_what_the_peer_fetches(self):
        self.reader("laptop-b")  # a reader with no window open yet, to continue it
        wait_until("b's reader to declare", lambda: any(a["running"] for a in peer_json("laptop-b", "apps")))
        self.reader("laptop-a", "ch3.txt:120", "--scroll-to", "250", "--after", "1")
        # The reader scrolls after a second and only sets needsSave: willSave refills
        # the line, and the republished activity is what b fetches from then on.
        def fetched_line():
            # An accept that races the republish is refused as not-current: poll on.
            result = peer("laptop-b", "accept", "laptop-a", "--json", check=False)
            return json.loads(result.stdout)["userInfo"]["line"] if result.returncode == 0 else None
        wait_until("b to fetch line 120, then line 250", lambda: (o := offer_of("laptop-b", "laptop-a")) and o["type"] == READER_TYPE
                   and fetched_line() == 250, timeout=8, interval=0.3)

    def test_3_resign_and_invalidate_withdraw_the_offer(self):
        for action in ("resign", "invalidate"):
            self.reader("laptop-a", "ch3.txt:7", "--finally", action, "--after", "1.5")
            wait_until("the offer", lambda: (o := offer_of("laptop-b", "laptop-a")) and o["type"] == READER_TYPE)
            wait_until(f"{action} to withdraw it", lambda: offer_of("laptop-b", "laptop-a") is None, timeout=5)
            self.stop_readers()

    def test_4_expiry_withdraws_the_offer(self):
        peer("laptop-a", "publish", "--type", "org.example.reader.document", "--title", "Short-lived", "--expires", "2")
        wait_until("the offer", lambda: offer_of("laptop-b", "laptop-a"))
        wait_until("expiry to withdraw it", lambda: offer_of("laptop-b", "laptop-a") is None, timeout=6)

    def test_5_a_declared_app_that_is_not_running_is_started(self):
        launched = os.path.join(LAB_DIR, "laptop-b", "launched.log")
        desktop = os.path.join(LAB_DIR, "laptop-b", "share", "applications", "handoff-reader.desktop")
        # Its display name differs from the name the app declares with: matched by the file's id, not Name=.
        with open(desktop, "w") as f:
            f.write("[Desktop Entry]\nType=Application\nName=Reader (started from its desktop file)\n"
                    f"Exec={BIN}/handoff-reader --log {launched} --exit-after 1\n"
                    f"X-Handoff-ActivityTypes={READER_TYPE};\n")
        try:
            self.reader("laptop-a", "ch9.txt:42")
            wait_until("the offer", lambda: (o := offer_of("laptop-b", "laptop-a")) and o["type"] == READER_TYPE)
            # accept returns once the started app took the continuation.
            peer("laptop-b", "accept", "laptop-a")
            lines = wait_until("the started reader to continue", lambda: [l for l in read(launched) if l.startswith("continue ")], timeout=15)
            self.assertEqual(lines, ["continue document:ch9.txt at line 42 in new window w1 of reader (step 3)"])
            self.assertEqual(sum(l.startswith("willContinue") for l in read(launched)), 1)
        finally:
            os.remove(desktop)

    def test_5b_a_started_app_that_never_takes_it_fails_the_accept(self):
        desktop = os.path.join(LAB_DIR, "laptop-b", "share", "applications", "broken-reader.desktop")
        with open(desktop, "w") as f:
            f.write(f"[Desktop Entry]\nType=Application\nName=Broken Reader\nExec=false\nX-Handoff-ActivityTypes={READER_TYPE};\n")
        try:
            self.reader("laptop-a", "ch9.txt:42")
            wait_until("the offer", lambda: (o := offer_of("laptop-b", "laptop-a")) and o["type"] == READER_TYPE)
            result = peer("laptop-b", "accept", "laptop-a", "--json", check=False)
            self.assertEqual(result.returncode, 1)
            error = json.loads(result.stdout)["error"]
            self.assertEqual(error["code"], "app")
            self.assertIn("Broken Reader was started to continue", error["message"])
            self.assertIn("exited with status 1", error["message"])
            # One that exits cleanly without ever declaring the type: failed once the bound (15 s) passes.
            with open(desktop, "w") as f:
                f.write(f"[Desktop Entry]\nType=Application\nName=Broken Reader\nExec=true\nX-Handoff-ActivityTypes={READER_TYPE};\n")
            started = time.monotonic()
            result = peer("laptop-b", "accept", "laptop-a", "--json", check=False)
            self.assertEqual(result.returncode, 1)
            self.assertIn("did not take it within 15 s", json.loads(result.stdout)["error"]["message"])
            self.assertGreaterEqual(time.monotonic() - started, 14)
        finally:
            os.remove(desktop)

    def test_6_a_failed_continuation_is_reported_once(self):
        log_b = os.path.join(LAB_DIR, "laptop-b", "reader-6.log")
        self.reader("laptop-b", "ch1.txt:1", log=log_b)
        wait_until("b's reader to declare", lambda: any(a["running"] for a in peer_json("laptop-b", "apps")))
        self.reader("laptop-a", "ch3.txt:1")
        wait_until("the offer", lambda: (o := offer_of("laptop-b", "laptop-a")) and o["type"] == READER_TYPE)
        with open(os.path.join(LAB_DIR, "laptop-a", "handoffd.pid")) as f:
            pid = int(f.read())
        os.kill(pid, 19)  # SIGSTOP: a stops answering
        try:
            self.assertEqual(peer("laptop-b", "accept", "laptop-a", check=False).returncode, 1)
        finally:
            os.kill(pid, 18)  # SIGCONT
        lines = wait_until("the reader's didFail", lambda: [l for l in read(log_b) if l.startswith("didFail")])
        # A frozen handoffd (it accepts connections, never answers) is named as such: the `enabled`
        # condition's peer-not-answering, as doctor names it (Docs/CONDITIONS.md).
        self.assertEqual(lines, [f"didFail {READER_TYPE}: enabled"])
        self.assertEqual(sum(l.startswith("willContinue") for l in read(log_b)), 1)
        self.assertFalse(any(l.startswith("continue ") for l in read(log_b)))

    def test_7_a_web_page_with_no_app_opens_in_the_browser(self):
        peer("laptop-a", "publish", "--type", "org.example.nobody-has-this", "--title", "A web page",
             "--url", "https://example.org/articles/atomics")
        wait_until("the offer", lambda: (o := offer_of("laptop-b", "laptop-a")) and o["type"] == "org.example.nobody-has-this")
        peer("laptop-b", "accept", "laptop-a")
        self.assertEqual(wait_until("the browser to be started", lambda: read(self.browser_log)),
                         ["https://example.org/articles/atomics"])
        # Without a web page, an undeclared type is printed by accept, and refused with app under --app.
        peer("laptop-a", "publish", "--type", "org.example.nobody-has-this", "--title", "No page")
        wait_until("the new offer", lambda: (o := offer_of("laptop-b", "laptop-a")) and o["title"] == "No page")
        self.assertEqual(json.loads(peer("laptop-b", "accept", "laptop-a", "--app", "--json", check=False).stdout)["error"]["code"], "app")
        self.assertEqual(peer_json("laptop-b", "accept", "laptop-a")["title"], "No page")

    def test_8_a_browser_that_fails_fails_the_accept(self):
        lab("stop", "laptop-b")
        lab("start", "laptop-b", *ARGS, "--browser", "/bin/false")
        try:
            peer("laptop-a", "publish", "--type", "org.example.nobody-has-this", "--title", "A web page",
                 "--url", "https://example.org/articles/atomics")
            wait_until("the offer", lambda: (o := offer_of("laptop-b", "laptop-a")) and o["title"] == "A web page", timeout=15)
            result = peer("laptop-b", "accept", "laptop-a", "--json", check=False)
            self.assertEqual(result.returncode, 1)
            error = json.loads(result.stdout)["error"]
            self.assertEqual(error["code"], "app")
            self.assertIn("exited with status 1", error["message"])
        finally:
            lab("stop", "laptop-b")
            lab("start", "laptop-b", *ARGS, "--browser", self.browser)


if __name__ == "__main__":
    unittest.main(verbosity=2)
