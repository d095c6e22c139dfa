import HandoffCore
@testable import HandoffCrypto
import Testing

/// The static handshake of Docs/PROTOCOL.md ("Handshake"): B (RFC 8032 test 2) connects to
/// fetch from A (test 1); B's ephemeral secret is RFC 7748 Alice's, A's is Bob's; the PSK and
/// hint key come from the A-B pair key. Computed independently with Python
/// (Tests/Vectors/handshake.py: hashlib, cryptography, HChaCha20 by hand).
/// Version 3, as a host from before version 5 speaks it (still answered).
enum HandshakeVector {
    static let hello = hex("03 01 8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a 6f4cf4b66a9ee6131bf8f2488cd808dc")
    static let serverHello = hex("""
        de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f
        0568a1318bc62268e44749546cc9dc00065b64f54e17b360764d57dd5dfcd4cc
        d05a5113f24076dc634bd5b2822fa76bb68b88d9b4e444763e0084d30b726ce3
        962408f17bd57668f1331449816c99ad40df7565d80ef82ab91fb735e6fbddc8
        e85cb52a26eaaf8d0934a25de4387848
        """)
    static let clientAuth = hex("""
        d81a9e37d404a4bef873894fab49f07984244e0ed890cdbab21a516215b4d73e
        3c1ccc4f32ea472df45122b768597cc2949bd0f8472493dbcbf3ce5968395dd4
        f7e3cb3e90cb702a9e44f4a5df26c4c5160c53a6debc4e0b96ddc0797cab6a6e
        a83b32ff2bfa208578b2444b319e31f9
        """)
    static let transcriptHash = hex("007337d17ad1f89ec84048b28558139f29266b69a1d3fc4a0c678632f9f8b00c")
    static let clientToServer = hex("7304a3f7ada15a6ef8785866a0f631dfdc40ee225fe0ac7d6e8136bafaa5daac")
    static let serverToClient = hex("11ea38af4abbd65356611af09b200d3906af22945ac00a729e1b56c000bd2a35")
    static let exporter = hex("5cb855118a16462c4737795ff3cd0c41cf45e73acc6300dadc754509f2ad9112")
}

/// The same handshake in version 5: B offers both record ciphers (03), A chooses AES-256-GCM (02).
enum HandshakeVector5 {
    static let hello = hex("05 01 03 8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a 6f4cf4b66a9ee6131bf8f2488cd808dc")
    static let serverHello = hex("""
        de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f
        4ad21c8cd84efa9fd4750c521201c9b5c7972a11cca33cd21595d03c7d28d6dc
        f001f00fd57aef5a354c5969039ef84f65cc6a8312fe9323bd10bca44e0e1b1e
        bc42a1408366eac0c44866811917ce3e2d88274014fd7429d429d2e7ea58a684
        69f11b034f67d685520aa2e3266e7dd0f4
        """)
    static let clientAuth = hex("""
        d83191edd8bdf4053915a11ab0597c6e9a4a8e33c111c2e12dc6a8d895d725fe
        49724c2f09cb3460d408d831b682054089695da9fe059ec7f55e8894ad62b799
        e4c21d3bcf83be407293caf75fb23ccf5b33adb579526d1002b2e012ab027884
        4a60a52b16fdf9bf1efebb754790fee4
        """)
    static let transcriptHash = hex("e7e3e6cd0d6dd84aa36496b913aec369f6af350b130cf9d9528a5751b3bd10fa")
    static let clientToServer = hex("84c987f3d6f96db13c8803020cbd1465b61c1f9edb18edf67120868133dc6d55")
    static let serverToClient = hex("4978a10c1662771d864287f9fbdbe305a5a4873e3ec65be7b6e910271adceaae")
    static let exporter = hex("487147cf49388de88f2498d4ebcc823b5018854587a385b809829f66b8ca3736")
    /// Two AES-256-GCM records from B under clientToServer and the header 00 01 .. 17.
    static let recordHeader = Array(UInt8(0)..<UInt8(24))
    static let records: [(tag: UInt8, plaintext: [UInt8], record: [UInt8])] = [
        (0, Array("first record".utf8), hex("00 8d194bfcc95cef7a0f3ca6be c2d33c81bebf3127948a8b4f15ae31bb")),
        (1, [], hex("01 c67e2b559a7e0f121a8c327e1cf58033")),
    ]
}

