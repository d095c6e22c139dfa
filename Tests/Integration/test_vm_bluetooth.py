"""Bluetooth against the real Linux stack: runs inside the VM that
Scripts/vm-lab boots (kernel 6.1, bluetoothd -E, Bumble controllers through
/dev/vhci modelling BT 5.x chips that refuse legacy commands after extended
ones). Two hosts, network namespaces vm-a and vm-b, each with handoffd as
the unprivileged user nobody on its own adapter through bluetoothd's D-Bus API.

Run it with `Scripts/vm-lab test`; outside the VM it skips."""
import json
import os
import re
import statistics
import subprocess
import time
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.environ.get("HANDOFF_VM_OUT", "/tmp/handoff-vm-lab")  # logs and captures, shared with the host
RUN = os.environ.get("HANDOFF_VM_RUN", "/run/handoff-vm")  # sockets and state, in the guest
BIN = os.environ.get("HANDOFF_BIN", os.path.join(REPO, ".build", "debug"))
HOSTS = {
    "laptop-a": {"netns": "vm-a", "adapter": "hci0", "interface": "veth-a", "address": "169.254.20.1"},
    "laptop-b": {"netns": "vm-b", "adapter": "hci1", "interface": "veth-b", "address": "169.254.20.2"},
}
DAEMON_ARGS = ["--discovery", "multicast", "--announce-interval", "1", "--peer-ttl", "4",
               "--proximity-ttl", "3", "--log-level", "debug"]
# Runs of "start A's daemon, until B lists A as near" for the median.
NEAR_RUNS = int(os.environ.get("HANDOFF_VM_NEAR_RUNS", "3"))


def as_nobody(host, *command, env=()):
    info = HOSTS[host]
    return ["ip", "netns", "exec", info["netns"], "setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
            "env", "HOME=/nonexistent", f"HANDOFF_SOCKET={RUN}/{host}/run/handoff.sock", *env, *command]


