#!/usr/bin/env python3
"""What an unpaired host on the link tries against a handoffd, run inside a
lab host (Scripts/lab exec HOST python3 labattack.py ...). Only lab addresses:
the peer's link-local address and the lab's multicast group.

  probe HOST PORT OUT      open the transfer port and try every first move a
                           stranger has: a fetch hello with a made-up hint, a
                           pairing hello, an old-version hello, garbage, an
                           empty connection; write everything received to OUT
  datagrams HOST PORT OUT  send clear, sealed-looking and garbage datagrams by
                           multicast and to HOST:PORT/udp; write any answer to OUT
  beacons COUNT NAME SECS  multicast COUNT pairing beacons named NAME, each signed
                           by a key of its own, again every 0.3 s for SECS seconds
                           (needs the `cryptography` package: run with HANDOFF_VENV's python)
"""
import argparse
import os
import socket
import struct
import sys
import time

GROUP = "224.0.0.199"
MULTICAST_PORT = 47180
IFACE = "eth0"


def frame(kind, body):
    return bytes([2, kind]) + struct.pack(">I", len(body)) + body


def exchange(host, port, data, timeout=3.0):
    """Connects, sends `data`, reads until the peer closes or goes quiet."""
    received = b""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        if data:
            sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        try:
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                received += chunk
        except (socket.timeout, ConnectionResetError):
            pass
    return received


def probe(host, port, out):
    moves = {
        "fetch hello, made-up hint": frame(5, bytes([3, 1]) + os.urandom(32) + os.urandom(16)),
        "pairing hello": frame(5, bytes([3, 2]) + os.urandom(32) + bytes(16)),
        "version-2 hello": frame(5, bytes([2, 1]) + os.urandom(32)),
        "fetch hello then a made-up clientAuth": frame(5, bytes([3, 1]) + os.urandom(32) + os.urandom(16))
                                                 + frame(7, os.urandom(112)),
        "garbage": os.urandom(100),
        "nothing": b"",
    }
    with open(out, "wb") as f:
        for name, data in moves.items():
            answer = exchange(host, port, data)
            print(f"{name}: {len(answer)} bytes back", file=sys.stderr)
            f.write(answer)


def datagrams(host, port, out):
    key = os.urandom(32)
    clear = b"HNDF" + bytes([1, 1]) + key + struct.pack(">QQHH", 1, int(time.time() * 1000), 47181, 15) + b"\0\0\0\0" + bytes(64)
    sealed = b"HNDF" + bytes([2, 1]) + os.urandom(8) + os.urandom(24) + os.urandom(120)
    sends = [clear, sealed, os.urandom(200), b"HNDF", b""]
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
    mreqn = socket.inet_aton("0.0.0.0") + socket.inet_aton("0.0.0.0") + struct.pack("@i", socket.if_nametoindex(IFACE))
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, mreqn)
    for data in sends:
        sock.sendto(data, (GROUP, MULTICAST_PORT))
        sock.sendto(data, (host, port))
    sock.settimeout(2.0)
    received = b""
    try:
        while True:
            received += sock.recvfrom(4096)[0]
    except socket.timeout:
        pass
    with open(out, "wb") as f:
        f.write(received)


def beacons(count, name, seconds):
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives import serialization as ser
    keys = [Ed25519PrivateKey.generate() for _ in range(count)]
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
    mreqn = socket.inet_aton("0.0.0.0") + socket.inet_aton("0.0.0.0") + struct.pack("@i", socket.if_nametoindex(IFACE))
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, mreqn)
    encoded = name.encode()
    sequence = int(time.time() * 1000)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for key in keys:
            sequence += 1
            public = key.public_key().public_bytes(ser.Encoding.Raw, ser.PublicFormat.Raw)
            body = (b"HNDF" + bytes([1, 3]) + public + struct.pack(">QQHH", sequence, int(time.time() * 1000), 47181, 15)
                    + b"\0" + bytes([len(encoded)]) + encoded + b"\0\0")
            sock.sendto(body + key.sign(b"handoff/announce/v1" + body), (GROUP, MULTICAST_PORT))
        time.sleep(0.3)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("probe")
    p.add_argument("host")
    p.add_argument("port", type=int)
    p.add_argument("out")
    d = sub.add_parser("datagrams")
    d.add_argument("host")
    d.add_argument("port", type=int)
    d.add_argument("out")
    b = sub.add_parser("beacons")
    b.add_argument("count", type=int)
    b.add_argument("name")
    b.add_argument("seconds", type=float)
    args = parser.parse_args()
    if args.command == "probe":
        probe(args.host, args.port, args.out)
    elif args.command == "datagrams":
        datagrams(args.host, args.port, args.out)
    else:
        beacons(args.count, args.name, args.seconds)


if __name__ == "__main__":
    main()
