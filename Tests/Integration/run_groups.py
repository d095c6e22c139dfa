"""Runs the lab integration tests as three groups side by side (Scripts/test), each
with a lab of its own: its namespaces are named HANDOFF_LAB_PREFIX (hla-,
hlb-, hlc-) and its state lives in HANDOFF_LAB_DIR, so no group's `lab down`
touches another's. The tests mostly wait on daemons, timers and browsers, so
three groups on two cores take well under half the time of one. Within a group the
files run one after the other; a file's output is printed whole when it ends,
with how long it took. Exit status 1 when any file failed.

Tests that change the machine itself (the Debian package installed and
purged, Scripts/install under a real user manager) are in one group, never
beside each other.

  python3 Tests/Integration/run_groups.py            every test_*.py
  python3 Tests/Integration/run_groups.py --serial   one group (the old way)"""
import glob
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
LAB = os.path.join(REPO, "Scripts", "lab")

# Seconds each file took in CI on a 2-core machine, three groups (2026-12-02, third session), to balance them; a
# file not listed counts 60 s. The machine-changing ones are pinned to group 1.
MEASURED = {
    "test_attacks": 285, "test_conditions": 205, "test_package": 183, "test_browser": 86, "test_notify": 95, "test_resume": 59,
    "test_apps": 40, "test_security": 33, "test_mdns": 30, "test_documents": 23, "test_install": 30, "test_attack_identity": 15,
    "test_network_changes": 14, "test_two_hosts": 12, "test_local_api": 12, "test_bluetooth": 7, "test_app_declarations": 5,
    "test_hardware_scripts": 4, "test_streams": 3, "test_ble_lab_model": 1, "test_vm_bluetooth": 1,
}
PINNED_TO_FIRST = {"test_package", "test_install"}


def groups(files, count):
    """Pinned files on group 0 first; then longest first, each onto the group with the least time so far."""
    names = sorted(files, key=lambda f: (os.path.basename(f)[:-3] not in PINNED_TO_FIRST, -MEASURED.get(os.path.basename(f)[:-3], 60)))
    load = [0.0] * count
    result = [[] for _ in range(count)]
    for path in names:
        name = os.path.basename(path)[:-3]
        index = 0 if name in PINNED_TO_FIRST else min(range(count), key=lambda i: load[i])
        result[index].append(path)
        load[index] += MEASURED.get(name, 60)
    return result


def run_group(index, files, outcomes, print_lock):
    env = dict(os.environ, HANDOFF_LAB_PREFIX="hl" + "abcdefgh"[index], HANDOFF_LAB_DIR=f"/tmp/handoff-lab-{index + 1}")
    for path in files:
        name = os.path.basename(path)[:-3]
        started = time.monotonic()
        result = subprocess.run([sys.executable, "-m", "unittest", "-v", path], cwd=REPO, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        took = time.monotonic() - started
        outcomes.append((name, result.returncode == 0, took))
        with print_lock:
            print(f"---- {name} (group {index + 1}): {'ok' if result.returncode == 0 else 'FAILED'} in {took:.0f} s", flush=True)
            print(result.stdout, flush=True)
    # Whatever a test left behind in this group's lab goes with it.
    subprocess.run([LAB, "down"], env=env, capture_output=True)


def main():
    files = sorted(glob.glob(os.path.join(HERE, "test_*.py")))
    count = 1 if "--serial" in sys.argv else 3
    outcomes, print_lock, threads = [], threading.Lock(), []
    started = time.monotonic()
    for index, group in enumerate(groups(files, count)):
        print(f"group {index + 1}: {' '.join(os.path.basename(f)[:-3] for f in group)}", flush=True)
        thread = threading.Thread(target=run_group, args=(index, group, outcomes, print_lock))
        thread.start()
        threads.append(thread)
    for thread in threads:
        thread.join()
    print(f"integration: {len(outcomes)} files in {time.monotonic() - started:.0f} s; by time:")
    for name, ok, took in sorted(outcomes, key=lambda o: -o[2]):
        print(f"  {took:6.0f} s  {'ok    ' if ok else 'FAILED'}  {name}")
    failed = [name for name, ok, _ in outcomes if not ok]
    if failed:
        print(f"integration: failed: {' '.join(failed)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
