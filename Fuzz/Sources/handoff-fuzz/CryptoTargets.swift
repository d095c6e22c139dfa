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
    /// The pair key of A and B ("Pair key") and the secrets the handshake derives from it.
    static let secrets = PairSecrets(pairKey: bytes("386a8e16359b2d81831785ca3f74af405039f64c6592f7426713c830271cba6c"))
    /// K(1888888) of the seal chain vector, the period of the sealed-announcement vector.
    static let periodKey = bytes("2f01f380358a54d50d8dc4cab55bfb39675bb849e63ff63bff80719f26c1a821")
    /// RFC 7748's Alice (the client's ephemeral) and Bob (the server's).
    static let alice = bytes("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a")
    static let bob = bytes("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb")
    /// The version 5 handshake vector's hello: B fetching from A, offering both record ciphers.
    static let hello = bytes("050103" + "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"
        + "6f4cf4b66a9ee6131bf8f2488cd808dc")
    static let bothCiphers: RecordCiphers = [.xchacha20poly1305, .aes256gcm]
    /// The version 5 vector's client-to-server key, and the AES records' header there.
    static let clientToServer = bytes("84c987f3d6f96db13c8803020cbd1465b61c1f9edb18edf67120868133dc6d55")
    static let recordHeader = Array(UInt8(0)..<UInt8(24))

    /// A sealed datagram from A to B, opened as B opens it: with the period key of the pair, for sender A.
    static func sealedAnnouncement(_ input: [UInt8]) {
        guard let sealed = try? SealedAnnouncement(decoding: input),
              let inner = AnnouncementSeal.open(sealed, periodKey: periodKey, sender: a.publicKey) else { return }
        guard let received = try? ReceivedAnnouncement(decoding: inner) else { return }
        _ = received.verify(with: Ed25519())
    }

    /// The hello parser alone: what it accepts is exactly its fields, in order.
    static func handshakeHelloParse(_ input: [UInt8]) {
        guard let parsed = try? Handshake.Hello(input) else { return }
        let offered = parsed.version == Handshake.version ? [parsed.offered.rawValue] : []
        check([parsed.version, parsed.purpose.rawValue] + offered + parsed.ephemeral + parsed.hint == input,
              "a parsed hello is its fields")
        _ = parsed.isFrom(secrets)
    }

    /// A server (A) answering a hello as the daemon does: the pair's PSK when the hint names B, else the open one.
    static func handshakeHello(_ input: [UInt8]) {
        guard let parsed = try? Handshake.Hello(input) else { return }
        let server = Handshake.Server(identity: a, ephemeral: EphemeralKey(secret: bob), supporting: bothCiphers)
        if parsed.isFrom(secrets) {
            _ = try? server.answer(parsed, psk: secrets.handshakePSK, expectedClient: b.publicKey)
        } else if parsed.purpose == .pair {
            _ = try? server.answer(parsed, psk: Handshake.openPSK, expectedClient: nil)
        }
    }

    static func handshakeServerHello(_ input: [UInt8]) {
        let client = Handshake.Client(identity: b, purpose: .fetch, secrets: secrets, ephemeral: EphemeralKey(secret: alice), offering: bothCiphers)
        _ = try? client.receive(serverHello: input)
    }

    static func handshakeClientAuth(_ input: [UInt8]) {
        let server = Handshake.Server(identity: a, ephemeral: EphemeralKey(secret: bob), supporting: bothCiphers)
        guard let parsed = try? Handshake.Hello(hello), parsed.isFrom(secrets),
              (try? server.answer(parsed, psk: secrets.handshakePSK, expectedClient: b.publicKey)) != nil else {
            Targets.check(false, "the vector hello is accepted")
            return
        }
        _ = try? server.receive(clientAuth: input)
    }

    /// Records as they arrive after a version 5 handshake (u32 BE length || record, repeated),
    /// opened in order under each cipher with the vector's key and header, as SecureChannel does.
    static func records(_ input: [UInt8]) {
        var ciphers: [RecordCipher] = [.xchacha20poly1305]
        if RecordCiphers.available.contains(.aes256gcm) { ciphers.append(.aes256gcm) }
        for cipher in ciphers {
            guard let receiver = RecordStream.receiver(cipher, key: clientToServer, header: recordHeader) else { return }
            var rest = input[...]
            while rest.count >= 4 {
                let length = rest.prefix(4).reduce(0) { $0 << 8 | Int($1) }
                rest = rest.dropFirst(4)
                guard length >= RecordStream.overheadBytes, length <= rest.count else { break }
                guard let opened = receiver.pull(Array(rest.prefix(length))) else { break }
                check(opened.plaintext.count == length - RecordStream.overheadBytes, "a record opens to its length less the overhead")
                rest = rest.dropFirst(length)
            }
        }
    }

    /// The two vetted AES-256-GCM engines against each other (OpenSSL's EVP, the records' engine, and libsodium's):
    /// key (32) || nonce (12) || associated length (1, up to 32) || associated data || the rest.
    /// The rest sealed gives the same bytes from both, and opens in both; the rest taken as a
    /// record (ciphertext || 16-byte tag), as a peer would send it, is refused or opened alike.
    static func aesGCM(_ input: [UInt8]) {
        guard AESGCM.engines.contains(.openssl), input.count >= 45 else { return }
        let key = Array(input[0..<32]), nonce = Array(input[32..<44])
        let associatedEnd = min(45 + Int(input[44]) % 33, input.count)
        let associated = Array(input[45..<associatedEnd]), rest = Array(input[associatedEnd...])
        guard let openssl = AESGCM(key: key, engine: .openssl), let sodium = AESGCM(key: key, engine: .sodium) else { return }
        let ours = seal(openssl, rest, associated: associated, nonce: nonce)
        let theirs = seal(sodium, rest, associated: associated, nonce: nonce)
        check(ours == theirs, "both engines seal the same bytes")
        check(open(openssl, ours, associated: associated, nonce: nonce) == rest, "OpenSSL opens what it sealed")
        check(open(sodium, ours, associated: associated, nonce: nonce) == rest, "libsodium opens what OpenSSL sealed")
        guard rest.count >= AESGCM.tagBytes else { return }
        check(open(openssl, rest, associated: associated, nonce: nonce) == open(sodium, rest, associated: associated, nonce: nonce),
              "both engines refuse or open a received record alike")
    }

    /// Ciphertext || tag.
    private static func seal(_ cipher: AESGCM, _ plaintext: [UInt8], associated: [UInt8], nonce: [UInt8]) -> [UInt8] {
        var sealed = [UInt8](repeating: 0, count: plaintext.count + AESGCM.tagBytes)
        plaintext.withUnsafeBytes { input in
            associated.withUnsafeBytes { associated in
                nonce.withUnsafeBytes { nonce in
                    sealed.withUnsafeMutableBytes { output in
                        cipher.seal(input, associated: associated, nonce: nonce, into: output.baseAddress!,
                                    tag: output.baseAddress! + plaintext.count)
                    }
                }
            }
        }
        return sealed
    }

    /// The plaintext of ciphertext || tag, or nil when refused.
    private static func open(_ cipher: AESGCM, _ sealed: [UInt8], associated: [UInt8], nonce: [UInt8]) -> [UInt8]? {
        let length = sealed.count - AESGCM.tagBytes
        var output = [UInt8](repeating: 0, count: max(length, 1))
        let opened = sealed.withUnsafeBytes { sealed in
            associated.withUnsafeBytes { associated in
                nonce.withUnsafeBytes { nonce in
                    output.withUnsafeMutableBytes {
                        cipher.open(UnsafeRawBufferPointer(rebasing: sealed[..<length]), tag: UnsafeRawBufferPointer(rebasing: sealed[length...]),
                                    associated: associated, nonce: nonce, into: $0.baseAddress!)
                    }
                }
            }
        }
        return opened ? Array(output.prefix(length)) : nil
    }

    /// The daemon's whole path for one datagram from the network, trusting A.
    static func datagram(_ input: [UInt8]) {
        var table = PeerTable(ownKey: b.publicKey, fingerprint: Ed25519.deviceID(of:))
        let trusted = a.publicKey
        _ = table.receive(datagram: input, fromHost: "192.0.2.1", nowMillis: 1_700_000_000_000, verifier: Ed25519(),
                          isTrusted: { $0 == trusted })
        _ = table.expire(nowMillis: 1_700_000_100_000)
    }

    static func check(_ condition: @autoclosure () -> Bool, _ what: String) { Targets.check(condition(), what) }
}
