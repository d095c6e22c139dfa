#!/usr/bin/env python3
"""Attacks on handoffd for the lab's regression tests (issue 15). Runs inside a
lab host (Scripts/lab exec HOST python3 attacker.py ...) and sends only to lab
addresses: the link-local multicast group and hosts given on the command line.
Each subcommand prints one JSON object with what it saw.

  reconnect HOST PORT SECONDS     connect again and again, send a local-API request,
                                  collect every byte the daemon sends back
  bigframe HOST PORT COUNT        COUNT connections each declaring a 64 MiB clear
                                  handshake frame and sending up to 8 MiB of it
  trickle HOST PORT COUNT SECONDS COUNT connections sending one byte per second
  hold HOST PORT SOURCES SECONDS  keep PER_SOURCE (4) idle connections open from each of
                                  SOURCES (comma-separated local addresses), reopening any that
                                  close, at most 80 new connections a second: every slot taken
  beacons SECONDS [UNICAST_HOST]  forged pairing beacons (random keys and signatures)
                                  by multicast (and unicast to UNICAST_HOST) as fast as possible
  stuck SOCKET COUNT SECONDS      COUNT local-API subscribers that never read
  toggle SOCKET COUNT             COUNT disable/enable requests (events for subscribers)
"""
import json
import os
import select
import socket
import struct
import sys
import time

GROUP = "224.0.0.199"
PORT = 47180
UNICAST_PORT = 47181


def connect(host, port, timeout=2.0):
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    sock.connect((host, int(port)))
    return sock


def reconnect(host, port, seconds):
    deadline = time.monotonic() + float(seconds)
    received = bytearray()
    attempts = 0
    while time.monotonic() < deadline:
        attempts += 1
        try:
            sock = connect(host, port, 0.5)
            sock.sendall(b'{"op":"status","id":1}\n{"op":"subscribe","id":2}\n')
            end = time.monotonic() + 0.05
            while time.monotonic() < end:
                ready, _, _ = select.select([sock], [], [], max(0.0, end - time.monotonic()))
                if not ready:
                    break
                chunk = sock.recv(65536)
                if not chunk:
                    break
                received += chunk
            sock.close()
        except OSError:
            time.sleep(0.01)
    return {"attempts": attempts, "bytes": len(received), "sample": received[:200].decode("latin-1")}


def bigframe(host, port, count):
    sockets = []
    sent = []
    for _ in range(int(count)):
        try:
            sock = connect(host, port)
            sock.sendall(bytes([2, 5]) + struct.pack(">I", 64 << 20))
            sockets.append(sock)
            sent.append(6)
        except OSError:
            pass
    chunk = bytes(65536)
    for index, sock in enumerate(sockets):
        sock.settimeout(1.0)
        try:
            while sent[index] < 8 << 20:
                sent[index] += sock.send(chunk)
        except OSError:
            pass
    time.sleep(1)
    for sock in sockets:
        sock.close()
    return {"connections": len(sockets), "maxBytesSent": max(sent) if sent else 0, "totalBytesSent": sum(sent)}


def trickle(host, port, count, seconds):
    sockets = []
    for _ in range(int(count)):
        try:
            sockets.append(connect(host, port))
        except OSError:
            pass
    opened = len(sockets)
    deadline = time.monotonic() + float(seconds)
    while time.monotonic() < deadline:
        alive = []
        for sock in sockets:
            try:
                sock.send(b"\x02")
                alive.append(sock)
            except OSError:
                sock.close()
        sockets = alive
        time.sleep(1)
    # A connection the daemon closed reads as end of stream (or reset).
    still_open = 0
    for sock in sockets:
        sock.setblocking(False)
        try:
            if sock.recv(1) == b"":
                continue
        except BlockingIOError:
            still_open += 1
        except OSError:
            pass
        sock.close()
    return {"opened": opened, "stillOpen": still_open}


def hold(host, port, sources, seconds, rate="80", per_source=4):
    """Idle connections (nothing sent) from many source addresses, reopened as the daemon
    closes them (handshake deadline or eviction), at most `rate` new ones a second: the
    round-two review's slot exhaustion."""
    addresses = sources.split(",")
    held = {address: [] for address in addresses}
    opened = 0
    deadline = time.monotonic() + float(seconds)
    while time.monotonic() < deadline:
        started = time.monotonic()
        for address in addresses:
            alive = []
            for sock in held[address]:
                sock.setblocking(False)
                try:
                    closed = sock.recv(1) == b""
                except BlockingIOError:
                    closed = False
                except OSError:
                    closed = True
                if closed:
                    sock.close()
                else:
                    alive.append(sock)
            while len(alive) < per_source:
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                sock.settimeout(1.0)
                try:
                    sock.bind((address, 0))
                    sock.connect((host, int(port)))
                    alive.append(sock)
                    opened += 1
                except OSError:
                    sock.close()
                    break
                time.sleep(1 / float(rate))
            held[address] = alive
        time.sleep(max(0.0, 0.05 - (time.monotonic() - started)))
    for sockets in held.values():
        for sock in sockets:
            sock.close()
    return {"opened": opened, "perSecond": round(opened / float(seconds), 1)}


def beacons(seconds, unicast_host=None):
    multicast = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    multicast.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
    mreqn = socket.inet_aton("0.0.0.0") + socket.inet_aton("0.0.0.0") + struct.pack("@i", socket.if_nametoindex("eth0"))
    multicast.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, mreqn)
    targets = [(multicast, (GROUP, PORT))]
    if unicast_host:
        # Both of its ports: the multicast group's, and its unicast announcement port (47181/udp).
        unicast = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        targets += [(unicast, (unicast_host, PORT)), (unicast, (unicast_host, UNICAST_PORT))]
    deadline = time.monotonic() + float(seconds)
    sent = 0
    name = b"laptop-b"
    while time.monotonic() < deadline:
        for _ in range(200):
            now = int(time.time() * 1000)
            # magic, version 1, kind pairing, key, sequence, timestamp, port, ttl, state, name, no summary, signature
            body = (b"HNDF" + bytes([1, 3]) + os.urandom(32) + struct.pack(">QQHH", now, now, 47181, 15)
                    + b"\x00" + bytes([len(name)]) + name + b"\x00\x00")
            datagram = body + os.urandom(64)
            for sock, address in targets:
                try:
                    sock.sendto(datagram, address)
                    sent += 1
                except OSError:
                    pass
    return {"sent": sent, "perSecond": round(sent / float(seconds))}


def local(path):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    return sock


def stuck(path, count, seconds):
    sockets = []
    for _ in range(int(count)):
        sock = local(path)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.sendall(b'{"op":"subscribe","id":1}\n')
        sockets.append(sock)
    print(json.dumps({"subscribed": len(sockets)}), flush=True)
    time.sleep(float(seconds))
    return {"held": len(sockets)}


def toggle(path, count):
    sock = local(path)
    reader = sock.makefile("rb")
    for index in range(int(count)):
        op = "disable" if index % 2 == 0 else "enable"
        sock.sendall(json.dumps({"op": op, "id": index}).encode() + b"\n")
        reader.readline()
    sock.sendall(b'{"op":"enable","id":-1}\n')
    reader.readline()
    return {"toggled": int(count)}


def main():
    command, args = sys.argv[1], sys.argv[2:]
    result = {"reconnect": reconnect, "bigframe": bigframe, "trickle": trickle, "hold": hold, "beacons": beacons,
              "stuck": stuck, "toggle": toggle}[command](*args)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