/// The A-B pair's handshake secrets (`PairSecrets`), from the pair key of the vectors.
let pairSecretsAB = PairSecrets(pairKey: rfcIdentity().pairKey(with: rfcIdentity2().publicKey, agreementKey: rfcIdentity2().agreementKey)!)

extension Handshake.Client {
    /// A fetch or stream under the A-B pair's secrets; pairing with none. `offered` nil: a client from before version 5.
    convenience init(identity: Identity, purpose: Handshake.Purpose, ephemeral: EphemeralKey = EphemeralKey(),
                     offering offered: RecordCiphers? = .available) {
        self.init(identity: identity, purpose: purpose, secrets: purpose.needsPairSecrets ? pairSecretsAB : nil, ephemeral: ephemeral,
                  offered: offered)
    }
}

extension Handshake.Server {
    /// Parses the hello and answers it as a daemon would for the A-B pair: the
    /// PSK of the pair the hint names for a fetch (refused otherwise), the open PSK for pairing.
    func receive(hello bytes: [UInt8]) throws(HandoffError) -> (purpose: Handshake.Purpose, serverHello: [UInt8]) {
        let hello = try Handshake.Hello(bytes)
        switch hello.purpose {
        case .fetch, .stream:
            guard hello.isFrom(pairSecretsAB) else { throw HandoffError(.trust, "not paired", fix: "") }
            return (hello.purpose, try answer(hello, psk: pairSecretsAB.handshakePSK, expectedClient: nil))
        case .pair:
            return (.pair, try answer(hello, psk: Handshake.openPSK, expectedClient: nil))
        }
    }
}

/// Runs a whole handshake; fails the test if either side throws.
private func handshake(client clientIdentity: Identity, server serverIdentity: Identity, purpose: Handshake.Purpose = .fetch)
    throws -> (client: Handshake.Session, server: Handshake.Session, messages: [[UInt8]]) {
    let client = Handshake.Client(identity: clientIdentity, purpose: purpose)
    let server = Handshake.Server(identity: serverIdentity)
    let (seenPurpose, serverHello) = try server.receive(hello: client.hello)
    #expect(seenPurpose == purpose)
    let (clientAuth, clientSession) = try client.receive(serverHello: serverHello)
    let serverSession = try server.receive(clientAuth: clientAuth)
    return (clientSession, serverSession, [client.hello, serverHello, clientAuth])
}

private func expectHandshakeFailure(_ what: String, _ body: () throws(HandoffError) -> Void,
                                    sourceLocation: SourceLocation = #_sourceLocation) {
    let error = #expect(throws: HandoffError.self, "\(what)", sourceLocation: sourceLocation) { try body() }
    #expect(error?.code == .signatureMismatch, "\(what): \(String(describing: error))", sourceLocation: sourceLocation)
}

@Suite struct HandshakeTests {
    let alpha = rfcIdentity()
    let beta = rfcIdentity2()

    @Test func bothSidesLearnTheOtherAndAgreeOnKeys() throws {
        let (client, server, messages) = try handshake(client: beta, server: alpha)
        #expect(client.peerKey == alpha.publicKey)
        #expect(server.peerKey == beta.publicKey)
        #expect(client.sendKey == server.receiveKey)
        #expect(client.receiveKey == server.sendKey)
        #expect(client.sendKey != client.receiveKey)
        #expect(client.sendKey.count == 32 && client.receiveKey.count == 32)
        #expect(client.transcriptHash == server.transcriptHash)
        #expect(client.transcriptHash.count == 32)
        #expect(messages.map(\.count) == [Handshake.helloBytes, Handshake.serverHelloBytes, Handshake.clientAuthBytes])
        #expect(messages.map(\.count) == [51, 145, 112])
        #expect(client.exporterKey == server.exporterKey && client.exporterKey != client.sendKey)
    }

