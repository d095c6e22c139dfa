#!/usr/bin/env python3
"""Capture and inject handoff announcements inside a lab host.

Run inside a lab host (Scripts/lab exec HOST python3 labpacket.py ...); it
uses only the lab's link-local multicast group, never another address.

  capture OUT [--from HOST] [--timeout S]   save the next announcement datagram
  send IN [--mutate KIND]                   multicast a saved datagram, changed by KIND:
      none            exactly as captured (a replay)
      flip-signature  last byte of the signature flipped (a forgery)
      flip-title      a byte in the middle of the body flipped (a tampered summary)
      strip-signature the 64-byte signature removed (unsigned)
      garbage         random bytes (malformed)
"""
import argparse
import os
import socket
import struct
import sys

GROUP = "224.0.0.199"
PORT = 47180
IFACE = "eth0"


def ifindex(name):
    return socket.if_nametoindex(name)


def capture(out, source, timeout):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(("", PORT))
    mreqn = socket.inet_aton(GROUP) + socket.inet_aton("0.0.0.0") + struct.pack("@i", ifindex(IFACE))
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, mreqn)
    sock.settimeout(timeout)
    while True:
        data, (host, _) = sock.recvfrom(2048)
        if source and host != source:
            continue
        if data[:4] == b"HNDF":
            with open(out, "wb") as f:
                f.write(data)
            return


def send(path, mutate):
    with open(path, "rb") as f:
        data = bytearray(f.read())
    if mutate == "flip-signature":
        data[-1] ^= 0x01
    elif mutate == "flip-title":
        data[len(data) // 2] ^= 0x20
    elif mutate == "strip-signature":
        data = data[:-64]
    elif mutate == "garbage":
        data = bytearray(os.urandom(200))
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
    mreqn = socket.inet_aton("0.0.0.0") + socket.inet_aton("0.0.0.0") + struct.pack("@i", ifindex(IFACE))
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, mreqn)
    sock.sendto(bytes(data), (GROUP, PORT))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("capture")
    c.add_argument("out")
    c.add_argument("--from", dest="source")
    c.add_argument("--timeout", type=float, default=10)
    s = sub.add_parser("send")
    s.add_argument("file")
    s.add_argument("--mutate", default="none",
                   choices=["none", "flip-signature", "flip-title", "strip-signature", "garbage"])
    args = parser.parse_args()
    if args.command == "capture":
        capture(args.out, args.source, args.timeout)
    else:
        send(args.file, args.mutate)


if __name__ == "__main__":
    sys.exit(main())
