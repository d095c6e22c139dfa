#!/usr/bin/env python3
"""The handshake vectors of Docs/PROTOCOL.md ("Handshake", "Records"), computed
independently of the Swift code from the layouts there: hashlib's BLAKE2b,
`cryptography`'s X25519, Ed25519, ChaCha20-Poly1305 and AES-GCM, with
HChaCha20 written out for XChaCha20-Poly1305 (draft-irtf-cfrg-xchacha-03).
Prints version 3 (which it checks against the recorded vector) and version 5.

    python3 -m venv .venv && .venv/bin/pip install cryptography
    .venv/bin/python Tests/Vectors/handshake.py
"""
import hashlib
import struct
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305
from cryptography.hazmat.primitives import serialization

RAW = serialization.Encoding.Raw, serialization.PublicFormat.Raw


def b2(data, key=b"", size=32):
    return hashlib.blake2b(data, key=key, digest_size=size).digest()


def rotl(v, c):
    return ((v << c) & 0xFFFFFFFF) | (v >> (32 - c))


def hchacha20(key, nonce16):
    state = [0x61707865, 0x3320646E, 0x79622D32, 0x6B206574] + list(struct.unpack("<8I", key)) + list(struct.unpack("<4I", nonce16))

    def quarter(a, b, c, d):
        state[a] = (state[a] + state[b]) & 0xFFFFFFFF; state[d] = rotl(state[d] ^ state[a], 16)
        state[c] = (state[c] + state[d]) & 0xFFFFFFFF; state[b] = rotl(state[b] ^ state[c], 12)
        state[a] = (state[a] + state[b]) & 0xFFFFFFFF; state[d] = rotl(state[d] ^ state[a], 8)
        state[c] = (state[c] + state[d]) & 0xFFFFFFFF; state[b] = rotl(state[b] ^ state[c], 7)

    for _ in range(10):
        quarter(0, 4, 8, 12); quarter(1, 5, 9, 13); quarter(2, 6, 10, 14); quarter(3, 7, 11, 15)
        quarter(0, 5, 10, 15); quarter(1, 6, 11, 12); quarter(2, 7, 8, 13); quarter(3, 4, 9, 14)
    return struct.pack("<8I", *(state[0:4] + state[12:16]))


def xchacha_seal(key, nonce24, plaintext, ad):
    return ChaCha20Poly1305(hchacha20(key, nonce24[:16])).encrypt(b"\0" * 4 + nonce24[16:], plaintext, ad)


def hx(data):
    return data.hex()


SEED_A = bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
SEED_B = bytes.fromhex("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb")
ALICE = bytes.fromhex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a")
BOB = bytes.fromhex("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb")
HINT_KEY = bytes.fromhex("d17e6e1a5f66fd7929967aff55bbf21f401ae3bb147374b90866a93f26af7e92")
PSK = bytes.fromhex("7a323ceb0758f0f7658f63c594edeebc6ab5400f81d1b52ab1ddf491c800700e")

a_sign, b_sign = Ed25519PrivateKey.from_private_bytes(SEED_A), Ed25519PrivateKey.from_private_bytes(SEED_B)
a_key, b_key = a_sign.public_key().public_bytes(*RAW), b_sign.public_key().public_bytes(*RAW)
client_eph, server_eph = X25519PrivateKey.from_private_bytes(ALICE), X25519PrivateKey.from_private_bytes(BOB)
client_pub, server_pub = client_eph.public_key().public_bytes(*RAW), server_eph.public_key().public_bytes(*RAW)
shared = client_eph.exchange(server_eph.public_key())


def handshake(version, offered=None, chosen=None):
    purpose = 1
    hint = b2(b"handoff/hs-hint/v3" + bytes([purpose]) + client_pub, key=HINT_KEY, size=16)
    hello = bytes([version, purpose]) + (bytes([offered]) if version == 5 else b"") + client_pub + hint
    secret = b2(b"handoff/hs-secret/v3", key=shared + PSK)
    h1 = b2(b"handoff/handshake/v3" + hello + server_pub)
    handshake_key = b2(b"handoff/hs-key/v3" + h1, key=secret)
    trailer = bytes([chosen]) if version == 5 else b""
    server_signature = a_sign.sign(b"handoff/handshake-server/v3" + h1 + trailer)
    sealed = xchacha_seal(handshake_key, b"\0" * 23 + b"\1", a_key + server_signature + trailer, server_pub)
    server_hello = server_pub + sealed
    h2 = b2(h1 + sealed)
    client_auth = xchacha_seal(handshake_key, b"\0" * 23 + b"\2", b_key + b_sign.sign(b"handoff/handshake-client/v3" + h2), b"")
    h3 = b2(h2 + client_auth)
    return {
        "hello": hello, "secret": secret, "h1": h1, "handshake key": handshake_key, "serverHello": server_hello,
        "clientAuth": client_auth, "h3": h3,
        "c2s": b2(b"handoff/c2s/v3" + h3, key=secret), "s2c": b2(b"handoff/s2c/v3" + h3, key=secret),
        "exporter": b2(b"handoff/exporter/v3" + h3, key=secret),
    }


v3 = handshake(3)
assert hx(v3["serverHello"]).endswith("e85cb52a26eaaf8d0934a25de4387848"), "version 3 no longer reproduces"
assert hx(v3["c2s"]) == "7304a3f7ada15a6ef8785866a0f631dfdc40ee225fe0ac7d6e8136bafaa5daac"
print("version 3 reproduces the recorded vector")

v5 = handshake(5, offered=0x03, chosen=0x02)
for name, value in v5.items():
    print(f"v5 {name} ({len(value)}): {hx(value)}")

# AES-256-GCM records, client -> server, under the version 5 session's c2s key and a fixed header.
header = bytes(range(24))
record_key = b2(b"handoff/aes-records/v5" + header, key=v5["c2s"])
print(f"aes record key: {hx(record_key)}")
for counter, (tag, plaintext) in enumerate([(0, b"first record"), (1, b"")]):
    nonce = b"\0" * 4 + struct.pack(">Q", counter)
    print(f"aes record {counter} (tag {tag}, {plaintext!r}): {hx(bytes([tag]) + AESGCM(record_key).encrypt(nonce, plaintext, bytes([tag])))}")