    @Test(arguments: [Handshake.Purpose.fetch, .pair, .stream])
    func purposeIsCarried(_ purpose: Handshake.Purpose) throws {
        let (client, server, messages) = try handshake(client: beta, server: alpha, purpose: purpose)
        #expect(client.purpose == purpose)
        #expect(server.purpose == purpose)
        #expect(messages[0][1] == purpose.rawValue)
        #expect(messages[0][0] == 5)
    }

    // MARK: - The record cipher (version 5)

    /// The server chooses AES-256-GCM only when both sides run it; a host from before
    /// version 5 gets XChaCha20-Poly1305 and the answer it expects.
    @Test func theServerChoosesWhatBothRun() throws {
        let both: RecordCiphers = [.xchacha20poly1305, .aes256gcm], xchacha: RecordCiphers = .xchacha20poly1305
        let cases: [(offered: RecordCiphers, supported: RecordCiphers, expected: RecordCipher)] = [
            (both, both, .aes256gcm), (xchacha, both, .xchacha20poly1305), (both, xchacha, .xchacha20poly1305), (xchacha, xchacha, .xchacha20poly1305),
        ]
        for (offered, supported, expected) in cases {
            let client = Handshake.Client(identity: beta, purpose: .fetch, offering: offered)
            let server = Handshake.Server(identity: alpha, supporting: supported)
            let (_, serverHello) = try server.receive(hello: client.hello)
            let (auth, clientSession) = try client.receive(serverHello: serverHello)
            let serverSession = try server.receive(clientAuth: auth)
            #expect(clientSession.cipher == expected && serverSession.cipher == expected, "\(offered) offered, \(supported) supported")
            #expect(client.hello[2] == offered.rawValue)
        }
    }

    @Test(arguments: [Handshake.Purpose.fetch, .pair, .stream])
    func aClientFromBeforeVersion5IsAnswered(_ purpose: Handshake.Purpose) throws {
        let client = Handshake.Client(identity: beta, purpose: purpose, offering: nil)
        #expect(client.hello.count == Handshake.olderHelloBytes && client.hello[0] == purpose.olderHelloVersion)
        let server = Handshake.Server(identity: alpha, supporting: [.xchacha20poly1305, .aes256gcm])
        let (_, serverHello) = try server.receive(hello: client.hello)
        #expect(serverHello.count == Handshake.olderServerHelloBytes)
        let (auth, clientSession) = try client.receive(serverHello: serverHello)
        let serverSession = try server.receive(clientAuth: auth)
        #expect(clientSession.cipher == .xchacha20poly1305 && serverSession.cipher == .xchacha20poly1305)
        #expect(clientSession.sendKey == serverSession.receiveKey)
    }

    /// Someone on the path who clears the AES bit (to force the other cipher) breaks the
    /// handshake: the server signs the hello it saw.
    @Test func aDowngradeInTransitFails() throws {
        let ephemeral = EphemeralKey()
        let hello = Handshake.Client(identity: beta, purpose: .fetch, ephemeral: ephemeral, offering: [.xchacha20poly1305, .aes256gcm]).hello
        var downgraded = hello
        downgraded[2] = RecordCiphers.xchacha20poly1305.rawValue
        let server = Handshake.Server(identity: alpha, supporting: [.xchacha20poly1305, .aes256gcm])
        let (_, serverHello) = try server.receive(hello: downgraded)
        let client = Handshake.Client(identity: beta, purpose: .fetch, ephemeral: ephemeral, offering: [.xchacha20poly1305, .aes256gcm])
        expectHandshakeFailure("AES bit cleared") { () throws(HandoffError) in _ = try client.receive(serverHello: serverHello) }
    }

