import HandoffCore
import HandoffCrypto
import Testing

@Suite struct AnnouncementTests {
    let verifier = Ed25519()

    static var present: Announcement {
        Announcement(kind: .present, senderKey: DeviceKey(bytes: rfcPublicKey)!, sequence: 1_700_000_000_001,
                     timestampMillis: VectorInputs.timestamp, transferPort: 52345, ttlSeconds: 30,
                     name: "alpha", summary: VectorInputs.signedSummary)
    }

    static var goodbye: Announcement {
        Announcement(kind: .goodbye, senderKey: DeviceKey(bytes: rfcPublicKey)!, sequence: 1_700_000_000_002,
                     timestampMillis: 1_700_000_000_500, transferPort: 52345, ttlSeconds: 0,
                     name: "alpha", summary: nil)
    }

    static let presentBody = hex("""
        484e4446 01 01
        d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a
        0000018bcfe56801
        0000018bcfe56800
        cc79 001e
        05 616c706861
        00ca
        """) + VectorInputs.summaryBody + VectorInputs.summarySignature

    static let presentSignature = hex("""
        9e89b7369fd3f4f002902de0ad3b7a3ee44aadb93ec35ac1f7e7c6ae79e4b039
        c26adaa42fa263393881d3193b5ecd3e537230b9a414e3a05a55d47324259204
        """)

    static let presentDatagram = presentBody + presentSignature

    static let goodbyeDatagram = hex("""
        484e4446 01 02
        d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a
        0000018bcfe56802
        0000018bcfe569f4
        cc79 0000
        05 616c706861
        0000
        4ff5cd3033422321baee48dd2e5bf341c03a60ba239067dce2a1ebfe996cfa72
        b99ebbb8a9305af4681a8e0496058112bbdfa41c5aba8ddae80bb2df63b66709
        """)

    // Offsets in the present vector.
    static let kindOffset = 5
    static let nameLengthOffset = 58
    static let summaryLengthOffset = 64

    @Test func presentVectorEncodesAndSigns() throws {
        #expect(try Self.present.encodedBody() == Self.presentBody)
        let datagram = try Self.present.signedDatagram(by: rfcIdentity())
        #expect(datagram == Self.presentDatagram)
        #expect(datagram.count == 332)
    }

    @Test func goodbyeVectorEncodesAndSigns() throws {
        #expect(try Self.goodbye.signedDatagram(by: rfcIdentity()) == Self.goodbyeDatagram)
        #expect(Self.goodbyeDatagram.count == 66 + 64)
    }

    @Test func presentVectorDecodesAndVerifies() throws {
        let received = try ReceivedAnnouncement(decoding: Self.presentDatagram)
        #expect(received.announcement == Self.present)
        #expect(received.body == Self.presentBody)
        #expect(received.signature == Self.presentSignature)
        #expect(received.verify(with: verifier))
        #expect(received.announcement.summary?.verify(with: verifier) == true)
    }

    @Test func goodbyeVectorDecodesAndVerifies() throws {
        let received = try ReceivedAnnouncement(decoding: Self.goodbyeDatagram)
        #expect(received.announcement == Self.goodbye)
        #expect(received.announcement.summary == nil)
        #expect(received.verify(with: verifier))
    }

    @Test(arguments: ["", "x", String(repeating: "n", count: 64), "Ålpha's laptop 💻"])
    func roundTrip(name: String) throws {
        var announcement = Self.present
        announcement.name = name
        announcement.sequence = .max
        announcement.transferPort = .max
        announcement.ttlSeconds = .max
        let datagram = try announcement.signedDatagram(by: rfcIdentity())
        let received = try ReceivedAnnouncement(decoding: datagram)
        #expect(received.announcement == announcement)
        #expect(received.verify(with: verifier))
        #expect(try received.announcement.encodedBody() == received.body)
    }

    @Test func nameOverTheLimitIsRefusedOnEncode() {
        var announcement = Self.present
        announcement.name = String(repeating: "n", count: 65)
        #expect(throws: WireError.tooLong(field: "device name", length: 65, limit: 64)) { try announcement.encodedBody() }
        #expect(throws: WireError.self) { try announcement.signedDatagram(by: rfcIdentity()) }
    }

