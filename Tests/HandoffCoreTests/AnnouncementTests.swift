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
        00
        05 616c706861
        00ca
        """) + VectorInputs.summaryBody + VectorInputs.summarySignature

    static let presentSignature = hex("""
        c48944eb4d3b7a852458c2eb3373ade6947f0a727e0bf6b3567857a04ea15c29
        304a39047729833dfb24c7fc7298cd38a8097a9f888841a3e42ef3bad202480a
        """)

    static let presentDatagram = presentBody + presentSignature

    static let goodbyeDatagram = hex("""
        484e4446 01 02
        d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a
        0000018bcfe56802
        0000018bcfe569f4
        cc79 0000
        00
        05 616c706861
        0000
        14f0a19d01943fc3ae2d024657711a8ce2146c26d7348ba3fc7310831453ef55
        0a9ead2083d544ab4235a1b5462c06a7f9850c8cd63eba7c156e3e23e5062007
        """)

    // Offsets in the present vector.
    static let kindOffset = 5
    static let stateOffset = 58
    static let nameLengthOffset = 59
    static let summaryLengthOffset = 65

    @Test func presentVectorEncodesAndSigns() throws {
        #expect(try Self.present.encodedBody() == Self.presentBody)
        let datagram = try Self.present.signedDatagram(by: rfcIdentity())
        #expect(datagram == Self.presentDatagram)
        #expect(datagram.count == 333)
    }

    @Test func goodbyeVectorEncodesAndSigns() throws {
        #expect(try Self.goodbye.signedDatagram(by: rfcIdentity()) == Self.goodbyeDatagram)
        #expect(Self.goodbyeDatagram.count == 67 + 64)
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
            try ReceivedAnnouncement(decoding: Self.presentDatagram + [UInt8](repeating: 0, count: 1201 - 333))
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
        for kind: UInt8 in [0, 4, 0xFF] {
            var bytes = Self.presentDatagram
            bytes[Self.kindOffset] = kind
            #expect(throws: WireError.unknownKind(kind)) { try ReceivedAnnouncement(decoding: bytes) }
        }
    }

    /// The sender-state byte after the ttl: every combination round-trips, bits this
    /// version does not know are kept as they came (the signature covers them).
    @Test func senderStateRoundTripsAndIsSigned() throws {
        #expect(Self.presentDatagram[Self.stateOffset] == 0)
        let states: [Announcement.SenderState] = [[], .disabled, .bluetoothConfigured, [.bluetoothConfigured, .bluetoothWorking],
                                                  [.disabled, .bluetoothConfigured, .bluetoothWorking]]
        for state in states {
            var announcement = Self.goodbye
            announcement.state = state
            let datagram = try announcement.signedDatagram(by: rfcIdentity())
            #expect(datagram[Self.stateOffset] == state.rawValue)
            let received = try ReceivedAnnouncement(decoding: datagram)
            #expect(received.announcement.state == state)
            #expect(received.announcement == announcement)
            #expect(received.verify(with: verifier))
            // Another state under the same signature does not verify.
            var altered = datagram
            altered[Self.stateOffset] ^= 0x04
            #expect(!(try ReceivedAnnouncement(decoding: altered)).verify(with: verifier))
        }
        var unknown = Self.presentBody
        unknown[Self.stateOffset] = 0xF9
        let received = try ReceivedAnnouncement(decoding: unknown)
        #expect(received.announcement.state.contains(.disabled))
        #expect(received.announcement.state.rawValue == 0xF9)
        #expect(try received.announcement.encodedBody() == unknown)
    }

    /// Kind 3 is the clear pairing beacon: it parses (and its signature covers the kind).
    @Test func pairingBeaconsParseAndSign() throws {
        var beacon = Self.goodbye
        beacon.kind = .pairing
        beacon.ttlSeconds = 15
        let datagram = try beacon.signedDatagram(by: rfcIdentity())
        #expect(datagram[Self.kindOffset] == 3)
        let received = try ReceivedAnnouncement(decoding: datagram)
        #expect(received.announcement == beacon)
        #expect(received.verify(with: verifier))
        // The present vector relabelled as a beacon does not verify.
        var relabelled = Self.presentDatagram
        relabelled[Self.kindOffset] = 3
        let forged = try ReceivedAnnouncement(decoding: relabelled)
        #expect(forged.announcement.kind == .pairing)
        #expect(!forged.verify(with: verifier))
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

/// The outer codec of sealed announcements (version 2). The sealing itself is
/// tested in HandoffCryptoTests (AnnouncementSealTests); this vector is the same.
@Suite struct SealedAnnouncementTests {
    /// Vectors.md, "Sealed announcement": A's goodbye sealed to B, epoch 1888888, nonce 00 01 … 17.
    static let hint = hex("39de901237ccf489")
    static let nonce = Array(UInt8(0)..<UInt8(24))
    static let ciphertext = hex("""
        ec9dafacf53840d3b9988b58b66fe622eea9f66de45177c826f55b56898fabda
        3003bcbd94983a6121079de93c7fc164436819506a10904e9155ba9c0200f855
        ab752961588e7de76c976271cbb39bed55796332eec3a354df1e3b463eadddf6
        365f709e9503be18e0bacb5f9fea36ec4942b676ee385243955a6b909d8169e5
        84bff382b0e9ae0618a5b6a6956584f7d3fafd
        """)
    static let header = hex("484e4446 02 01") + hint + nonce
    static let datagram = header + ciphertext

    @Test func vectorDecodesAndEncodes() throws {
        #expect(Self.datagram.count == 185)
        #expect(Self.ciphertext.count == AnnouncementTests.goodbyeDatagram.count + SealedAnnouncement.tagBytes)
        let sealed = try SealedAnnouncement(decoding: Self.datagram)
        #expect(sealed.hint == Self.hint)
        #expect(sealed.nonce == Self.nonce)
        #expect(sealed.ciphertext == Self.ciphertext)
        #expect(sealed.header == Self.header)
        #expect(sealed.header.count == SealedAnnouncement.headerBytes)
        #expect(SealedAnnouncement.headerBytes == 38)
        #expect(sealed.encoded == Self.datagram)
        #expect(SealedAnnouncement(hint: Self.hint, nonce: Self.nonce, ciphertext: Self.ciphertext) == sealed)
        #expect(SealedAnnouncement.header(hint: Self.hint, nonce: Self.nonce) == Self.header)
    }

    @Test func versionOfTellsBeaconsFromSealedAnnouncements() {
        #expect(SealedAnnouncement.version(of: Self.datagram) == 2)
        #expect(SealedAnnouncement.version(of: AnnouncementTests.presentDatagram) == 1)
        #expect(SealedAnnouncement.version(of: AnnouncementTests.goodbyeDatagram) == 1)
        #expect(SealedAnnouncement.version(of: Array("HNDF".utf8) + [7]) == 7)
        for bytes in [[], [0x48], Array("HND".utf8), Array("HNDF".utf8), Array("hndf".utf8) + [2], Array("GET / HTTP/1.1".utf8)] {
            #expect(SealedAnnouncement.version(of: bytes) == nil, "\(bytes)")
        }
    }

    @Test func everyPrefixShorterThanHeaderAndTagThrows() throws {
        for length in 0..<(SealedAnnouncement.headerBytes + SealedAnnouncement.tagBytes) {
            #expect(throws: WireError.self, "prefix \(length)") { try SealedAnnouncement(decoding: Array(Self.datagram.prefix(length))) }
        }
        // Longer prefixes are well-formed: only the AEAD can tell they were cut.
        for length in (SealedAnnouncement.headerBytes + SealedAnnouncement.tagBytes)...Self.datagram.count {
            let sealed = try SealedAnnouncement(decoding: Array(Self.datagram.prefix(length)))
            #expect(sealed.ciphertext == Array(Self.ciphertext.prefix(length - SealedAnnouncement.headerBytes)))
        }
    }

    @Test func tooShortForTheTagThrows() throws {
        for length in [0, 1, 15] {
            #expect(throws: WireError.truncated(needed: 16, available: length)) {
                try SealedAnnouncement(decoding: Self.header + [UInt8](repeating: 0xEE, count: length))
            }
        }
        // A tag and nothing else: an empty plaintext, as far as the codec can tell.
        #expect(try SealedAnnouncement(decoding: Self.header + [UInt8](repeating: 0xEE, count: 16)).ciphertext.count == 16)
        // The header cut inside the hint or the nonce.
        #expect(throws: WireError.truncated(needed: 8, available: 3)) { try SealedAnnouncement(decoding: Array(Self.header.prefix(9))) }
        #expect(throws: WireError.truncated(needed: 24, available: 10)) { try SealedAnnouncement(decoding: Array(Self.header.prefix(24))) }
    }

    @Test func wrongVersionOrKindThrows() {
        // Version 1 is the clear (signed) form: never taken for a sealed one.
        for version: UInt8 in [0, 1, 3, 0xFF] {
            var bytes = Self.datagram
            bytes[4] = version
            #expect(throws: WireError.unsupportedVersion(version)) { try SealedAnnouncement(decoding: bytes) }
        }
        for kind: UInt8 in [0, 2, 3, 0xFF] {
            var bytes = Self.datagram
            bytes[5] = kind
            #expect(throws: WireError.unknownKind(kind)) { try SealedAnnouncement(decoding: bytes) }
        }
        for index in 0..<4 {
            var bytes = Self.datagram
            bytes[index] ^= 0x20
            #expect(throws: WireError.badMagic) { try SealedAnnouncement(decoding: bytes) }
        }
        // And the other way: a sealed datagram is not a clear announcement.
        #expect(throws: WireError.unsupportedVersion(2)) { try ReceivedAnnouncement(decoding: Self.datagram) }
    }

    @Test func oversizeThrows() throws {
        let filler = [UInt8](repeating: 0xAB, count: Announcement.maximumBytes - Self.header.count)
        #expect(try SealedAnnouncement(decoding: Self.header + filler).ciphertext.count == filler.count)
        #expect(throws: WireError.tooLong(field: "announcement", length: 1201, limit: 1200)) {
            try SealedAnnouncement(decoding: Self.header + filler + [0])
        }
        #expect(throws: WireError.tooLong(field: "announcement", length: 65_535, limit: 1200)) {
            try SealedAnnouncement(decoding: [UInt8](repeating: 0, count: 65_535))
        }
    }

    @Test func randomGarbageThrowsOrDecodesExactly() {
        for (index, bytes) in randomGarbage(seed: 0x5345_4101, maxLength: 1300).enumerated() {
            if let sealed = try? SealedAnnouncement(decoding: bytes) {
                Issue.record("garbage #\(index) decoded: \(sealed)")
            }
        }
        var decoded = 0
        for (index, tail) in randomGarbage(seed: 0x5345_4102, maxLength: 400).enumerated() {
            let bytes = Array(Self.header.prefix(6)) + tail
            guard let sealed = try? SealedAnnouncement(decoding: bytes) else {
                #expect(tail.count < SealedAnnouncement.hintBytes + SealedAnnouncement.nonceBytes + SealedAnnouncement.tagBytes, "garbage #\(index)")
                continue
            }
            decoded += 1
            #expect(sealed.encoded == bytes, "garbage #\(index)")
        }
        #expect(decoded > 1000)
    }
}