    /// Every hello offers XChaCha20-Poly1305, the cipher every host can fall back to; unknown bits are ignored.
    @Test func aHelloWithoutXChaChaIsRefusedAndUnknownBitsAreIgnored() throws {
        var hello = Handshake.Client(identity: beta, purpose: .fetch).hello
        hello[2] = RecordCiphers.aes256gcm.rawValue
        expectHandshakeFailure("AES only") { () throws(HandoffError) in _ = try Handshake.Hello(hello) }
        hello[2] = 0xFF
        #expect(try Handshake.Hello(hello).offered.contains([.xchacha20poly1305, .aes256gcm]))
    }

    @Test func everyHandshakeHasFreshKeys() throws {
        let first = try handshake(client: beta, server: alpha)
        let second = try handshake(client: beta, server: alpha)
        #expect(first.client.sendKey != second.client.sendKey)
        #expect(first.client.transcriptHash != second.client.transcriptHash)
        #expect(first.messages[0] != second.messages[0])
    }

    @Test func aDeviceCanTalkToItself() throws {
        let (client, server, _) = try handshake(client: alpha, server: alpha)
        #expect(client.peerKey == alpha.publicKey && server.peerKey == alpha.publicKey)
        #expect(client.sendKey == server.receiveKey)
    }

    // MARK: - The static vector

    @Test func staticVector() throws {
        let client = Handshake.Client(identity: beta, purpose: .fetch, ephemeral: EphemeralKey(secret: RFC7748.alicePrivate), offering: nil)
        let server = Handshake.Server(identity: alpha, ephemeral: EphemeralKey(secret: RFC7748.bobPrivate))
        #expect(client.hello == HandshakeVector.hello)
        let (purpose, serverHello) = try server.receive(hello: client.hello)
        #expect(purpose == .fetch)
        #expect(serverHello == HandshakeVector.serverHello)
        let (clientAuth, clientSession) = try client.receive(serverHello: serverHello)
        #expect(clientAuth == HandshakeVector.clientAuth)
        let serverSession = try server.receive(clientAuth: clientAuth)
        #expect(clientSession.transcriptHash == HandshakeVector.transcriptHash)
        #expect(serverSession.transcriptHash == HandshakeVector.transcriptHash)
        #expect(clientSession.sendKey == HandshakeVector.clientToServer)
        #expect(clientSession.receiveKey == HandshakeVector.serverToClient)
        #expect(serverSession.sendKey == HandshakeVector.serverToClient)
        #expect(serverSession.receiveKey == HandshakeVector.clientToServer)
        #expect(clientSession.peerKey.bytes == rfcPublicKey)
        #expect(serverSession.peerKey.bytes == rfcPublicKey2)
        #expect(clientSession.exporterKey == HandshakeVector.exporter)
        #expect(serverSession.exporterKey == HandshakeVector.exporter)
    }

    /// The recorded messages are accepted by fresh parties holding the same ephemeral secrets.
    @Test func staticVectorMessagesAreAccepted() throws {
        let client = Handshake.Client(identity: beta, purpose: .fetch, ephemeral: EphemeralKey(secret: RFC7748.alicePrivate), offering: nil)
        let (auth, session) = try client.receive(serverHello: HandshakeVector.serverHello)
        #expect(auth == HandshakeVector.clientAuth)
        #expect(session.peerKey.bytes == rfcPublicKey)
        let server = Handshake.Server(identity: alpha, ephemeral: EphemeralKey(secret: RFC7748.bobPrivate))
        _ = try server.receive(hello: HandshakeVector.hello)
        #expect(try server.receive(clientAuth: HandshakeVector.clientAuth).peerKey.bytes == rfcPublicKey2)
    }