    @Test func largestAnnouncementFitsInADatagram() throws {
        var summary = VectorInputs.summary
        summary.senderName = String(repeating: "n", count: Summary.nameBytes)
        summary.activityType = String(repeating: "t", count: ActivityLimits.typeBytes)
        summary.title = String(repeating: "x", count: ActivityLimits.titleBytes)
        var announcement = Self.present
        announcement.name = String(repeating: "n", count: Summary.nameBytes)
        announcement.summary = try summary.signed(by: rfcIdentity())
        let datagram = try announcement.signedDatagram(by: rfcIdentity())
        #expect(datagram.count <= Announcement.maximumBytes)
        #expect(try ReceivedAnnouncement(decoding: datagram).announcement == announcement)
    }

    @Test func everyPrefixThrowsExceptTheUnsignedBody() throws {
        let datagram = Self.presentDatagram
        for length in 0..<datagram.count where length != Self.presentBody.count {
            #expect(throws: WireError.self, "prefix \(length)") { try ReceivedAnnouncement(decoding: Array(datagram.prefix(length))) }
        }
        // The body alone is a well-formed datagram without a signature: parsed, never verified.
        let unsigned = try ReceivedAnnouncement(decoding: Self.presentBody)
        #expect(unsigned.signature == nil)
        #expect(unsigned.announcement == Self.present)
        #expect(!unsigned.verify(with: verifier))
    }

