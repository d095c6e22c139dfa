#!/usr/bin/env python3
"""Capture and inject handoff announcements inside a lab host.

Run inside a lab host (Scripts/lab exec HOST python3 labpacket.py ...); it
uses only the lab's link-local multicast group, never another address.

  capture OUT [--from HOST]... [--timeout S] save the next announcement datagram
                                            arriving at this host, multicast or unicast
                                            (a raw packet socket: a paired host's
                                            announcements at rest are unicast)
  send IN [--mutate KIND]                   multicast a saved datagram, changed by KIND:
      none            exactly as captured (a replay)
      flip-tag        last byte (the authentication tag) flipped (a forgery)
      flip-middle     a byte in the middle flipped (a tampered summary)
      truncate        the last 64 bytes removed
      clear-v1        replaced by an unsealed version-1 "present" announcement
      garbage         random bytes (malformed)
"""
import argparse
import os
import socket
import struct
import sys
import time

GROUP = "224.0.0.199"
PORT = 47180
UNICAST_PORT = 47181
IFACE = "eth0"


def ifindex(name):
    return socket.if_nametoindex(name)


def capture(out, sources, timeout):
    # Every IP packet eth0 receives, as an eavesdropper on a shared medium would see it.
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(0x0003))
    sock.bind((IFACE, 0x0003))
    sock.settimeout(timeout)
    while True:
        packet, address = sock.recvfrom(65535)
        if address[2] == socket.PACKET_OUTGOING:
            continue
        if address[1] == 0x0800 and len(packet) >= 28 and packet[9] == socket.IPPROTO_UDP:
            header, host = (packet[0] & 0x0F) * 4, socket.inet_ntoa(packet[12:16])
        elif address[1] == 0x86DD and len(packet) >= 48 and packet[6] == socket.IPPROTO_UDP:
            header, host = 40, socket.inet_ntop(socket.AF_INET6, packet[8:24])
        else:
            continue
        dport = struct.unpack(">H", packet[header + 2:header + 4])[0]
        data = packet[header + 8:]
        if dport not in (PORT, UNICAST_PORT) or data[:4] != b"HNDF" or (sources and host not in sources):
            continue
        with open(out, "wb") as f:
            f.write(data)
        return


def send(path, mutate):
    with open(path, "rb") as f:
        data = bytearray(f.read())
    if mutate == "flip-tag":
        data[-1] ^= 0x01
    elif mutate == "flip-middle":
        data[len(data) // 2] ^= 0x20
    elif mutate == "truncate":
        data = data[:-64]
    elif mutate == "clear-v1":
        # magic, version 1, kind present, key, sequence, timestamp, port, ttl, state, empty name, no summary, signature
        body = b"HNDF" + bytes([1, 1]) + bytes(32) + struct.pack(">QQHH", 1, int(time.time() * 1000), 47181, 15) + b"\x00" + b"\x00" + b"\x00\x00"
        data = bytearray(body + bytes(64))
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
    c.add_argument("--from", dest="sources", action="append", help="a sender address (IPv4, or IPv6 without zone); repeatable")
    c.add_argument("--timeout", type=float, default=10)
    s = sub.add_parser("send")
    s.add_argument("file")
    s.add_argument("--mutate", default="none",
                   choices=["none", "flip-tag", "flip-middle", "truncate", "clear-v1", "garbage"])
    args = parser.parse_args()
    if args.command == "capture":
        capture(args.out, args.sources, args.timeout)
    else:
        send(args.file, args.mutate)


if __name__ == "__main__":
    sys.exit(main())