def peer(host, *args, check=True, timeout=60):
    result = subprocess.run(as_nobody(host, f"{BIN}/handoff-peer", *args), capture_output=True, text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise AssertionError(f"{host}: handoff-peer {' '.join(args)} exited {result.returncode}\n{result.stdout}\n{result.stderr}")
    return result


def peer_json(host, *args):
    return json.loads(peer(host, *args, "--json").stdout)


def wait_until(what, condition, timeout=20.0, interval=0.1):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def air(command):
    """A line to ble-lab's control socket (range, rssi); its reply."""
    import socket
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as control:
        control.settimeout(30)
        control.connect(f"{RUN}/air/control.sock")
        control.sendall((command + "\n").encode())
        reply = control.makefile().readline().strip()
    if not reply.startswith("ok"):
        raise AssertionError(f"ble-lab: {command}: {reply}")
    return reply


def proximity_of(host, name):
    for entry in peer_json(host, "list"):
        if entry["name"] == name:
            return entry["proximity"]
    return None


def near(host, name):
    proximity = proximity_of(host, name)
    return proximity if proximity and proximity.get("near") else None


def hears(host, name, timeout=60):
    """Waits until `host` lists `name` as near; on failure says what both daemons report."""
    try:
        return wait_until(f"{host} to hear {name}", lambda: near(host, name), timeout=timeout)
    except AssertionError as error:
        details = {h: bluetooth_status(h) for h in (host, name)}
        raise AssertionError(f"{error}\n{json.dumps(details, indent=1)}\n{peer_json(host, 'list')}") from None


def bluetooth_status(host):
    return peer_json(host, "status")["bluetooth"]


class Daemons:
    def __init__(self):
        self.processes = {}

    def start(self, host, *extra):
        info = HOSTS[host]
        log = open(f"{OUT}/{host}/handoffd.log", "a")
        command = as_nobody(host, f"{BIN}/handoffd", "--state-dir", f"{RUN}/{host}/state",
                            "--socket", f"{RUN}/{host}/run/handoff.sock", "--name", host,
                            "--bluetooth-adapter", info["adapter"], "--interface", info["interface"], *DAEMON_ARGS, *extra)
        self.processes[host] = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        wait_until(f"{host}'s socket", lambda: os.path.exists(f"{RUN}/{host}/run/handoff.sock"), timeout=120)

    def stop(self, host):
        process = self.processes.pop(host, None)
        if process is None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def stop_all(self):
        for host in list(self.processes):
            self.stop(host)


def pair(a, b):
    listener = subprocess.Popen(as_nobody(b, f"{BIN}/handoff-peer", "pair", "--yes", "--timeout", "120"),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            if peer(a, "pair", "--address", HOSTS[b]["address"], "--yes", check=False, timeout=120).returncode == 0:
                break
            time.sleep(0.2)
        else:
            raise AssertionError(f"{a} could not pair with {b}")
        listener.wait(timeout=120)
    finally:
        if listener.poll() is None:
            listener.kill()
            listener.wait()


def btmon_text():
    return subprocess.run(["btmon", "-r", f"{OUT}/btmon.snoop"], capture_output=True, text=True, timeout=120).stdout


def hci_commands(text):
    """(OCF of an LE command, its decoded block, controller, time) for every LE command in a btmon
    text dump, in order; MGMT Set Connectable and Set Discoverable come as OCF None."""
    commands = []
    for block in re.split(r"\n(?=[<>@=] )", text):
        match = re.match(r"< HCI Command: .*?\(0x08\|0x([0-9a-f]{4})\).*?\[(hci\d+)\] +([0-9.]+)", block)
        if match:
            commands.append((int(match.group(1), 16), block, match.group(2), float(match.group(3))))
        match = re.match(r"@ MGMT Command: Set (?:Connectable|Discoverable) .*?\[(hci\d+)\] +([0-9.]+)", block)
        if match:
            commands.append((None, block, match.group(1), float(match.group(2))))
    return commands


def advertised_sets(commands, company=65535):
    """Each time an advertising set was enabled: (controller, handle, own address type, random address, our
    manufacturer data or None, time enabled, time disabled or None), from the parameters, address and data
    the kernel gave that set before, and the disable, remove or clear that ended it."""
    sets, enabled, on = {}, [], {}
    for opcode, body, controller, at in commands:
        if opcode == 0x0039 and "Disabled (0x00)" in body or opcode in (0x003C, 0x003D):
            handles = re.findall(r"^ +Handle: (?:0x)?([0-9a-f]+)", body, re.M)
            for key in [key for key in on if key[0] == controller and (not handles or f"{int(key[1], 16)}" in
                                                                      {str(int(h, 16 if opcode != 0x003C else 10)) for h in handles})]:
                enabled[on.pop(key)][6] = at
            continue
        handle = re.search(r"^ +(?:Advertising )?[Hh]andle: (0x[0-9a-f]+)", body, re.M)
        state = sets.setdefault((controller, handle.group(1)), {}) if handle and opcode != 0x0039 else None
        if opcode == 0x0036:
            state["own"] = re.search(r"Own address type: (\w+)", body).group(1)
        elif opcode == 0x0035:
            state["address"] = re.search(r"random address: (\S+)", body).group(1)
        elif opcode == 0x0037:
            ours = re.search(rf"Company: .*\({company}\)\n +Data: ([0-9a-f]+)", body)
            state["data"] = ours.group(1) if ours else None
        elif opcode == 0x0039 and "Enabled (0x01)" in body:
            for number in re.findall(r"^ +Handle: (0x[0-9a-f]+)", body, re.M):
                state = sets.get((controller, number), {})
                on[(controller, number)] = len(enabled)
                enabled.append([controller, number, state.get("own"), state.get("address"), state.get("data"), at, None])
    return [tuple(entry) for entry in enabled]


def set_adapter(adapter, name, value):
    """An Adapter1 property through bluetoothd, as a settings panel would set it."""
    subprocess.run(["busctl", "--system", "set-property", "org.bluez", f"/org/bluez/{adapter}", "org.bluez.Adapter1",
                    name, "b", "true" if value else "false"], check=True, timeout=30)


def device_addresses(adapter):
    """Addresses of the Device1 objects bluetoothd holds under an adapter."""
    tree = subprocess.run(["busctl", "--system", "tree", "--list", "org.bluez"], capture_output=True, text=True, timeout=30).stdout
    return set(re.findall(rf"/org/bluez/{adapter}/dev_([0-9A-F_]{{17}})$", tree, re.M))


def signals_per_device(adapter, seconds):
    """PropertiesChanged signals bluetoothd sends per Device1 under `adapter` in `seconds` (the raw report rate)."""
    monitor = subprocess.Popen(["dbus-monitor", "--system",
                                f"type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',path_namespace='/org/bluez/{adapter}'"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        time.sleep(seconds)
    finally:
        monitor.terminate()
        output = monitor.communicate(timeout=30)[0]
    counts = {}
    for path in re.findall(rf"path=(/org/bluez/{adapter}/dev_[0-9A-F_]+);", output):
        counts[path] = counts.get(path, 0) + 1
    return counts


BLUETOOTHD = []  # the bluetoothd processes the tests started
STRESS_MARK = "handoff-stress"


def alive(pid):
    """Running (a zombie left by a crash counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as file:
            return file.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def restart_bluetoothd(experimental=True, stopped=False):
    """Stops bluetoothd (unless it already stopped) and starts it again, with -E (advertisement monitors) unless told otherwise."""
    if not stopped:
        with open(f"{OUT}/bluetoothd.pid") as file:
            pid = int(file.read())
        os.kill(pid, 15)
        wait_until("bluetoothd to exit", lambda: not alive(pid), timeout=60)
    for ended in [process for process in BLUETOOTHD if process.poll() is not None]:
        BLUETOOTHD.remove(ended)
    log = open(f"{OUT}/bluetoothd.log", "a")
    process = subprocess.Popen(["/usr/libexec/bluetooth/bluetoothd", "-n"] + (["-E"] if experimental else []),
                               stdout=log, stderr=subprocess.STDOUT)
    log.close()
    with open(f"{OUT}/bluetoothd.pid", "w") as file:
        file.write(str(process.pid))
    # Kept, so the ones stopped later are reaped; vm-lab stops the last by its pid.
    BLUETOOTHD.append(process)


@unittest.skipUnless(os.environ.get("HANDOFF_VM_GUEST"), "runs inside the VM: Scripts/vm-lab test")
class VMBluetooth(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.daemons = Daemons()
        cls.figures = []
        try:
            cls.daemons.start("laptop-a")
            cls.daemons.start("laptop-b")
            pair("laptop-a", "laptop-b")
        except BaseException:
            cls.daemons.stop_all()  # tearDownClass does not run after a failed setUpClass
            raise

    @classmethod
    def tearDownClass(cls):
        cls.daemons.stop_all()
        if cls.figures:
            with open(f"{OUT}/figures.txt", "w") as file:
                file.write("\n".join(cls.figures) + "\n")
            print("\n" + "\n".join(cls.figures))

    def setUp(self):
        self.started = time.monotonic()

    def tearDown(self):
        print(f"  [{time.monotonic() - self.started:.0f} s]", end=" ", flush=True)

    def record(self, line):
        self.figures.append(line)
        print(f"\n  {line}")

    def test_1_beacon_registered_and_heard(self):
        status = wait_until("a's beacon registered", lambda: (s := bluetooth_status("laptop-a"))["available"] and s, timeout=30)
        self.assertEqual(status["backend"], "bluez")
        self.assertEqual(status["device"], "hci0")
        self.assertIn("advertising", status["state"])
        proximity = hears("laptop-b", "laptop-a")
        self.assertGreaterEqual(proximity["rssi"], proximity["thresholdDBM"])

    def test_2_near_after_start_median(self):
        timings, ready = [], []
        for run in range(NEAR_RUNS):
            self.daemons.stop("laptop-a")
            wait_until("b to drop a", lambda: not near("laptop-b", "laptop-a"), timeout=20)
            started = time.monotonic()
            self.daemons.start("laptop-a")
            ready.append(time.monotonic() - started)
            hears("laptop-b", "laptop-a", timeout=60)
            timings.append(time.monotonic() - started)
        self.record(f"start of A's daemon to A near on B (BlueZ, VM): median {statistics.median(timings):.1f} s over {len(timings)} runs "
                    f"(min {min(timings):.1f}, max {max(timings):.1f}); of which until A's local socket exists: "
                    f"median {statistics.median(ready):.1f} s")

    def test_3_rssi_updates_per_second(self):
        hears("laptop-b", "laptop-a")
        self.assertEqual(bluetooth_status("laptop-b")["scanning"], "discovery and advertisement monitor")
        before = bluetooth_status("laptop-b")["beaconsHeard"]
        started = time.monotonic()
        signals = max(signals_per_device("hci1", 10).values(), default=0)
        heard = (bluetooth_status("laptop-b")["beaconsHeard"] - before) / (time.monotonic() - started)
        self.record(f"advertisement monitor path: bluetoothd signals {signals / 10:.1f} Device1 updates/s for A; "
                    f"B's handoffd takes {heard:.1f} sightings/s (at most 4/s per device)")
        self.assertGreater(heard, 0.5)

    def test_4_weak_beacon_is_far_then_near_again(self):
        hears("laptop-b", "laptop-a")
        air("rssi laptop-a -90")
        try:
            wait_until("a to be far", lambda: (p := proximity_of("laptop-b", "laptop-a")) is None or not p.get("near"), timeout=20)
        finally:
            air("rssi laptop-a reset")
        wait_until("a near again", lambda: near("laptop-b", "laptop-a"), timeout=20)

    def test_5_whole_handoff(self):
        hears("laptop-b", "laptop-a")
        peer("laptop-a", "publish", "--type", "org.example.reader.document", "--title", "Chapter 9")
        wait_until("b to list a's offer", lambda: any(e["name"] == "laptop-a" and e["offer"] for e in peer_json("laptop-b", "list")), timeout=20)
        accepted = peer_json("laptop-b", "accept", "laptop-a")
        self.assertEqual(accepted["title"], "Chapter 9")

    def test_6_bluetoothd_restarted(self):
        hears("laptop-b", "laptop-a")
        # First without -E: no advertisement monitor, discovery alone (the controller's duplicate filter on).
        restart_bluetoothd(experimental=False)
        wait_until("b to scan by discovery alone", lambda: (s := bluetooth_status("laptop-b"))["available"] and s["scanning"] == "discovery",
                   timeout=60)
        self.assertIn("discovery only", bluetooth_status("laptop-b")["state"])
        signals = max(signals_per_device("hci1", 21).values(), default=0)
        self.record(f"discovery-only path (bluetoothd without -E): bluetoothd signals {signals / 21:.2f} Device1 updates/s for A "
                    f"({signals} in 21 s)")
        restart_bluetoothd()
        wait_until("a to say bluetoothd came back and advertise again", lambda: bluetooth_status("laptop-a")["available"], timeout=60)
        self.assertEqual(bluetooth_status("laptop-b")["scanning"], "discovery and advertisement monitor")
        hears("laptop-b", "laptop-a", timeout=60)

    def test_7_adapter_powered_off_and_on(self):
        hears("laptop-b", "laptop-a")
        set_adapter("hci0", "Powered", False)
        status = wait_until("a to say its adapter is off", lambda: (s := bluetooth_status("laptop-a")) and not s["available"] and s, timeout=20)
        self.assertIn("powered off", status["state"])
        set_adapter("hci0", "Powered", True)
        wait_until("a to advertise again", lambda: bluetooth_status("laptop-a")["available"], timeout=30)
        hears("laptop-b", "laptop-a", timeout=30)

    def test_8_raw_hci_on_a_kernel_managed_bt5_controller_names_the_cause(self):
        # Raw HCI needs root and the initial network namespace (Bluetooth sockets exist only there).
        directory = f"{RUN}/raw"
        os.makedirs(f"{directory}/state", mode=0o700, exist_ok=True)
        os.chmod(directory, 0o700)  # the local API socket's directory must be closed to others
        env = dict(os.environ, HANDOFF_SOCKET=f"{directory}/handoff.sock")
        log = open(f"{OUT}/raw-hci-handoffd.log", "w")
        daemon = subprocess.Popen([f"{BIN}/handoffd", "--state-dir", f"{directory}/state", "--socket", f"{directory}/handoff.sock",
                                   "--name", "raw", "--hci", "hci0", "--discovery", "multicast", "--interface", "lo", "--port", "0"],
                                  stdout=log, stderr=subprocess.STDOUT)
        log.close()
        try:
            def state():
                result = subprocess.run([f"{BIN}/handoff-peer", "status", "--json"], capture_output=True, text=True, env=env)
                return json.loads(result.stdout)["bluetooth"] if result.returncode == 0 else None
            status = wait_until("the raw HCI path to give up on hci0", lambda: (s := state()) and "extended commands" in s["state"] and s, timeout=30)
            self.assertEqual(status["backend"], "hci")
            self.assertFalse(status["available"])
            self.assertIn("use the BlueZ backend", status["state"] + json.dumps(status))
        finally:
            daemon.terminate()
            daemon.wait(timeout=10)
        # bluetoothd's own scanning went on: b still hears a.
        hears("laptop-b", "laptop-a")

    def test_9a_out_of_range_is_far_within_the_freshness(self):
        hears("laptop-b", "laptop-a")
        freshness = bluetooth_status("laptop-b")["freshnessMillis"] / 1000
        air("range laptop-a out")
        try:
            started = time.monotonic()
            wait_until("b to stop listing a as near", lambda: not near("laptop-b", "laptop-a"), timeout=freshness + 20)
            gone = time.monotonic() - started
        finally:
            air("range laptop-a in")
        self.record(f"out of range to not near on B: {gone:.1f} s (freshness {freshness:.0f} s, polled through handoff-peer)")
        # The freshness plus one poll of `list` (each a process start in the TCG guest).
        self.assertLess(gone, freshness + 6)
        hears("laptop-b", "laptop-a", timeout=30)

    def test_9b_rotation_changes_token_and_address_together(self):
        hears("laptop-b", "laptop-a")
        before = device_addresses("hci1")
        # Both hosts share the guest's clock. A host moves to a period's token at a random time in
        # the period, but at once when the clock skipped a period (a laptop that slept), as here:
        # two periods on, A's next tick advertises that period's token, which B's table accepts.
        subprocess.run(["date", "-s", f"@{int(time.time()) + 1800}"], check=True, capture_output=True)
        with open(f"{OUT}/rotated", "w") as marker:
            marker.write("the clock moved two rotation periods during the run\n")
        new = wait_until("a new address from a on b", lambda: device_addresses("hci1") - before, timeout=90)
        hears("laptop-b", "laptop-a", timeout=30)
        self.record(f"rotation: B saw A from {len(new)} new address(es) after the period turned")

    def test_9c_discoverable_adapter_withdraws_the_beacon(self):
        hears("laptop-b", "laptop-a")
        bluetoothd = bluetoothd_pid()
        set_adapter("hci0", "Discoverable", True)
        # bluetoothd refreshes every registered advertisement when Discoverable changes; handoffd
        # withdraws its beacon only once that refresh is over (AdvertisementRegistration).
        status = wait_until("a to withdraw its beacon on the discoverable adapter",
                            lambda: (s := bluetooth_status("laptop-a")) and "discoverable" in s["state"] and s, timeout=30)
        self.assertFalse(status["available"])
        wait_until("b to stop listing a as near", lambda: not near("laptop-b", "laptop-a"), timeout=20)
        set_adapter("hci0", "Discoverable", False)
        wait_until("a to advertise again", lambda: bluetooth_status("laptop-a")["available"], timeout=60)
        hears("laptop-b", "laptop-a", timeout=60)
        self.assertTrue(alive(bluetoothd), "bluetoothd died")

    def test_9d_bluetoothd_survives_toggles_power_cycles_and_restarts(self):
        # What a settings panel and a user do while handoffd advertises. bluetoothd before 5.74
        # aborts when a refresh of a registered advertisement fails (BlueZ 6b5447583), and before
        # 5.73 frees a client its refresh still uses (c01c40498).
        hears("laptop-b", "laptop-a")
        bluetoothd = bluetoothd_pid()
        failures_before, refused_before = bluetoothd_failures(), registrations_refused("laptop-a")
        # A mark in the capture where the stress starts (VMCapture judges what comes before it
        # strictly and reports what comes after): the other adapter's name, which nothing else sets.
        subprocess.run(["btmgmt", "--index", "1", "name", STRESS_MARK], capture_output=True, timeout=60)
        gaps = [0, 0.3, 1.5]
        # 30 toggles, 12 power cycles, 3 restarts: the handoffd before the fix aborted bluetoothd at
        # toggle 9. (It was 50, 20 and 5: 153 of the VM lab's 323 s, which kept CI over 20 minutes.)
        for toggle in range(30):
            set_adapter("hci0", "Discoverable", toggle % 2 == 0)
            time.sleep(gaps[toggle % len(gaps)])
            self.assertTrue(alive(bluetoothd), f"bluetoothd died at discoverable toggle {toggle + 1}")
        set_adapter("hci0", "Discoverable", False)
        for cycle in range(12):
            set_adapter("hci0", "Powered", False)
            set_adapter("hci0", "Powered", True)
            # At once, while handoffd registers its beacon again.
            set_adapter("hci0", "Discoverable", True)
            set_adapter("hci0", "Discoverable", False)
            self.assertTrue(alive(bluetoothd), f"bluetoothd died at power cycle {cycle + 1}")
        for restart in range(3):
            self.daemons.stop("laptop-a")
            self.daemons.start("laptop-a")
            wait_until("a to advertise", lambda: bluetooth_status("laptop-a")["available"], timeout=60)
            set_adapter("hci0", "Discoverable", True)
            set_adapter("hci0", "Discoverable", False)
            self.assertTrue(alive(bluetoothd), f"bluetoothd died at handoffd restart {restart + 1}")
        self.assertEqual(bluetoothd_pid(), bluetoothd)
        # A registration of ours may be refused (the adapter powered off as it arrived): bluetoothd
        # answers it with an error and goes on. Only a failure no registration of ours was told of
        # is a refresh's, the path that aborts bluetoothd before 5.74.
        failed, refused = bluetoothd_failures() - failures_before, registrations_refused("laptop-a") - refused_before
        self.assertLessEqual(failed, refused, "bluetoothd failed to refresh an advertisement")
        wait_until("a to advertise again", lambda: bluetooth_status("laptop-a")["available"], timeout=60)
        hears("laptop-b", "laptop-a", timeout=60)
        self.record("bluetoothd survived 30 discoverable toggles (gaps 0, 0.3, 1.5 s), 12 power cycles each followed by a toggle, "
                    f"and 3 handoffd restarts each followed by a toggle, with handoffd advertising: same pid, no failed refresh "
                    f"({refused} registration(s) refused as the adapter powered off, answered and retried)")


def bluetoothd_pid():
    with open(f"{OUT}/bluetoothd.pid") as file:
        return int(file.read())


def registrations_refused(host):
    """RegisterAdvertisement calls of host's handoffd that bluetoothd answered with Failed."""
    with open(f"{OUT}/{host}/handoffd.log", errors="replace") as file:
        return sum("RegisterAdvertisement" in line and "Failed to register advertisement" in line for line in file)


def bluetoothd_failures():
    """bluetoothd's "Failed to add advertisement" lines: each is a refresh or registration the kernel refused."""
    with open(f"{OUT}/bluetoothd.log", errors="replace") as file:
        return sum("Failed to add advertisement" in line for line in file)


@unittest.skipUnless(os.environ.get("HANDOFF_VM_CAPTURE") and os.path.exists(f"{OUT}/btmon.snoop"),
                     "Scripts/vm-lab test runs it on the host after the VM run (btmon under TCG takes minutes)")
class VMCapture(unittest.TestCase):
    """What went on the air during the VM run, as the kernel sent it (btmon):
    extended advertising sets from non-resolvable private addresses carrying our
    manufacturer data and nothing else (the kernel adds Flags on LE-only
    controllers), and not one legacy advertising or scanning command."""

    @classmethod
    def setUpClass(cls):
        text = btmon_text()
        cls.commands = hci_commands(text)
        cls.enabled = advertised_sets(cls.commands)
        # test_9d's mark: the other adapter renamed, which nothing else does.
        mark = re.search(rf"@ MGMT Command: Set Local Name \(0x000f\).*?\[hci1\] +([0-9.]+)\n(?:.*\n){{0,3}}.*{STRESS_MARK}", text)
        cls.stress = float(mark.group(1)) if mark else None

    def test_beacon_on_the_air(self):
        commands = [(opcode, body) for opcode, body, _, _ in self.commands if opcode is not None]
        addresses = [re.search(r"random address: (\S+) \(([^)]+)\)", body).groups() for opcode, body in commands if opcode == 0x0035]
        self.assertTrue(addresses, "no random address set for an advertising set")
        self.assertEqual({kind for _, kind in addresses}, {"Non-Resolvable"}, addresses)
        ours = [body for opcode, body in commands if opcode == 0x0037 and "Company: internal use (65535)" in body]
        self.assertTrue(ours, "no extended advertising data with company 0xFFFF")
        for body in ours:
            fields = {line.strip().split(":")[0] for line in body.splitlines()[1:] if re.match(r"^ {8}\S", line)}
            self.assertLessEqual(fields, {"Handle", "Operation", "Fragment preference", "Data length", "Flags", "Company"}, body)
        legacy = {0x0006, 0x0008, 0x000A, 0x000B, 0x000C}  # LE Set Advertising Parameters/Data/Enable, Scan Parameters/Enable
        self.assertFalse([opcode for opcode, _ in commands if opcode in legacy], "the kernel sent legacy LE commands")

    def test_public_address_carries_the_beacon_only_until_handoffd_withdraws_it(self):
        # bluetoothd re-adds every registered advertisement when the adapter becomes discoverable
        # (so connectable), and the kernel then sets ours up from the public address
        # (hci_setup_ext_adv_instance_sync): no D-Bus client can stop that refresh, which comes
        # before the Discoverable signal. What handoffd controls: the set is withdrawn at once,
        # and no set with our data is ever enabled from the public address otherwise.
        ours = [entry for entry in self.enabled if entry[4]]
        self.assertTrue(ours, "no advertising set with our manufacturer data was enabled")
        changes = [(controller, at) for opcode, _, controller, at in self.commands if opcode is None]
        # test_9d's stress (30 toggles, power cycles, restarts) begins at its mark: under it the
        # kernel 6.1 was seen re-enabling our set with parameters it had programmed during an
        # earlier discoverable window (connectable, public address) without sending them again.
        # That is reported below and in Docs/HARDWARE.md, not judged by the rules for handoffd.
        stress = self.stress
        under_stress = [entry for entry in ours if entry[2] != "Random" and stress is not None and entry[5] >= stress]
        if under_stress:
            line = (f"under test_9d's stress, our data from the public address {len(under_stress)} time(s), for "
                    + ", ".join(f"{(off - on) * 1000:.0f} ms" if off else "until the next restart" for _, _, _, _, _, on, off in under_stress))
            with open(f"{OUT}/figures.txt", "a") as file:
                file.write(line + "\n")
            print(f"\n  {line}")
        windows = []
        for controller, handle, own, address, data, on, off in ours:
            if own == "Random" or (stress is not None and on >= stress):
                continue
            self.assertTrue(any(c == controller and 0 <= on - at < 2 for c, at in changes),
                            f"our data enabled from the public address with no Discoverable change before it: {handle} at {on}")
            self.assertIsNotNone(off, f"our data from the public address, never withdrawn: {handle} at {on}")
            # From bluetoothd's refresh to its Remove Advertising for our Unregister: the Discoverable
            # signal and two D-Bus calls; 81 ms to 1.5 s seen under TCG on a loaded machine.
            self.assertLess(off - on, 5.0, f"our data from the public address for {off - on:.3f} s")
            windows.append(off - on)
        if windows:
            line = f"public address carried the beacon for {max(windows) * 1000:.0f} ms after the adapter became discoverable (bluetoothd's refresh)"
            with open(f"{OUT}/figures.txt", "a") as file:
                file.write(line + "\n")
            print(f"\n  {line}")

    def test_token_and_address_change_together(self):
        tokens_of = {}
        for controller, _, _, address, data, _, _ in self.enabled:
            if data:
                tokens_of.setdefault((controller, address), set()).add(data)
        self.assertFalse({key: tokens for key, tokens in tokens_of.items() if len(tokens) > 1}, "an address carried two tokens")
        if os.path.exists(f"{OUT}/rotated"):
            rotated = {controller for controller, _ in tokens_of if len({d for (c, _), t in tokens_of.items() if c == controller for d in t}) > 1}
            self.assertIn("hci0", rotated, "A's token did not change when the period turned")


if __name__ == "__main__":
    unittest.main(verbosity=2)