    @Test func staticVectorVersion5() throws {
        let client = Handshake.Client(identity: beta, purpose: .fetch, ephemeral: EphemeralKey(secret: RFC7748.alicePrivate),
                                      offering: [.xchacha20poly1305, .aes256gcm])
        let server = Handshake.Server(identity: alpha, ephemeral: EphemeralKey(secret: RFC7748.bobPrivate),
                                      supporting: [.xchacha20poly1305, .aes256gcm])
        #expect(client.hello == HandshakeVector5.hello)
        let (_, serverHello) = try server.receive(hello: client.hello)
        #expect(serverHello == HandshakeVector5.serverHello)
        let (clientAuth, clientSession) = try client.receive(serverHello: serverHello)
        #expect(clientAuth == HandshakeVector5.clientAuth)
        let serverSession = try server.receive(clientAuth: clientAuth)
        for session in [clientSession, serverSession] {
            #expect(session.cipher == .aes256gcm)
            #expect(session.transcriptHash == HandshakeVector5.transcriptHash)
            #expect(session.exporterKey == HandshakeVector5.exporter)
        }
        #expect(clientSession.sendKey == HandshakeVector5.clientToServer && serverSession.receiveKey == HandshakeVector5.clientToServer)
        #expect(clientSession.receiveKey == HandshakeVector5.serverToClient && serverSession.sendKey == HandshakeVector5.serverToClient)
    }

    @Test(.enabled(if: RecordCiphers.available.contains(.aes256gcm), "AES-256-GCM needs the CPU's AES instructions"))
    func staticVectorAESRecords() throws {
        let receiver = try #require(RecordStream.receiver(.aes256gcm, key: HandshakeVector5.clientToServer, header: HandshakeVector5.recordHeader))
        let sender = RecordStream.aes256gcm(AESGCMStream(key: HandshakeVector5.clientToServer, header: HandshakeVector5.recordHeader))
        for entry in HandshakeVector5.records {
            #expect(sender.push(entry.plaintext, tag: entry.tag) == entry.record)
            let opened = try #require(receiver.pull(entry.record))
            #expect(opened.plaintext == entry.plaintext && opened.tag == entry.tag)
        }
    }

    // MARK: - Tampering

    /// Every bit of the server's answer, flipped in transit, fails at the client.
    /// (That includes the top bit of the ephemeral key, which X25519 ignores: the
    /// transcript covers the bytes as sent.)
    @Test func tamperedServerHelloFails() throws {
        let ephemeral = EphemeralKey()
        let server = Handshake.Server(identity: alpha)
        let hello = Handshake.Client(identity: beta, purpose: .fetch, ephemeral: ephemeral).hello
        let (_, serverHello) = try server.receive(hello: hello)
        for (index, flipped) in singleBitFlips(of: serverHello).enumerated() {
            let client = Handshake.Client(identity: beta, purpose: .fetch, ephemeral: ephemeral)
            expectHandshakeFailure("serverHello bit \(index)") { () throws(HandoffError) in _ = try client.receive(serverHello: flipped) }
        }
        // Untouched, it still works.
        _ = try Handshake.Client(identity: beta, purpose: .fetch, ephemeral: ephemeral).receive(serverHello: serverHello)
    }

    /// A server takes one client authentication: a failed one ends the handshake (and its
    /// secrets are wiped), so each flipped message goes to a server of its own, answering
    /// with the same ephemeral key.
    @Test func tamperedClientAuthFails() throws {
        let client = Handshake.Client(identity: beta, purpose: .fetch)
        let serverEphemeral = EphemeralKey()
        let server = Handshake.Server(identity: alpha, ephemeral: serverEphemeral)
        let (_, serverHello) = try server.receive(hello: client.hello)
        let (clientAuth, _) = try client.receive(serverHello: serverHello)
        for (index, flipped) in singleBitFlips(of: clientAuth).enumerated() {
            let fresh = Handshake.Server(identity: alpha, ephemeral: serverEphemeral)
            _ = try fresh.receive(hello: client.hello)
            expectHandshakeFailure("clientAuth bit \(index)") { () throws(HandoffError) in _ = try fresh.receive(clientAuth: flipped) }
        }
        expectHandshakeFailure("a second authentication") { () throws(HandoffError) in
            let once = Handshake.Server(identity: alpha, ephemeral: serverEphemeral)
            _ = try once.receive(hello: client.hello)
            _ = try? once.receive(clientAuth: clientAuth.map { $0 ^ 1 })
            _ = try once.receive(clientAuth: clientAuth)
        }
        #expect(try server.receive(clientAuth: clientAuth).peerKey == beta.publicKey)
    }

