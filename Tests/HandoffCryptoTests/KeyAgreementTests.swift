import HandoffCore
import HandoffCrypto
import Testing

private let keyA = DeviceKey(bytes: rfcPublicKey)!
private let keyB = DeviceKey(bytes: rfcPublicKey2)!
private let third = try! Identity(seed: [UInt8](repeating: 9, count: 32))

/// Computed independently (Docs/PROTOCOL.md, "Pair key"): A's and B's agreement keys
/// (X25519, the secret derived from the seed), and the key the pair shares.
private let agreementKeyA = hex("ec774eba91cb1cd903c21e53db220b09292563a1b2c5017f4fbdcc21310a3166")
private let agreementKeyB = hex("f996645def223e470b53a335f0e79f4b32be41770a276e39ca8218ebec721f5c")
private let pairKeyAB = hex("386a8e16359b2d81831785ca3f74af405039f64c6592f7426713c830271cba6c")
/// The Montgomery form of A's Ed25519 key (what libsodium's conversion would give): not the agreement key.
private let x25519FormOfA = hex("d85e07ec22b0ad881537c2f44d662d1a143cf830c57aca4305d85c7a90f6b62e")

@Suite struct X25519Tests {
    /// RFC 7748 section 6.1, through the fixed-secret initializer the handshake vector uses.
    @Test func rfc7748KnownAnswer() throws {
        let alice = EphemeralKey(secret: RFC7748.alicePrivate)
        let bob = EphemeralKey(secret: RFC7748.bobPrivate)
        #expect(alice.publicKey == RFC7748.alicePublic)
        #expect(bob.publicKey == RFC7748.bobPublic)
        #expect(alice.sharedSecret(with: RFC7748.bobPublic) == RFC7748.shared)
        #expect(bob.sharedSecret(with: RFC7748.alicePublic) == RFC7748.shared)
        #expect(X25519.sharedSecret(secret: RFC7748.alicePrivate, publicKey: RFC7748.bobPublic) == RFC7748.shared)
    }

    @Test func freshEphemeralKeysDifferAndAgree() {
        let first = EphemeralKey(), second = EphemeralKey()
        #expect(first.publicKey.count == X25519.keyBytes)
        #expect(first.publicKey != second.publicKey)
        let shared = first.sharedSecret(with: second.publicKey)
        #expect(shared != nil)
        #expect(shared == second.sharedSecret(with: first.publicKey))
    }

    /// The all-zero point and the other low-order points give an all-zero secret: refused.
    @Test func lowOrderPeerKeysAreRefused() {
        let key = EphemeralKey(secret: RFC7748.alicePrivate)
        let lowOrder = [
            [UInt8](repeating: 0, count: 32),
            [1] + [UInt8](repeating: 0, count: 31),
            hex("e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800"),
        ]
        for point in lowOrder {
            #expect(key.sharedSecret(with: point) == nil, "\(Hex.encode(point))")
        }
    }

    @Test func wrongSizesAreRefused() {
        #expect(X25519.sharedSecret(secret: Array(RFC7748.alicePrivate.dropLast()), publicKey: RFC7748.bobPublic) == nil)
        #expect(X25519.sharedSecret(secret: RFC7748.alicePrivate, publicKey: RFC7748.bobPublic + [0]) == nil)
        #expect(EphemeralKey(secret: RFC7748.alicePrivate).sharedSecret(with: []) == nil)
    }

    /// The agreement key is derived from the seed, not converted from the signing key:
    /// the Ed25519 key is never used for Diffie-Hellman.
    @Test func agreementKeysAreDerivedNotConverted() {
        #expect(rfcIdentity().agreementKey == agreementKeyA)
        #expect(rfcIdentity2().agreementKey == agreementKeyB)
        #expect(rfcIdentity().agreementKey != x25519FormOfA)
        #expect(rfcIdentity().agreementKey != keyA.bytes)
    }
}

