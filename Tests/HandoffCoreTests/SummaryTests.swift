import HandoffCore
import HandoffCrypto
import Testing

@Suite struct SummaryTests {
    let verifier = Ed25519()
    var vector: [UInt8] { VectorInputs.summaryBody + VectorInputs.summarySignature }

    // Offsets in the vector body, from the layout in Summary.encodedBody().
    static let nameLengthOffset = 33
    static let typeLengthOffset = 39
    static let titleLengthOffset = 67

    @Test func staticVectorEncodesAndSigns() throws {
        let identity = rfcIdentity()
        #expect(identity.publicKey.bytes == rfcPublicKey)
        #expect(try VectorInputs.summary.encodedBody() == VectorInputs.summaryBody)
        let signed = try VectorInputs.summary.signed(by: identity)
        #expect(signed.body == VectorInputs.summaryBody)
        #expect(signed.signature == VectorInputs.summarySignature)
        #expect(signed.encoded == vector)
        #expect(signed.encoded.count == 202)
        // The digest in the summary is the digest of the activity payload vector.
        #expect(Blake2b.digest(VectorInputs.payload) == VectorInputs.payloadDigest)
    }

    @Test func staticVectorDecodes() throws {
        let decoded = try SignedSummary(decoding: vector)
        #expect(decoded.summary == VectorInputs.summary)
        #expect(decoded.body == VectorInputs.summaryBody)
        #expect(decoded.signature == VectorInputs.summarySignature)
        #expect(decoded == VectorInputs.signedSummary)
        #expect(decoded.verify(with: verifier))
    }

    @Test(arguments: [
        ("", "a.b", ""),
        (String(repeating: "n", count: 64), String(repeating: "t", count: 128), String(repeating: "x", count: 256)),
        ("Ålpha's laptop", "org.example.x", "Kapitel 1 – Überblick 📖"),
    ])
    func roundTrip(name: String, type: String, title: String) throws {
        var summary = VectorInputs.summary
        summary.senderName = name
        summary.activityType = type
        summary.title = title
        summary.payloadSize = .max
        summary.sequence = .max
        let signed = try summary.signed(by: rfcIdentity())
        let decoded = try SignedSummary(decoding: signed.encoded)
        #expect(decoded == signed)
        #expect(decoded.verify(with: verifier))
    }

