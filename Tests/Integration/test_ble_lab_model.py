"""The emulated BT 5.x controller (Scripts/ble-lab.py --model bt5) refuses the
legacy LE commands with Command Disallowed (0x0C) once a host has used an
extended one, until Reset, as the Core specification requires (Vol 4, Part E,
3.1.1) and Intel AX200-class chips do. Raw H4 over the controller's socket; no
namespaces, no root."""
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV = os.environ.get("HANDOFF_VENV", os.path.join(REPO, ".venv"))
PYTHON = os.path.join(VENV, "bin", "python")

RESET = 0x0C03
LE_SET_SCAN_PARAMETERS = 0x200B
LE_SET_SCAN_ENABLE = 0x200C
LE_CREATE_CONNECTION = 0x200D
LE_SET_EXTENDED_SCAN_PARAMETERS = 0x2041
COMMAND_COMPLETE, COMMAND_STATUS = 0x0E, 0x0F
SUCCESS, UNKNOWN_COMMAND, COMMAND_DISALLOWED = 0x00, 0x01, 0x0C

SCAN_PARAMETERS = bytes([0x00, 0x10, 0x00, 0x10, 0x00, 0x00, 0x00])  # passive, 10 ms / 10 ms, public, accept all
EXTENDED_SCAN_PARAMETERS = bytes([0x00, 0x00, 0x01, 0x00, 0x10, 0x00, 0x10, 0x00])  # public, accept all, LE 1M passive
CREATE_CONNECTION = struct.pack("<HHBB6sBHHHHHH", 0x10, 0x10, 0, 0, bytes(6), 0, 24, 40, 0, 400, 0, 0)


class Controller:
    """One H4 client of an emulated controller."""

    def __init__(self, path):
        self.socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.socket.settimeout(10)
        self.socket.connect(path)
        self.buffer = b""

    def close(self):
        self.socket.close()

    def _read(self, count):
        while len(self.buffer) < count:
            chunk = self.socket.recv(4096)
            if not chunk:
                raise AssertionError("the controller closed the connection")
            self.buffer += chunk
        data, self.buffer = self.buffer[:count], self.buffer[count:]
        return data

    def command(self, opcode, parameters=b""):
        """Sends a command; (event code, status) of its Command Complete or Command Status."""
        self.socket.sendall(bytes([0x01]) + struct.pack("<HB", opcode, len(parameters)) + parameters)
        while True:
            kind = self._read(1)[0]
            if kind == 0x04:
                code, length = self._read(2)
                body = self._read(length)
                if code == COMMAND_COMPLETE and struct.unpack_from("<H", body, 1)[0] == opcode:
                    return code, body[3]
                if code == COMMAND_STATUS and struct.unpack_from("<H", body, 2)[0] == opcode:
                    return code, body[0]
            elif kind == 0x02:  # ACL: header then data
                length = struct.unpack("<HH", self._read(4))[1]
                self._read(length)
            else:
                raise AssertionError(f"unexpected H4 packet type {kind}")


class BT5Model(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.exists(PYTHON):
            raise unittest.SkipTest(f"no Python venv with Bumble at {VENV} (Scripts/setup)")
        cls.directory = tempfile.TemporaryDirectory(prefix="handoff-ble-model-")
        cls.lab = subprocess.Popen([PYTHON, os.path.join(REPO, "Scripts", "ble-lab.py"), "--dir", cls.directory.name,
                                    "--model", "bt5", "laptop"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        deadline = time.monotonic() + 60
        while cls.lab.stdout.readline().strip() != "ready":
            if cls.lab.poll() is not None or time.monotonic() > deadline:
                cls.tearDownClass()
                raise AssertionError("ble-lab did not start")

    @classmethod
    def tearDownClass(cls):
        cls.lab.terminate()
        cls.lab.wait(timeout=10)
        cls.lab.stdout.close()
        cls.directory.cleanup()

    def setUp(self):
        self.controller = Controller(os.path.join(self.directory.name, "laptop.hci"))
        self.assertEqual(self.controller.command(RESET), (COMMAND_COMPLETE, SUCCESS))

    def tearDown(self):
        self.controller.close()

    def test_legacy_commands_work_until_an_extended_one(self):
        self.assertEqual(self.controller.command(LE_SET_SCAN_PARAMETERS, SCAN_PARAMETERS), (COMMAND_COMPLETE, SUCCESS))
        self.assertEqual(self.controller.command(LE_SET_EXTENDED_SCAN_PARAMETERS, EXTENDED_SCAN_PARAMETERS), (COMMAND_COMPLETE, SUCCESS))
        self.assertEqual(self.controller.command(LE_SET_SCAN_PARAMETERS, SCAN_PARAMETERS), (COMMAND_COMPLETE, COMMAND_DISALLOWED))
        self.assertEqual(self.controller.command(LE_SET_SCAN_ENABLE, bytes([1, 0])), (COMMAND_COMPLETE, COMMAND_DISALLOWED))
        # LE Create Connection is answered with Command Status, as on a real controller.
        self.assertEqual(self.controller.command(LE_CREATE_CONNECTION, CREATE_CONNECTION), (COMMAND_STATUS, COMMAND_DISALLOWED))

    def test_reset_allows_legacy_commands_again(self):
        self.controller.command(LE_SET_EXTENDED_SCAN_PARAMETERS, EXTENDED_SCAN_PARAMETERS)
        self.assertEqual(self.controller.command(LE_SET_SCAN_PARAMETERS, SCAN_PARAMETERS), (COMMAND_COMPLETE, COMMAND_DISALLOWED))
        self.assertEqual(self.controller.command(RESET), (COMMAND_COMPLETE, SUCCESS))
        self.assertEqual(self.controller.command(LE_SET_SCAN_PARAMETERS, SCAN_PARAMETERS), (COMMAND_COMPLETE, SUCCESS))


if __name__ == "__main__":
    unittest.main(verbosity=2)