    /// A hello altered in transit is not noticed by the server, but its answer then fails at the client.
    @Test func tamperedHelloFailsAtTheClient() throws {
        let ephemeral = EphemeralKey()
        let hello = Handshake.Client(identity: beta, purpose: .fetch, ephemeral: ephemeral).hello
        for index in 2..<hello.count {
            for bit in [0, 7] {
                var flipped = hello
                flipped[index] ^= 1 << UInt8(bit)
                let server = Handshake.Server(identity: alpha)
                guard let answer = try? server.receive(hello: flipped) else { continue }
                let client = Handshake.Client(identity: beta, purpose: .fetch, ephemeral: ephemeral)
                expectHandshakeFailure("hello byte \(index) bit \(bit)") { () throws(HandoffError) in
                    _ = try client.receive(serverHello: answer.serverHello)
                }
            }
        }
        // A changed purpose is refused by the server (unknown) or by the client (the transcript differs).
        var repurposed = hello
        repurposed[1] = Handshake.Purpose.pair.rawValue
        let server = Handshake.Server(identity: alpha)
        let (purpose, serverHello) = try server.receive(hello: repurposed)
        #expect(purpose == .pair)
        let client = Handshake.Client(identity: beta, purpose: .fetch, ephemeral: ephemeral)
        expectHandshakeFailure("purpose changed") { () throws(HandoffError) in _ = try client.receive(serverHello: serverHello) }
    }

    /// A server answering with someone else's sealed identity (a relay of another session) fails.
    @Test func spliceOfAnotherSessionFails() throws {
        let client = Handshake.Client(identity: beta, purpose: .fetch)
        let other = Handshake.Client(identity: beta, purpose: .fetch)
        let (_, serverHello) = try Handshake.Server(identity: alpha).receive(hello: other.hello)
        expectHandshakeFailure("answer to another hello") { () throws(HandoffError) in _ = try client.receive(serverHello: serverHello) }
        // And a clientAuth from another session.
        let server = Handshake.Server(identity: alpha)
        _ = try server.receive(hello: client.hello)
        let (foreignAuth, _) = try other.receive(serverHello: serverHello)
        expectHandshakeFailure("clientAuth of another session") { () throws(HandoffError) in _ = try server.receive(clientAuth: foreignAuth) }
    }

    // MARK: - Sizes, version, order

    @Test func wrongSizesFail() throws {
        let client = Handshake.Client(identity: beta, purpose: .fetch)
        for length in [1, Handshake.helloBytes - 1, Handshake.helloBytes + 1, 256] {
            let hello = Array((client.hello + [UInt8](repeating: 0x42, count: 256)).prefix(length))
            expectHandshakeFailure("hello of \(length) bytes") { () throws(HandoffError) in
                _ = try Handshake.Server(identity: alpha).receive(hello: hello)
            }
        }
        let server = Handshake.Server(identity: alpha)
        let (_, serverHello) = try server.receive(hello: client.hello)
        for length in [0, 32, Handshake.serverHelloBytes - 1] {
            let cut = Array(serverHello.prefix(length))
            expectHandshakeFailure("serverHello of \(length) bytes") { () throws(HandoffError) in
                _ = try Handshake.Client(identity: beta, purpose: .fetch).receive(serverHello: cut)
            }
        }
        expectHandshakeFailure("serverHello one byte long") { () throws(HandoffError) in
            _ = try Handshake.Client(identity: beta, purpose: .fetch).receive(serverHello: serverHello + [0])
        }
        let (clientAuth, _) = try client.receive(serverHello: serverHello)
        for cut in [[], Array(clientAuth.dropLast()), clientAuth + [0]] {
            expectHandshakeFailure("clientAuth of \(cut.count) bytes") { () throws(HandoffError) in _ = try server.receive(clientAuth: cut) }
        }
    }

