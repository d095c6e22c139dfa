"""Shared helpers for the lab integration tests: drive Scripts/lab and
handoff-peer, poll for conditions, read JSON. Needs root (network namespaces)."""
import json
import os
import subprocess
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LAB = os.path.join(REPO, "Scripts", "lab")


def lab(*args, check=True, input=None, timeout=60):
    result = subprocess.run([LAB, *args], capture_output=True, text=True, input=input, timeout=timeout)
    if check and result.returncode != 0:
        raise AssertionError(f"lab {' '.join(args)} exited {result.returncode}\n{result.stdout}\n{result.stderr}")
    return result


def peer(host, *args, check=True):
    return lab("peer", host, *args, check=check)


def peer_json(host, *args):
    return json.loads(peer(host, *args, "--json").stdout)


def publish_by_descriptor(host, activity_type, title, user_info):
    """Publishes through `handoff-peer publish`, which passes the activity as a sealed memfd:
    a request line is at most 1 MiB, so a large userInfo cannot go inline as JSON."""
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(user_info, f)
        f.flush()
        return peer_json(host, "publish", "--type", activity_type, "--title", title, "--user-info-file", f.name)


def wait_until(what, condition, timeout=10.0, interval=0.05):
    """Polls `condition` until it returns something truthy; fails with `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def offer_of(host, name):
    """The offer `host` lists for the peer called `name`, or None."""
    for entry in peer_json(host, "list"):
        if entry["name"] == name and entry["offer"]:
            return entry["offer"]
    return None


def listed(host, name):
    return any(entry["name"] == name for entry in peer_json(host, "list"))


def drops(host):
    return peer_json(host, "status")["drops"]


def require_root():
    if os.geteuid() != 0:
        raise SystemExit("The integration tests create network namespaces and need root: run them through Scripts/test as root.")


def addresses_of(host):
    """`--from ADDRESS` for each IPv4 and IPv6 address of `host`'s eth0 (labpacket capture)."""
    args = []
    for line in lab("exec", host, "ip", "-o", "addr", "show", "eth0").stdout.splitlines():
        fields = line.split()
        args += ["--from", fields[3].split("/")[0]]
    return args


def start_xvfb(size="1024x700x24"):
    """An X server on a display number it picks itself (-displayfd), so tests never race for
    one; returns (process, ":N"). The caller stops it by its pid."""
    import subprocess
    read_end, write_end = os.pipe()
    process = subprocess.Popen(["Xvfb", "-displayfd", str(write_end), "-screen", "0", size, "-nolisten", "tcp"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=(write_end,))
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        number = pipe.readline().strip()
    if not number:
        process.kill()
        process.wait()
        raise AssertionError("Xvfb did not start (no display number on -displayfd)")
    return process, f":{number}"


def install_missing(packages):
    """Debian packages for the tools a test drives ({tool: package}); Scripts/test installs them
    first, so this does something only when a test runs alone on a fresh machine."""
    import shutil
    import subprocess
    missing = sorted({package for tool, package in packages.items() if not shutil.which(tool)})
    if missing:
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
        subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing], check=True, env=env)


def ours(pid):
    """Whether `pid` is still a process this test started: its child (Xvfb, dbus-daemon, dunst), or
    one started in this run's lab (HANDOFF_LAB_DIR in its environment, as `lab exec` gives it). A
    pid that ended may since name another group's process: it is never signalled."""
    try:
        with open(f"/proc/{pid}/stat") as file:
            parent = int(file.read().rsplit(")", 1)[1].split()[1])
        if parent == os.getpid():
            return True
        with open(f"/proc/{pid}/environ", "rb") as file:
            environment = file.read().split(b"\0")
    except (FileNotFoundError, ProcessLookupError, PermissionError, ValueError, IndexError):
        return False
    lab_dir = os.path.realpath(os.environ.get("HANDOFF_LAB_DIR", "/tmp/handoff-lab")).encode()
    return any(entry.startswith(b"HANDOFF_SOCKET=" + lab_dir + b"/") for entry in environment)


def stop_pid(pid):
    """Stops one process a test started, by its id: TERM, then KILL after 5 s; never one that is
    no longer ours (its pid reused by another group's process, with groups side by side)."""
    import signal
    if not ours(pid):
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    for _ in range(50):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


# A session bus that starts no service on demand: with the distribution's session
# configuration, the first call to org.freedesktop.Notifications (the agent's, or
# `dunstctl debug` waiting for the test's dunst) can make dbus-daemon start
# another dunst, without the test's configuration, which then owns the name.
SESSION_BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <keep_umask/>
  <listen>unix:tmpdir=/tmp</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""


def session_bus_without_activation(directory):
    """The argv of a session dbus-daemon listening at DIRECTORY/bus that activates no service."""
    config = os.path.join(directory, "session-bus.conf")
    with open(config, "w") as handle:
        handle.write(SESSION_BUS_CONFIG)
    return ["dbus-daemon", f"--config-file={config}", "--nofork", f"--address=unix:path={directory}/bus"]