    @Test func partialOrExtraSignatureBytesThrow() {
        for extra in [1, 32, 63, 65, 128] {
            let bytes = Self.presentBody + [UInt8](repeating: 0xAB, count: extra)
            #expect(throws: WireError.invalidValue("signature must be 64 bytes, found \(extra)")) {
                try ReceivedAnnouncement(decoding: bytes)
            }
        }
        #expect(throws: WireError.invalidValue("signature must be 64 bytes, found 65")) {
            try ReceivedAnnouncement(decoding: Self.presentDatagram + [0])
        }
    }

    @Test func datagramsOver1200BytesThrow() {
        #expect(throws: WireError.tooLong(field: "announcement", length: 1201, limit: 1200)) {
            try ReceivedAnnouncement(decoding: Self.presentDatagram + [UInt8](repeating: 0, count: 1201 - 332))
        }
        #expect(throws: WireError.tooLong(field: "announcement", length: 65_535, limit: 1200)) {
            try ReceivedAnnouncement(decoding: [UInt8](repeating: 0, count: 65_535))
        }
    }

    @Test func badMagicThrows() {
        for index in 0..<4 {
            var bytes = Self.presentDatagram
            bytes[index] ^= 0x20
            #expect(throws: WireError.badMagic) { try ReceivedAnnouncement(decoding: bytes) }
        }
        #expect(throws: WireError.badMagic) { try ReceivedAnnouncement(decoding: Array("GET / HTTP/1.1\r\n".utf8)) }
    }

    @Test func unknownVersionThrows() {
        for version: UInt8 in [0, 2, 0xFF] {
            var bytes = Self.presentDatagram
            bytes[4] = version
            #expect(throws: WireError.unsupportedVersion(version)) { try ReceivedAnnouncement(decoding: bytes) }
        }
    }

    @Test func unknownKindThrows() {
        for kind: UInt8 in [0, 3, 0xFF] {
            var bytes = Self.presentDatagram
            bytes[Self.kindOffset] = kind
            #expect(throws: WireError.unknownKind(kind)) { try ReceivedAnnouncement(decoding: bytes) }
        }
    }

    @Test func nameLimitsAndTextAreChecked() {
        var bytes = Self.presentDatagram
        #expect(bytes[Self.nameLengthOffset] == 5)
        bytes[Self.nameLengthOffset] = 65
        #expect(throws: WireError.tooLong(field: "device name", length: 65, limit: 64)) { try ReceivedAnnouncement(decoding: bytes) }
        bytes = Self.presentDatagram
        bytes[Self.nameLengthOffset + 1] = 0x80
        #expect(throws: WireError.invalidText) { try ReceivedAnnouncement(decoding: bytes) }
    }

    @Test func summaryLengthIsChecked() {
        var bytes = Self.presentDatagram
        #expect(bytes[Self.summaryLengthOffset ... Self.summaryLengthOffset + 1] == [0x00, 0xCA])
        // Longer than what is left.
        bytes[Self.summaryLengthOffset] = 0xFF
        #expect(throws: WireError.self) { try ReceivedAnnouncement(decoding: bytes) }
        // Shorter than the summary: the summary is cut, so it fails to parse.
        bytes = Self.presentDatagram
        bytes[Self.summaryLengthOffset + 1] = 0xC9
        #expect(throws: WireError.self) { try ReceivedAnnouncement(decoding: bytes) }
        // A summary with a bad version inside an otherwise fine datagram.
        bytes = Self.presentDatagram
        bytes[Self.summaryLengthOffset + 2] = 9
        #expect(throws: WireError.unsupportedVersion(9)) { try ReceivedAnnouncement(decoding: bytes) }
    }

    @Test func flippingAnyBitFailsVerification() {
        var parsed = 0
        for (index, bytes) in singleBitFlips(of: Self.presentDatagram).enumerated() {
            guard let received = try? ReceivedAnnouncement(decoding: bytes) else { continue }
            parsed += 1
            #expect(!received.verify(with: verifier), "bit \(index) flipped and still verifies")
        }
        #expect(parsed > Self.presentDatagram.count * 6)
    }

    @Test func domainSeparationBetweenAnnouncementsAndSummaries() throws {
        let identity = rfcIdentity()
        let body = Self.presentBody
        // The announcement body signed under the summary context does not verify as an announcement.
        let summarySigned = identity.signature(for: SigningContext.summary + body)
        let forged = try ReceivedAnnouncement(decoding: body + summarySigned)
        #expect(!forged.verify(with: verifier))
        // The real datagram's signature does not verify as a summary signature over the same bytes.
        #expect(!verifier.isValid(signature: Self.presentSignature, message: SigningContext.summary + body, key: identity.publicKey))
        // A summary's signature reused as the datagram signature of its own bytes fails too.
        let summaryBytes = VectorInputs.summaryBody
        #expect(!verifier.isValid(signature: VectorInputs.summarySignature, message: SigningContext.announcement + summaryBytes,
                                  key: identity.publicKey))
    }

    @Test func anotherKeyCannotSpeakForTheSender() throws {
        let datagram = try Self.present.signedDatagram(by: rfcIdentity2())
        let received = try ReceivedAnnouncement(decoding: datagram)
        #expect(received.announcement.senderKey.bytes == rfcPublicKey)
        #expect(!received.verify(with: verifier))
    }

    @Test func randomGarbageThrows() {
        for (index, bytes) in randomGarbage(seed: 0x414E_4E01, maxLength: 1300).enumerated() {
            if let received = try? ReceivedAnnouncement(decoding: bytes) {
                Issue.record("garbage #\(index) decoded: \(received.announcement)")
            }
        }
    }

    @Test func garbageWithAValidHeaderThrowsOrDecodesExactly() throws {
        let header = Array(Self.presentDatagram.prefix(6))
        for (index, tail) in randomGarbage(seed: 0x414E_4E02, maxLength: 400).enumerated() {
            let bytes = header + tail
            if let received = try? ReceivedAnnouncement(decoding: bytes) {
                #expect(try received.announcement.encodedBody() == received.body, "garbage #\(index)")
                #expect(received.body + (received.signature ?? []) == bytes, "garbage #\(index)")
            }
        }
    }

    @Test func mutatedDatagramsThrowOrDecodeExactly() throws {
        var decoded = 0
        for (index, bytes) in mutations(of: Self.presentDatagram, seed: 0x414E_4E03).enumerated() {
            guard let received = try? ReceivedAnnouncement(decoding: bytes) else { continue }
            decoded += 1
            #expect(try received.announcement.encodedBody() == received.body, "mutation #\(index)")
            #expect(received.body + (received.signature ?? []) == bytes, "mutation #\(index)")
        }
        #expect(decoded > 0)
    }
}