    @Test func largestSummaryIsExactlyTheMaximum() throws {
        var summary = VectorInputs.summary
        summary.senderName = String(repeating: "n", count: Summary.nameBytes)
        summary.activityType = String(repeating: "t", count: ActivityLimits.typeBytes)
        summary.title = String(repeating: "x", count: ActivityLimits.titleBytes)
        let signed = try summary.signed(by: rfcIdentity())
        #expect(signed.encoded.count == Summary.maximumEncodedBytes)
        #expect(Summary.maximumEncodedBytes == 609)
        #expect(throws: WireError.tooLong(field: "summary", length: 610, limit: 609)) {
            try SignedSummary(decoding: signed.encoded + [0])
        }
    }

    @Test func encodingRefusesFieldsOverTheirLimits() {
        var summary = VectorInputs.summary
        summary.senderName = String(repeating: "n", count: 65)
        #expect(throws: WireError.tooLong(field: "device name", length: 65, limit: 64)) { try summary.encodedBody() }
        summary = VectorInputs.summary
        summary.activityType = String(repeating: "t", count: 129)
        #expect(throws: WireError.tooLong(field: "activity type", length: 129, limit: 128)) { try summary.encodedBody() }
        summary = VectorInputs.summary
        summary.title = String(repeating: "é", count: 129)
        #expect(throws: WireError.tooLong(field: "title", length: 258, limit: 256)) { try summary.encodedBody() }
        for count in [0, 31, 33, 64] {
            summary = VectorInputs.summary
            summary.payloadDigest = [UInt8](repeating: 0, count: count)
            #expect(throws: WireError.invalidValue("digest must be 32 bytes")) { try summary.signed(by: rfcIdentity()) }
        }
    }

    @Test func truncationAtEveryPrefixThrows() {
        for length in 0..<vector.count {
            #expect(throws: WireError.self, "prefix \(length)") { try SignedSummary(decoding: Array(vector.prefix(length))) }
        }
    }

    @Test func trailingBytesThrow() {
        #expect(throws: WireError.trailingBytes(1)) { try SignedSummary(decoding: vector + [0]) }
        #expect(throws: WireError.trailingBytes(64)) { try SignedSummary(decoding: vector + VectorInputs.summarySignature) }
    }

    @Test func oversizedInputThrowsBeforeParsing() {
        #expect(throws: WireError.tooLong(field: "summary", length: 1000, limit: Summary.maximumEncodedBytes)) {
            try SignedSummary(decoding: [UInt8](repeating: 1, count: 1000))
        }
    }

    @Test func unknownVersionThrows() {
        for version: UInt8 in [0, 2, 0xFF] {
            var bytes = vector
            bytes[0] = version
            #expect(throws: WireError.unsupportedVersion(version)) { try SignedSummary(decoding: bytes) }
        }
    }

    @Test func lengthsOverTheNamedLimitsThrow() {
        var bytes = vector
        #expect(bytes[Self.nameLengthOffset] == 5)
        bytes[Self.nameLengthOffset] = 65
        #expect(throws: WireError.tooLong(field: "device name", length: 65, limit: 64)) { try SignedSummary(decoding: bytes) }

        bytes = vector
        #expect(bytes[Self.typeLengthOffset] == 27)
        bytes[Self.typeLengthOffset] = 129
        #expect(throws: WireError.tooLong(field: "activity type", length: 129, limit: 128)) { try SignedSummary(decoding: bytes) }

        bytes = vector
        #expect(bytes[Self.titleLengthOffset ... Self.titleLengthOffset + 1] == [0x00, 0x09])
        bytes[Self.titleLengthOffset] = 0x01
        bytes[Self.titleLengthOffset + 1] = 0x01
        #expect(throws: WireError.tooLong(field: "title", length: 257, limit: 256)) { try SignedSummary(decoding: bytes) }

        // Lengths within the limits but past the end of the data.
        bytes = vector
        bytes[Self.titleLengthOffset + 1] = 0xFF
        #expect(throws: WireError.self) { try SignedSummary(decoding: bytes) }
    }

    @Test func invalidUTF8Throws() {
        var bytes = vector
        bytes[Self.nameLengthOffset + 1] = 0xFF
        #expect(throws: WireError.invalidText) { try SignedSummary(decoding: bytes) }
        bytes = vector
        bytes[Self.titleLengthOffset + 2] = 0xC3
        #expect(throws: WireError.invalidText) { try SignedSummary(decoding: bytes) }
    }

    @Test func flippingAnyBitOfBodyOrSignatureFailsVerification() {
        var accepted = 0
        for (index, bytes) in singleBitFlips(of: vector).enumerated() {
            // Some flips break the framing; every one that still parses must fail to verify.
            guard let decoded = try? SignedSummary(decoding: bytes) else { continue }
            accepted += 1
            #expect(!decoded.verify(with: verifier), "bit \(index) flipped and still verifies")
        }
        #expect(accepted > vector.count * 6)
    }

    @Test func verifyingDirectlyAgainstEveryFlippedBit() {
        let signed = VectorInputs.signedSummary
        for body in singleBitFlips(of: signed.body) {
            #expect(!verifier.isValid(signature: signed.signature, message: SigningContext.summary + body, key: signed.summary.senderKey))
        }
        for signature in singleBitFlips(of: signed.signature) {
            #expect(!SignedSummary(summary: signed.summary, body: signed.body, signature: signature).verify(with: verifier))
        }
    }

    @Test func anotherKeyDoesNotVerify() throws {
        let stranger = rfcIdentity2()
        var forged = VectorInputs.summary
        // Signed by someone else while claiming the RFC key as sender.
        let signed = try forged.signed(by: stranger)
        #expect(!signed.verify(with: verifier))
        forged.senderKey = stranger.publicKey
        #expect(try forged.signed(by: stranger).verify(with: verifier))
    }

    @Test func summarySignatureNeverVerifiesAsAnnouncement() {
        let signed = VectorInputs.signedSummary
        #expect(verifier.isValid(signature: signed.signature, message: SigningContext.summary + signed.body, key: signed.summary.senderKey))
        #expect(!verifier.isValid(signature: signed.signature, message: SigningContext.announcement + signed.body, key: signed.summary.senderKey))
        // Nor under the contexts the handshake signs with.
        for context in ["handoff/handshake-server/v1", "handoff/handshake-client/v1"] {
            #expect(!verifier.isValid(signature: signed.signature, message: Array(context.utf8) + signed.body, key: signed.summary.senderKey))
        }
        #expect(!verifier.isValid(signature: signed.signature, message: signed.body, key: signed.summary.senderKey))
        // And the other way: the same body signed under the announcement context is no summary.
        let crossSigned = rfcIdentity().signature(for: SigningContext.announcement + signed.body)
        #expect(!SignedSummary(summary: signed.summary, body: signed.body, signature: crossSigned).verify(with: verifier))
    }

    @Test func expiry() {
        let summary = VectorInputs.summary
        #expect(!summary.isExpired(nowMillis: VectorInputs.expires - 1))
        #expect(summary.isExpired(nowMillis: VectorInputs.expires))
    }

    @Test func randomGarbageThrowsOrDecodesExactly() {
        for (index, bytes) in randomGarbage(seed: 0x5355_4D01, maxLength: 700).enumerated() {
            if let decoded = try? SignedSummary(decoding: bytes) {
                #expect(decoded.encoded == bytes, "garbage #\(index)")
            }
        }
    }

    @Test func mutatedSummariesThrowOrDecodeExactly() throws {
        var decoded = 0
        for (index, bytes) in mutations(of: vector, seed: 0x5355_4D02).enumerated() {
            guard let summary = try? SignedSummary(decoding: bytes) else { continue }
            decoded += 1
            #expect(summary.encoded == bytes, "mutation #\(index)")
            #expect(try summary.summary.encodedBody() == summary.body, "mutation #\(index)")
        }
        #expect(decoded > 0)
    }
}