    @Test(arguments: [UInt8(0), 1, 2, 6, 0xFF])
    func otherVersionsFail(_ version: UInt8) {
        var hello = Handshake.Client(identity: beta, purpose: .fetch).hello
        hello[0] = version
        let error = #expect(throws: HandoffError.self) { try Handshake.Server(identity: alpha).receive(hello: hello) }
        #expect(error?.code == .invalidRequest)
        #expect(error?.message == "The peer speaks handshake version \(version); this host speaks 5 (and answers 3 and 4).")
    }

    @Test(arguments: [UInt8(0), 4, 0xFF])
    func unknownPurposeFails(_ purpose: UInt8) {
        var hello = Handshake.Client(identity: beta, purpose: .fetch).hello
        hello[1] = purpose
        expectHandshakeFailure("purpose \(purpose)") { () throws(HandoffError) in _ = try Handshake.Server(identity: alpha).receive(hello: hello) }
    }

    /// Before version 5 a purpose travelled only in the hello version that had it: a
    /// stream in a version 3 hello, or a fetch or pairing in a version 4 one, is refused.
    @Test(arguments: [(UInt8(3), Handshake.Purpose.stream), (4, .fetch), (4, .pair)])
    func purposeAndVersionMustMatch(_ version: UInt8, _ purpose: Handshake.Purpose) {
        var hello = Handshake.Client(identity: beta, purpose: purpose, offering: nil).hello
        hello[0] = version
        expectHandshakeFailure("purpose \(purpose) in version \(version)") { () throws(HandoffError) in
            _ = try Handshake.Server(identity: alpha).receive(hello: hello)
        }
    }

    /// A fetch's hint does not open a stream: the hint binds the purpose.
    @Test func theHintBindsThePurpose() throws {
        let fetch = Handshake.Client(identity: beta, purpose: .fetch).hello
        var asStream = fetch
        asStream[1] = Handshake.Purpose.stream.rawValue
        #expect(try Handshake.Hello(fetch).isFrom(pairSecretsAB))
        #expect(!(try Handshake.Hello(asStream)).isFrom(pairSecretsAB))
        #expect(try Handshake.Hello(Handshake.Client(identity: beta, purpose: .stream).hello).isFrom(pairSecretsAB))
    }

    @Test func lowOrderEphemeralKeysFail() throws {
        let zero = [UInt8](repeating: 0, count: 32)
        expectHandshakeFailure("client ephemeral all zero") { () throws(HandoffError) in
            _ = try Handshake.Server(identity: alpha).receive(hello: [3, 2] + zero + [UInt8](repeating: 0, count: 16))
        }
        let client = Handshake.Client(identity: beta, purpose: .fetch)
        let (_, serverHello) = try Handshake.Server(identity: alpha).receive(hello: client.hello)
        let forged = zero + Array(serverHello.dropFirst(32))
        expectHandshakeFailure("server ephemeral all zero") { () throws(HandoffError) in _ = try client.receive(serverHello: forged) }
    }

    @Test func authenticationBeforeHelloFails() {
        expectHandshakeFailure("clientAuth first") { () throws(HandoffError) in
            _ = try Handshake.Server(identity: alpha).receive(clientAuth: [UInt8](repeating: 0, count: Handshake.clientAuthBytes))
        }
    }

    @Test func randomAnswersFail() {
        var rng = SplitMix64(seed: 0x4853_4B01)
        let client = Handshake.Client(identity: beta, purpose: .fetch)
        for index in 0..<200 {
            let garbage = rng.bytes(Handshake.serverHelloBytes)
            expectHandshakeFailure("random serverHello #\(index)") { () throws(HandoffError) in _ = try client.receive(serverHello: garbage) }
        }
    }

    // MARK: - Identity hiding