@Suite struct PairKeyTests {
    @Test func bothSidesDeriveTheSameKey() throws {
        let a = rfcIdentity(), b = rfcIdentity2()
        let fromA = try #require(a.pairKey(with: b.publicKey, agreementKey: b.agreementKey))
        let fromB = try #require(b.pairKey(with: a.publicKey, agreementKey: a.agreementKey))
        #expect(fromA == fromB)
        #expect(fromA.count == 32)
        #expect(fromA == pairKeyAB)
    }

    @Test func anotherPairHasAnotherKey() throws {
        let a = rfcIdentity(), b = rfcIdentity2()
        let ab = try #require(a.pairKey(with: b.publicKey, agreementKey: b.agreementKey))
        let ac = try #require(a.pairKey(with: third.publicKey, agreementKey: third.agreementKey))
        let bc = try #require(b.pairKey(with: third.publicKey, agreementKey: third.agreementKey))
        #expect(Set([ab, ac, bc]).count == 3)
        #expect(third.pairKey(with: a.publicKey, agreementKey: a.agreementKey) == ac)
        #expect(third.pairKey(with: b.publicKey, agreementKey: b.agreementKey) == bc)
        // The identity keys are bound in: the same agreement key under another claimed identity differs.
        #expect(a.pairKey(with: third.publicKey, agreementKey: b.agreementKey) != ab)
    }

    @Test func aLowOrderAgreementKeyGivesNoPairKey() {
        #expect(rfcIdentity().pairKey(with: keyB, agreementKey: [UInt8](repeating: 0, count: 32)) == nil)
        #expect(rfcIdentity().pairKey(with: keyB, agreementKey: [1, 2, 3]) == nil)
    }

    /// Each use gets its own key: none equals the pair key or another.
    @Test func derivedKeysAreSeparate() {
        let secrets = PairSecrets(pairKey: pairKeyAB)
        #expect(Set([pairKeyAB, secrets.handshakeHintKey, secrets.handshakePSK]).count == 3)
        #expect(secrets.handshakeHintKey == hex("d17e6e1a5f66fd7929967aff55bbf21f401ae3bb147374b90866a93f26af7e92"))
        #expect(secrets.handshakePSK == hex("7a323ceb0758f0f7658f63c594edeebc6ab5400f81d1b52ab1ddf491c800700e"))
    }
}

