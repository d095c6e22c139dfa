import HandoffCore
import HandoffCrypto

/// Targets that need keys. The keys are the fixed ones of the test vectors
/// (Docs/PROTOCOL.md, "Test vectors"), so the seed inputs decrypt and verify
/// and mutations of them reach the code behind each check.
enum CryptoTargets {
    static func bytes(_ hex: String) -> [UInt8] { Hex.decode(hex)! }

    /// A and B of the vectors (RFC 8032 test keys 1 and 2).
    static let a = try! Identity(seed: bytes("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"))
    static let b = try! Identity(seed: bytes("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb"))
    static let pairKey = bytes("7b2bfa0c758a3a86d37d01e7867045f83125b11c859cdfac5d2d9df571789f30")
    /// RFC 7748's Alice (the client's ephemeral) and Bob (the server's).
    static let alice = bytes("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a")
    static let bob = bytes("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb")
    static let hello = bytes("0201" + "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a")

    static func sealedAnnouncement(_ input: [UInt8]) {
        guard let sealed = try? SealedAnnouncement(decoding: input),
              let inner = AnnouncementSeal.open(sealed, pairKey: pairKey) else { return }
        guard let received = try? ReceivedAnnouncement(decoding: inner) else { return }
        _ = received.verify(with: Ed25519())
    }

    static func handshakeHello(_ input: [UInt8]) {
        let server = Handshake.Server(identity: a, ephemeral: EphemeralKey(secret: bob))
        _ = try? server.receive(hello: input)
    }

    static func handshakeServerHello(_ input: [UInt8]) {
        let client = Handshake.Client(identity: b, purpose: .fetch, ephemeral: EphemeralKey(secret: alice))
        _ = try? client.receive(serverHello: input)
    }

    static func handshakeClientAuth(_ input: [UInt8]) {
        let server = Handshake.Server(identity: a, ephemeral: EphemeralKey(secret: bob))
        guard (try? server.receive(hello: hello)) != nil else { Targets.check(false, "the vector hello is accepted"); return }
        _ = try? server.receive(clientAuth: input)
    }

    /// The daemon's whole path for one datagram from the network, trusting A.
    static func datagram(_ input: [UInt8]) {
        var table = PeerTable(ownKey: b.publicKey, fingerprint: Ed25519.deviceID(of:))
        let trusted = a.publicKey
        _ = table.receive(datagram: input, fromHost: "192.0.2.1", nowMillis: 1_700_000_000_000, verifier: Ed25519(),
                          isTrusted: { $0 == trusted })
        _ = table.expire(nowMillis: 1_700_000_100_000)
    }
}