    /// The hint names the pair only to the server: it changes with every connection,
    /// matches only that pair's secrets, and carries neither key.
    @Test func theHintIsFreshAndMeaningfulOnlyToThePair() throws {
        let first = Handshake.Client(identity: beta, purpose: .fetch).hello
        let second = Handshake.Client(identity: beta, purpose: .fetch).hello
        #expect(first.suffix(Handshake.hintBytes) != second.suffix(Handshake.hintBytes))
        let otherPair = PairSecrets(pairKey: try #require(alpha.pairKey(with: gamma.publicKey, agreementKey: gamma.agreementKey)))
        for hello in [first, second] {
            let parsed = try Handshake.Hello(hello)
            #expect(parsed.isFrom(pairSecretsAB))
            #expect(!parsed.isFrom(otherPair))
            for secret in [alpha.publicKey.bytes, beta.publicKey.bytes, alpha.agreementKey, beta.agreementKey] {
                #expect(!contains(hello, secret))
            }
        }
        // A pairing hello carries no hint and names no pair.
        let pairing = try Handshake.Hello(Handshake.Client(identity: beta, purpose: .pair).hello)
        #expect(pairing.hint == [UInt8](repeating: 0, count: Handshake.hintBytes))
        #expect(!pairing.isFrom(pairSecretsAB))
        // A hint copied onto another ephemeral key no longer matches (no replay onto a fresh key).
        var moved = first
        moved[3] ^= 1
        #expect(!(try Handshake.Hello(moved)).isFrom(pairSecretsAB))
    }

    /// A client without the pair's secrets cannot read the server's identity,
    /// even when the server answers it (say, with a hello replayed from the pair).
    @Test func withoutThePSKTheServerIdentityStaysSealed() throws {
        let stranger = Handshake.Client(identity: gamma, purpose: .fetch,
                                        secrets: PairSecrets(pairKey: [UInt8](repeating: 7, count: 32)))
        let server = Handshake.Server(identity: alpha)
        let answer = try server.answer(try Handshake.Hello(stranger.hello), psk: pairSecretsAB.handshakePSK, expectedClient: nil)
        expectHandshakeFailure("stranger opens serverHello") { () throws(HandoffError) in _ = try stranger.receive(serverHello: answer) }
        #expect(!contains(answer, alpha.publicKey.bytes))
    }

    /// The server finishes only with the device the hint named, even if another device has a valid key.
    @Test func theClientMustBeTheDeviceTheHintNamed() throws {
        let client = Handshake.Client(identity: beta, purpose: .fetch)
        let server = Handshake.Server(identity: alpha)
        let answer = try server.answer(try Handshake.Hello(client.hello), psk: pairSecretsAB.handshakePSK, expectedClient: gamma.publicKey)
        let (auth, _) = try client.receive(serverHello: answer)
        expectHandshakeFailure("client is not the named device") { () throws(HandoffError) in _ = try server.receive(clientAuth: auth) }
    }

    /// The PSK is mixed into every key: the same ephemeral keys under another PSK give other keys.
    @Test func thePSKChangesEveryKey() throws {
        let open = Handshake.Client(identity: beta, purpose: .pair, ephemeral: EphemeralKey(secret: RFC7748.alicePrivate))
        let server = Handshake.Server(identity: alpha, ephemeral: EphemeralKey(secret: RFC7748.bobPrivate))
        let answer = try server.answer(try Handshake.Hello(open.hello), psk: Handshake.openPSK, expectedClient: nil)
        let (_, session) = try open.receive(serverHello: answer)
        #expect(session.sendKey != HandshakeVector.clientToServer && session.receiveKey != HandshakeVector.serverToClient)
        #expect(Array(answer.prefix(32)) == Array(HandshakeVector.serverHello.prefix(32)))
        #expect(Array(answer.dropFirst(32)) != Array(HandshakeVector.serverHello.dropFirst(32)))
    }
}

private let gamma = try! Identity(seed: [UInt8](repeating: 9, count: 32))

private func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard !needle.isEmpty, haystack.count >= needle.count else { return false }
    return (0...(haystack.count - needle.count)).contains { Array(haystack[$0..<($0 + needle.count)]) == needle }
}