@Suite struct KeyedBlake2bTests {
    /// The first keyed entry of the BLAKE2 reference blake2b-kat.txt: empty input, key 00 01 … 3f.
    @Test func referenceKnownAnswer() {
        #expect(Blake2b.keyed([], key: Array(0..<64), outputBytes: 64) == hex("""
            10ebb67700b1868efb4417987acf4690ae9d972fb7a590c2f02871799aaa4786
            b5e996e8f0f4eb981fc214b005f42d2ff4233499391653df7aefcbc13fc51568
            """))
    }

    @Test func theKeyMatters() {
        let message = Array("handoff".utf8)
        let keyed = Blake2b.keyed(message, key: [UInt8](repeating: 1, count: 32))
        #expect(keyed.count == 32)
        #expect(keyed != Blake2b.digest(message))
        #expect(keyed != Blake2b.keyed(message, key: [UInt8](repeating: 2, count: 32)))
        #expect(Blake2b.keyed(message, key: [UInt8](repeating: 1, count: 32), outputBytes: 8).count == 8)
    }
}

@Suite struct AEADTests {
    static let key = Array(UInt8(0x80)...UInt8(0x9F))
    static let nonce = Array(UInt8(0x40)...UInt8(0x57))
    static let associatedData = hex("50515253c0c1c2c3c4c5c6c7")
    static let plaintext = Array("Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.".utf8)

    /// draft-irtf-cfrg-xchacha-03 appendix A.3.1 (AEAD_XChaCha20_Poly1305).
    @Test func draftKnownAnswer() {
        let sealed = AEAD.seal(Self.plaintext, key: Self.key, nonce: Self.nonce, associatedData: Self.associatedData)
        #expect(sealed == hex("""
            bd6d179d3e83d43b9576579493c0e939572a1700252bfaccbed2902c21396cbb
            731c7f1b0b4aa6440bf3a82f4eda7e39ae64c6708c54c216cb96b72e1213b452
            2f8c9ba40db5d945b11b69b982c1bb9e3f3fac2bc369488f76b2383565d3fff9
            21f9664c97637da9768812f615c68b13b52e
            c0875924c1c7987947deafd8780acf49
            """))
        #expect(AEAD.open(sealed, key: Self.key, nonce: Self.nonce, associatedData: Self.associatedData) == Self.plaintext)
    }

    @Test(arguments: [0, 1, 16, 1000])
    func roundTrip(length: Int) throws {
        var rng = SplitMix64(seed: UInt64(length))
        let plaintext = rng.bytes(length)
        let sealed = AEAD.seal(plaintext, key: Self.key, nonce: Self.nonce, associatedData: [])
        #expect(sealed.count == length + AEAD.tagBytes)
        #expect(AEAD.open(sealed, key: Self.key, nonce: Self.nonce, associatedData: []) == plaintext)
    }

    @Test func anyFlippedBitFails() {
        let sealed = AEAD.seal(Array(Self.plaintext.prefix(40)), key: Self.key, nonce: Self.nonce, associatedData: Self.associatedData)
        for (index, flipped) in singleBitFlips(of: sealed).enumerated() {
            #expect(AEAD.open(flipped, key: Self.key, nonce: Self.nonce, associatedData: Self.associatedData) == nil, "ciphertext bit \(index)")
        }
        for (index, flipped) in singleBitFlips(of: Self.nonce).enumerated() {
            #expect(AEAD.open(sealed, key: Self.key, nonce: flipped, associatedData: Self.associatedData) == nil, "nonce bit \(index)")
        }
        for (index, flipped) in singleBitFlips(of: Self.associatedData).enumerated() {
            #expect(AEAD.open(sealed, key: Self.key, nonce: Self.nonce, associatedData: flipped) == nil, "associated data bit \(index)")
        }
        #expect(AEAD.open(sealed, key: Self.key, nonce: Self.nonce, associatedData: Self.associatedData) != nil)
    }

    @Test func wrongKeyOrShapeFails() {
        let sealed = AEAD.seal(Self.plaintext, key: Self.key, nonce: Self.nonce, associatedData: Self.associatedData)
        for (index, key) in singleBitFlips(of: Self.key).enumerated() where index % 7 == 0 {
            #expect(AEAD.open(sealed, key: key, nonce: Self.nonce, associatedData: Self.associatedData) == nil)
        }
        #expect(AEAD.open(sealed, key: Random.bytes(32), nonce: Self.nonce, associatedData: Self.associatedData) == nil)
        // Missing or extra associated data, cut or extended ciphertext, wrong sizes: nil, never a trap.
        #expect(AEAD.open(sealed, key: Self.key, nonce: Self.nonce, associatedData: []) == nil)
        #expect(AEAD.open(sealed, key: Self.key, nonce: Self.nonce, associatedData: Self.associatedData + [0]) == nil)
        #expect(AEAD.open(Array(sealed.dropLast()), key: Self.key, nonce: Self.nonce, associatedData: Self.associatedData) == nil)
        #expect(AEAD.open(sealed + [0], key: Self.key, nonce: Self.nonce, associatedData: Self.associatedData) == nil)
        #expect(AEAD.open(Array(sealed.prefix(AEAD.tagBytes - 1)), key: Self.key, nonce: Self.nonce, associatedData: []) == nil)
        #expect(AEAD.open([], key: Self.key, nonce: Self.nonce, associatedData: []) == nil)
        #expect(AEAD.open(sealed, key: Array(Self.key.dropLast()), nonce: Self.nonce, associatedData: Self.associatedData) == nil)
        #expect(AEAD.open(sealed, key: Self.key, nonce: Array(Self.nonce.dropLast()), associatedData: Self.associatedData) == nil)
    }
}

/// Both record ciphers (RecordStream): the same guarantees, whichever the handshake chose.
@Suite struct RecordStreamTests {
    static let key = Array(UInt8(0)..<UInt8(32))
    /// AES-256-GCM only where this CPU runs it (libsodium has none without AES-NI).
    static let ciphers: [RecordCipher] = RecordCiphers.available.contains(.aes256gcm) ? [.xchacha20poly1305, .aes256gcm] : [.xchacha20poly1305]

    /// A sender and a receiver joined by the sender's header.
    static func pair(_ cipher: RecordCipher, key: [UInt8] = key) throws -> (RecordStream, RecordStream) {
        let (sender, header) = RecordStream.sender(cipher, key: key)
        #expect(header.count == RecordStream.headerBytes)
        let receiver = try #require(RecordStream.receiver(cipher, key: key, header: header))
        return (sender, receiver)
    }

    static let messages: [[UInt8]] = [[], Array("one".utf8), [UInt8](repeating: 0xAB, count: 1000), Array("last".utf8)]

    @Test(arguments: Self.ciphers) func recordsDecryptInOrderWithTheirTags(_ cipher: RecordCipher) throws {
        let (sender, receiver) = try Self.pair(cipher)
        let tags: [UInt8] = [RecordStream.tagMessage, RecordStream.tagPush, RecordStream.tagMessage, RecordStream.tagPush]
        let records = zip(Self.messages, tags).map { sender.push($0, tag: $1) }
        for (record, message) in zip(records, Self.messages) {
            #expect(record.count == message.count + RecordStream.overheadBytes)
        }
        for (index, record) in records.enumerated() {
            let opened = try #require(receiver.pull(record), "record \(index)")
            #expect(opened.plaintext == Self.messages[index])
            #expect(opened.tag == tags[index])
        }
    }

    @Test(arguments: Self.ciphers) func theSamePlaintextTwiceGivesDifferentRecords(_ cipher: RecordCipher) throws {
        let (sender, _) = try Self.pair(cipher)
        #expect(sender.push([1, 2, 3], tag: RecordStream.tagMessage) != sender.push([1, 2, 3], tag: RecordStream.tagMessage))
        // And two streams with the same key have different headers.
        #expect(RecordStream.sender(cipher, key: Self.key).header != RecordStream.sender(cipher, key: Self.key).header)
    }

    @Test(arguments: Self.ciphers) func replayedRecordFails(_ cipher: RecordCipher) throws {
        let (sender, receiver) = try Self.pair(cipher)
        let first = sender.push(Self.messages[1], tag: RecordStream.tagMessage)
        #expect(receiver.pull(first)?.plaintext == Self.messages[1])
        #expect(receiver.pull(first) == nil)
    }

    @Test(arguments: Self.ciphers) func reorderedRecordsFail(_ cipher: RecordCipher) throws {
        let (sender, receiver) = try Self.pair(cipher)
        let first = sender.push(Self.messages[1], tag: RecordStream.tagMessage)
        let second = sender.push(Self.messages[2], tag: RecordStream.tagMessage)
        #expect(receiver.pull(second) == nil)
        // The failure was the order, not the records: in order, both open.
        #expect(receiver.pull(first)?.plaintext == Self.messages[1])
        #expect(receiver.pull(second)?.plaintext == Self.messages[2])
    }

    @Test(arguments: Self.ciphers) func droppedRecordMakesTheNextOneFail(_ cipher: RecordCipher) throws {
        let (sender, receiver) = try Self.pair(cipher)
        #expect(receiver.pull(sender.push(Self.messages[0], tag: RecordStream.tagMessage)) != nil)
        _ = sender.push(Self.messages[1], tag: RecordStream.tagMessage)  // lost in transit
        #expect(receiver.pull(sender.push(Self.messages[2], tag: RecordStream.tagMessage)) == nil)
    }

    @Test(arguments: Self.ciphers) func alteredRecordFails(_ cipher: RecordCipher) throws {
        let (sender, header) = RecordStream.sender(cipher, key: Self.key)
        let record = sender.push(Self.messages[1], tag: RecordStream.tagPush)
        for (index, flipped) in singleBitFlips(of: record).enumerated() {
            let receiver = try #require(RecordStream.receiver(cipher, key: Self.key, header: header))
            #expect(receiver.pull(flipped) == nil, "bit \(index)")
        }
        // A flipped header bit: the stream starts, but its first record does not open.
        for (index, flipped) in singleBitFlips(of: header).enumerated() where index % 5 == 0 {
            let receiver = try #require(RecordStream.receiver(cipher, key: Self.key, header: flipped))
            #expect(receiver.pull(record) == nil, "header bit \(index)")
        }
        // Cut or extended.
        let receiver = try #require(RecordStream.receiver(cipher, key: Self.key, header: header))
        #expect(receiver.pull(Array(record.dropLast())) == nil)
        #expect(receiver.pull(record + [0]) == nil)
        #expect(receiver.pull(Array(record.prefix(RecordStream.overheadBytes - 1))) == nil)
        #expect(receiver.pull(record)?.plaintext == Self.messages[1])
    }

    @Test(arguments: Self.ciphers) func wrongKeyOrHeaderShapeFails(_ cipher: RecordCipher) throws {
        let (sender, header) = RecordStream.sender(cipher, key: Self.key)
        let record = sender.push(Self.messages[1], tag: RecordStream.tagMessage)
        let other = try #require(RecordStream.receiver(cipher, key: Array(Self.key.reversed()), header: header))
        #expect(other.pull(record) == nil)
        #expect(RecordStream.receiver(cipher, key: Self.key, header: Array(header.dropLast())) == nil)
        #expect(RecordStream.receiver(cipher, key: Self.key, header: header + [0]) == nil)
        #expect(RecordStream.receiver(cipher, key: Array(Self.key.dropLast()), header: header) == nil)
    }

    /// The in-place forms SecureChannel uses produce and accept the same records as the array forms.
    @Test(arguments: Self.ciphers) func inPlaceAndArrayFormsInteroperate(_ cipher: RecordCipher) throws {
        let (sender, receiver) = try Self.pair(cipher)
        let message = Array("sealed in place".utf8)
        var record = [UInt8](repeating: 0, count: message.count + RecordStream.overheadBytes)
        message.withUnsafeBytes { input in
            record.withUnsafeMutableBytes { sender.push(input, tag: RecordStream.tagPush, into: $0.baseAddress!) }
        }
        let opened = try #require(receiver.pull(record))
        #expect(opened.plaintext == message)
        #expect(opened.tag == RecordStream.tagPush)

        let second = sender.push(message, tag: RecordStream.tagMessage)
        var output = [UInt8](repeating: 0, count: message.count)
        var altered = second
        altered[3] ^= 1
        let refused = altered.withUnsafeBytes { input in output.withUnsafeMutableBytes { receiver.pull(input, into: $0.baseAddress!) } }
        #expect(refused == nil)
        let short = [UInt8](repeating: 0, count: RecordStream.overheadBytes - 1)
        #expect(short.withUnsafeBytes { input in output.withUnsafeMutableBytes { receiver.pull(input, into: $0.baseAddress!) } } == nil)
        let tag = second.withUnsafeBytes { input in output.withUnsafeMutableBytes { receiver.pull(input, into: $0.baseAddress!) } }
        #expect(tag == RecordStream.tagMessage)
        #expect(output == message)

        // An empty plaintext, in place both ways.
        var empty = [UInt8](repeating: 0, count: RecordStream.overheadBytes)
        [UInt8]().withUnsafeBytes { input in
            empty.withUnsafeMutableBytes { sender.push(input, tag: RecordStream.tagPush, into: $0.baseAddress!) }
        }
        var nothing: [UInt8] = []
        let emptyTag = empty.withUnsafeBytes { input in nothing.withUnsafeMutableBytes { receiver.pull(input, into: $0.baseAddress!) } }
        #expect(emptyTag == RecordStream.tagPush)
    }

    @Test(arguments: Self.ciphers) func largeRecordsRoundTrip(_ cipher: RecordCipher) throws {
        let (sender, receiver) = try Self.pair(cipher)
        var rng = SplitMix64(seed: 0x5354_524D)
        let big = rng.bytes(1 << 20)
        let record = sender.push(big, tag: RecordStream.tagPush)
        #expect(record.count == big.count + RecordStream.overheadBytes)
        let opened = try #require(receiver.pull(record))
        #expect(opened.plaintext == big)
        #expect(opened.tag == RecordStream.tagPush)
    }
}
