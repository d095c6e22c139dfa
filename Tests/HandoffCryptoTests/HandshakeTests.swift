import HandoffCore
import HandoffCrypto
import Testing

/// The static handshake of Vectors.md ("Handshake"): B (RFC 8032 test 2) connects to
/// fetch from A (test 1); B's ephemeral secret is RFC 7748 Alice's, A's is Bob's.
/// Computed independently with Python (hashlib, cryptography, HChaCha20 by hand).
enum HandshakeVector {
    static let hello = hex("02 01 8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a")
    static let serverHello = hex("""
        de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f
        f984c62b8ca884ec5db218b76eca759edf07ac17fb07dfdc14346ff0ac59c63f
        d41dc800c1786beb61d64fb296276e31ade2434d83bc3bb3cdb9e3d736ca3e36
        70541b3c65f116666b59778356bddda7f2c8cad6a565fda033d10c5c46ceac6f
        e9a224973e59820a901bdc389592a68e
        """)
    static let clientAuth = hex("""
        8dc1c3d9e785fef662edf464b531f38ed9db2108e9b16ccbe129dbd65176757e
        6f56cc60546434a9b2b9e48d75b84bb79f8bbebe115e49eb21afd881a0f6ad83
        8a1b37538cc7cc7dae6a67513f2ff8fca12cc3e25e4a0b6099a9a4b615cd87fa
        f07a9ed00ccc89daae83484adb4d8c42
        """)
    static let transcriptHash = hex("f5352355d9f130e7b92fcaea9fc6e4bf15667b9a706cf3fd1341a446d7429717")
    static let clientToServer = hex("a48e2eb29ffd9ba329b202c00a216b5fd9669e61684a901759164a98a4367be0")
    static let serverToClient = hex("0c038f15924fbad32e3e091db72deb399fdb1e31595624c30a62deee273c93d6")
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
        #expect(messages.map(\.count) == [34, 144, 112])
    }

    @Test(arguments: [Handshake.Purpose.fetch, .pair])
    func purposeIsCarried(_ purpose: Handshake.Purpose) throws {
        let (client, server, messages) = try handshake(client: beta, server: alpha, purpose: purpose)
        #expect(client.purpose == purpose)
        #expect(server.purpose == purpose)
        #expect(messages[0][1] == purpose.rawValue)
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
        let client = Handshake.Client(identity: beta, purpose: .fetch, ephemeral: EphemeralKey(secret: RFC7748.alicePrivate))
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
    }

    /// The recorded messages are accepted by fresh parties holding the same ephemeral secrets.
    @Test func staticVectorMessagesAreAccepted() throws {
        let client = Handshake.Client(identity: beta, purpose: .fetch, ephemeral: EphemeralKey(secret: RFC7748.alicePrivate))
        let (auth, session) = try client.receive(serverHello: HandshakeVector.serverHello)
        #expect(auth == HandshakeVector.clientAuth)
        #expect(session.peerKey.bytes == rfcPublicKey)
        let server = Handshake.Server(identity: alpha, ephemeral: EphemeralKey(secret: RFC7748.bobPrivate))
        _ = try server.receive(hello: HandshakeVector.hello)
        #expect(try server.receive(clientAuth: HandshakeVector.clientAuth).peerKey.bytes == rfcPublicKey2)
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

    @Test func tamperedClientAuthFails() throws {
        let client = Handshake.Client(identity: beta, purpose: .fetch)
        let server = Handshake.Server(identity: alpha)
        let (_, serverHello) = try server.receive(hello: client.hello)
        let (clientAuth, _) = try client.receive(serverHello: serverHello)
        for (index, flipped) in singleBitFlips(of: clientAuth).enumerated() {
            expectHandshakeFailure("clientAuth bit \(index)") { () throws(HandoffError) in _ = try server.receive(clientAuth: flipped) }
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
        for length in [0, 1, Handshake.helloBytes - 1, Handshake.helloBytes + 1, 256] {
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

    @Test(arguments: [UInt8(0), 1, 3, 0xFF])
    func otherVersionsFail(_ version: UInt8) {
        var hello = Handshake.Client(identity: beta, purpose: .fetch).hello
        hello[0] = version
        let error = #expect(throws: HandoffError.self) { try Handshake.Server(identity: alpha).receive(hello: hello) }
        #expect(error?.code == .payloadInvalid)
        #expect(error?.message == "The peer speaks handshake version \(version); this host speaks 2.")
    }

    @Test(arguments: [UInt8(0), 3, 0xFF])
    func unknownPurposeFails(_ purpose: UInt8) {
        var hello = Handshake.Client(identity: beta, purpose: .fetch).hello
        hello[1] = purpose
        expectHandshakeFailure("purpose \(purpose)") { () throws(HandoffError) in _ = try Handshake.Server(identity: alpha).receive(hello: hello) }
    }

    @Test func lowOrderEphemeralKeysFail() throws {
        let zero = [UInt8](repeating: 0, count: 32)
        expectHandshakeFailure("client ephemeral all zero") { () throws(HandoffError) in
            _ = try Handshake.Server(identity: alpha).receive(hello: [2, 1] + zero)
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
}
