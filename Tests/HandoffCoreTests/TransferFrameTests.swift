import HandoffCore
import HandoffCrypto
import Testing

@Suite struct TransferFrameTests {
    // The handshake messages of the handshake vector (Docs/PROTOCOL.md, "Handshake"): the
    // frames carry them opaquely, the handshake checks their sizes.
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

    static let helloBytes = hex("02 05 00000032") + hello
    static let serverHelloBytes = hex("02 06 00000090") + serverHello
    static let clientAuthBytes = hex("02 07 00000070") + clientAuth

    /// B fetching the summary vector: it cites the summary; the channel proves who B is.
    static var fetch: TransferFrame.FetchRequest {
        TransferFrame.FetchRequest(summarySender: DeviceKey(bytes: rfcPublicKey)!, summarySequence: VectorInputs.timestamp,
                                   payloadDigest: VectorInputs.payloadDigest)
    }

    static let fetchBytes = hex("""
        02 02 00000048
        d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a
        0000018bcfe56800
        2c8c27a5487834f63e6f0f7ba5d822ac8b52fdbe39ab20af91d104f3ccfcb951
        """)

    static let payloadBytes = hex("02 03 0000008f") + VectorInputs.payload

    /// B resuming after the first record (1 MiB of plaintext less the 6-byte header).
    static var fetchFrom: TransferFrame.FetchRequest {
        var request = fetch
        request.offset = 1_048_570
        return request
    }

    static let fetchFromBytes = hex("""
        02 0f 00000050
        d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a
        0000018bcfe56800
        2c8c27a5487834f63e6f0f7ba5d822ac8b52fdbe39ab20af91d104f3ccfcb951
        00000000000ffffa
        """)

    /// The payload vector from byte 100 on: 43 bytes after the offset.
    static let payloadFromBytes = hex("02 10 00000033 0000000000000064") + VectorInputs.payload[100...]

    static let refusalBytes = hex("02 04 00000012 0b 6e6f742d63757272656e74 0004 676f6e65")
    static let refusal = TransferFrame.Refusal(code: .notCurrent, message: "gone")

    // Pairing: the nonces and commitment of the pairing-code vector.
    static let initiatorNonce = Array(UInt8(0)..<UInt8(32))
    static let responderNonce = Array(UInt8(32)..<UInt8(64))
    static let commitment = hex("c6a3ecc47c322446fa71a50943d6ecfeae79835a9297a8923e3837a5e96638b0")

    static let pairRequestBytes = hex("02 08 00000005 04 62657461")
    static let pairCommitBytes = hex("02 09 00000026 05 616c706861") + commitment
    static let pairNonceBytes = hex("02 0a 00000020") + initiatorNonce
    static let pairRevealBytes = hex("02 0b 00000020") + responderNonce
    static let pairAcceptBytes = hex("02 0c 00000001 01")
    static let pairDeclineBytes = hex("02 0c 00000001 00")
    /// A's agreement key, A's discovery secret (Docs/PROTOCOL.md, "Keys"), period 1888888.
    static let pairKeys = TransferFrame.PairKeys(
        agreementKey: hex("ec774eba91cb1cd903c21e53db220b09292563a1b2c5017f4fbdcc21310a3166"),
        discoverySecret: hex("570b55998de77aa8d67d563ba2dadcab67fa546a9f8769eac2b5337b8ea104be"), epoch: 1_888_888)
    static let pairKeysBytes = hex("""
        02 0d 00000048
        ec774eba91cb1cd903c21e53db220b09292563a1b2c5017f4fbdcc21310a3166
        570b55998de77aa8d67d563ba2dadcab67fa546a9f8769eac2b5337b8ea104be
        00000000001cd278
        """)
    static let pairStoredBytes = hex("02 0e 00000001 01")
    static let pairNotStoredBytes = hex("02 0e 00000001 00")

    static var vectors: [(TransferFrame, [UInt8])] {
        [(.hello(hello), helloBytes), (.serverHello(serverHello), serverHelloBytes), (.clientAuth(clientAuth), clientAuthBytes),
         (.fetch(fetch), fetchBytes), (.payload(VectorInputs.payload), payloadBytes), (.refusal(refusal), refusalBytes),
         (.fetch(fetchFrom), fetchFromBytes), (.payloadFrom(offset: 100, bytes: Array(VectorInputs.payload[100...])), payloadFromBytes),
         (.pairRequest(name: "beta"), pairRequestBytes), (.pairCommit(name: "alpha", commitment: commitment), pairCommitBytes),
         (.pairNonce(initiatorNonce), pairNonceBytes), (.pairReveal(responderNonce), pairRevealBytes),
         (.pairConfirm(accepted: true), pairAcceptBytes), (.pairConfirm(accepted: false), pairDeclineBytes),
         (.pairKeys(pairKeys), pairKeysBytes), (.pairStored(true), pairStoredBytes), (.pairStored(false), pairNotStoredBytes)]
    }

    /// Every kind this version knows.
    static let kinds: ClosedRange<UInt8> = 2...16

    @Test func staticVectorsEncode() {
        for (frame, bytes) in Self.vectors {
            #expect(frame.encoded() == bytes, "\(frame)")
        }
    }

    @Test func staticVectorsDecode() throws {
        for (frame, bytes) in Self.vectors {
            #expect(try TransferFrame(decoding: bytes) == frame)
            let (kind, length) = try TransferFrame.bodyLength(header: Array(bytes.prefix(TransferFrame.headerBytes)))
            #expect(length == bytes.count - TransferFrame.headerBytes)
            #expect(try TransferFrame(kind: kind, body: Array(bytes.dropFirst(TransferFrame.headerBytes))) == frame)
        }
    }

    /// What SecureChannel sends: the header and the body apart, the payload without a copy.
    @Test func encodedPartsAreTheHeaderAndTheBody() {
        for (frame, bytes) in Self.vectors {
            let (header, body) = frame.encodedParts()
            #expect(header == Array(bytes.prefix(TransferFrame.headerBytes)), "\(frame)")
            #expect(body == Array(bytes.dropFirst(TransferFrame.headerBytes)), "\(frame)")
        }
        #expect(TransferFrame.payload([]).encodedParts().header == hex("02 03 00000000"))
        #expect(TransferFrame.payload([]).encodedParts().body.isEmpty)
    }

    @Test func everyKindHasAVector() {
        #expect(Set(Self.vectors.map { $0.1[1] }) == Set(Self.kinds))
        #expect(TransferFrame.version == 2)
    }

    /// A resume has one encoding: offset 0 is a plain fetch or payload, and an
    /// offset past the largest payload is refused before anything is read.
    @Test func resumeOffsetsAreBounded() throws {
        var zero = Self.fetch
        zero.offset = 0
        #expect(TransferFrame.fetch(zero).encoded() == Self.fetchBytes)
        let body = Array(Self.fetchBytes.dropFirst(TransferFrame.headerBytes))
        for offset: UInt64 in [0, UInt64(TransferFrame.maximumBodyBytes), .max] {
            var tail = ByteWriter()
            tail.write(offset)
            #expect(throws: WireError.self) { try TransferFrame(kind: 15, body: body + tail.bytes) }
            #expect(throws: WireError.self) { try TransferFrame(kind: 16, body: tail.bytes + [1, 2, 3]) }
        }
        // A body past the largest payload, counted from the offset.
        var near = ByteWriter()
        near.write(UInt64(TransferFrame.maximumBodyBytes - 2))
        #expect(throws: WireError.tooLong(field: "payload from \(TransferFrame.maximumBodyBytes - 2)", length: 3, limit: 2)) {
            try TransferFrame(kind: 16, body: near.bytes + [1, 2, 3])
        }
        #expect(try TransferFrame(kind: 16, body: near.bytes + [1, 2]) == .payloadFrom(offset: UInt64(TransferFrame.maximumBodyBytes - 2), bytes: [1, 2]))
        // Inside the channel a payloadFrom may carry the offset on top of the largest payload; nothing more.
        #expect(try TransferFrame.bodyLength(header: TransferFrame.header(payloadFrom: 1, count: TransferFrame.maximumBodyBytes)).length
            == TransferFrame.maximumBodyBytes + 8)
        #expect(throws: WireError.self) {
            try TransferFrame.bodyLength(header: TransferFrame.header(payloadFrom: 1, count: TransferFrame.maximumBodyBytes + 1))
        }
        // Neither travels in the clear.
        #expect(throws: WireError.self) { try TransferFrame.bodyLength(header: [2, 15, 0, 0, 0, 80], limits: .clear) }
        #expect(throws: WireError.self) { try TransferFrame.bodyLength(header: [2, 16, 0, 0, 0, 9], limits: .clear) }
        // Truncated offsets.
        for cut in 0..<8 {
            #expect(throws: WireError.self) { try TransferFrame(kind: 15, body: body + [UInt8](repeating: 0, count: cut)) }
            #expect(throws: WireError.self) { try TransferFrame(kind: 16, body: [UInt8](repeating: 0, count: cut)) }
        }
    }

    @Test func emptyAndLargePayloadsRoundTrip() throws {
        #expect(TransferFrame.payload([]).encoded() == hex("02 03 00000000"))
        #expect(try TransferFrame(decoding: hex("02 03 00000000")) == .payload([]))
        let big = [UInt8](repeating: 0x5A, count: 1 << 20)
        #expect(try TransferFrame(decoding: TransferFrame.payload(big).encoded()) == .payload(big))
    }

    /// Handshake bodies are opaque to the codec (the handshake checks their exact sizes)
    /// but bounded, so a peer cannot make the server hold a large one before the handshake.
    @Test func handshakeBodiesAreBounded() throws {
        for kind: UInt8 in 5...7 {
            for length in [0, 1, 144, 256] {
                let body = [UInt8](repeating: 0xA5, count: length)
                let frame = try TransferFrame(kind: kind, body: body)
                #expect(try TransferFrame(decoding: frame.encoded()) == frame)
                #expect(frame.encoded()[1] == kind)
            }
            #expect(throws: WireError.tooLong(field: "handshake message", length: 257, limit: 256)) {
                try TransferFrame(kind: kind, body: [UInt8](repeating: 0, count: 257))
            }
        }
        #expect(try TransferFrame(kind: 5, body: []) == .hello([]))
        #expect(try TransferFrame(kind: 6, body: [1]) == .serverHello([1]))
        #expect(try TransferFrame(kind: 7, body: [2]) == .clientAuth([2]))
    }

    @Test func headerErrors() {
        // Version 1 (challenge and signed fetch) is gone: refused, not misread.
        for version: UInt8 in [0, 1, 3, 0xFF] {
            #expect(throws: WireError.unsupportedVersion(version)) { try TransferFrame.bodyLength(header: [version, 3, 0, 0, 0, 0]) }
            #expect(throws: WireError.unsupportedVersion(version)) { try TransferFrame(decoding: [version] + Self.payloadBytes.dropFirst()) }
        }
        // The v1 vectors themselves.
        #expect(throws: WireError.unsupportedVersion(1)) { try TransferFrame(decoding: hex("01 04 00000012 0b 6e6f742d63757272656e74 0004 676f6e65")) }
        #expect(throws: WireError.unsupportedVersion(1)) { try TransferFrame(decoding: hex("01 03 00000000")) }
        // Kind 1 was the v1 challenge; 0 and 17 and up were never used.
        for kind: UInt8 in [0, 1, 17, 0x80, 0xFF] {
            #expect(throws: WireError.unknownKind(kind)) { try TransferFrame.bodyLength(header: [2, kind, 0, 0, 0, 0]) }
            #expect(throws: WireError.unknownKind(kind)) { try TransferFrame(kind: kind, body: []) }
            #expect(throws: WireError.unknownKind(kind)) { try TransferFrame(decoding: [2, kind, 0, 0, 0, 0]) }
        }
        #expect(throws: WireError.truncated(needed: 4, available: 2)) { try TransferFrame.bodyLength(header: hex("02 03 0000")) }
        #expect(throws: WireError.truncated(needed: 1, available: 0)) { try TransferFrame.bodyLength(header: []) }
    }

    /// Finding 2 of issue 15: a clear handshake frame could declare 64 MiB, read in
    /// full before its kind was checked. Before authentication only small handshake
    /// frames pass, decided from the header alone.
    @Test func clearLimitsRefuseLargeAndNonHandshakeFramesFromTheHeader() throws {
        func header(_ kind: UInt8, _ length: UInt32) -> [UInt8] {
            var writer = ByteWriter()
            writer.write(UInt8(2))
            writer.write(kind)
            writer.write(length)
            return writer.bytes
        }
        for kind: UInt8 in [5, 6, 7] {
            #expect(try TransferFrame.bodyLength(header: header(kind, 256), limits: .clear) == (kind, 256))
            #expect(throws: WireError.tooLong(field: "frame", length: 257, limit: 256)) {
                try TransferFrame.bodyLength(header: header(kind, 257), limits: .clear)
            }
            #expect(throws: WireError.tooLong(field: "frame", length: 64 << 20, limit: 256)) {
                try TransferFrame.bodyLength(header: header(kind, 64 << 20), limits: .clear)
            }
        }
        for kind: UInt8 in [2, 3, 8, 9, 10, 11, 12] {
            #expect(throws: WireError.self) { try TransferFrame.bodyLength(header: header(kind, 1), limits: .clear) }
            #expect(try TransferFrame.bodyLength(header: header(kind, 1), limits: .authenticated) == (kind, 1))
        }
        #expect(try TransferFrame.bodyLength(header: header(4, UInt32(TransferFrame.maximumRefusalBodyBytes)), limits: .clear).length
                == TransferFrame.maximumRefusalBodyBytes)
    }

    @Test func bodyLengthLimit() throws {
        let limit = TransferFrame.maximumBodyBytes
        var header = ByteWriter()
        header.write(UInt8(2))
        header.write(UInt8(3))
        header.write(UInt32(limit))
        #expect(try TransferFrame.bodyLength(header: header.bytes) == (3, limit))
        for length in [UInt32(limit + 1), .max] {
            for kind: UInt8 in [3, 5] {
                var over = ByteWriter()
                over.write(UInt8(2))
                over.write(kind)
                over.write(length)
                #expect(throws: WireError.tooLong(field: "frame", length: Int(length), limit: limit)) {
                    try TransferFrame.bodyLength(header: over.bytes)
                }
                // The whole-frame decoder refuses it from the header alone, before looking at the body.
                #expect(throws: WireError.tooLong(field: "frame", length: Int(length), limit: limit)) {
                    try TransferFrame(decoding: over.bytes + [0])
                }
            }
        }
    }

    @Test func truncationAtEveryPrefixThrows() {
        for (frame, bytes) in Self.vectors {
            for length in 0..<bytes.count {
                #expect(throws: WireError.self, "\(frame) prefix \(length)") { try TransferFrame(decoding: Array(bytes.prefix(length))) }
            }
        }
    }

    @Test func trailingBytesThrow() {
        for (_, bytes) in Self.vectors {
            #expect(throws: WireError.trailingBytes(1)) { try TransferFrame(decoding: bytes + [0]) }
        }
        // Bodies with more than their fields (the declared length covers the extra bytes).
        #expect(throws: WireError.trailingBytes(1)) { try TransferFrame(kind: 2, body: Array(Self.fetchBytes.dropFirst(6)) + [0]) }
        #expect(throws: WireError.trailingBytes(2)) { try TransferFrame(kind: 4, body: Array(Self.refusalBytes.dropFirst(6)) + [0, 0]) }
        #expect(throws: WireError.trailingBytes(1)) { try TransferFrame(kind: 8, body: Array(Self.pairRequestBytes.dropFirst(6)) + [0]) }
        #expect(throws: WireError.trailingBytes(1)) { try TransferFrame(kind: 9, body: Array(Self.pairCommitBytes.dropFirst(6)) + [0]) }
        #expect(throws: WireError.trailingBytes(1)) { try TransferFrame(kind: 10, body: Self.initiatorNonce + [0]) }
        #expect(throws: WireError.trailingBytes(32)) { try TransferFrame(kind: 11, body: Self.responderNonce + Self.initiatorNonce) }
        #expect(throws: WireError.trailingBytes(1)) { try TransferFrame(kind: 12, body: [1, 1]) }
    }

    @Test func shortBodiesThrow() {
        // A v1-style fetch cut to the v2 fields' size still needs all 72 bytes.
        #expect(throws: WireError.truncated(needed: 32, available: 31)) { try TransferFrame(kind: 2, body: Array(Self.fetchBytes.dropFirst(6).dropLast())) }
        #expect(throws: WireError.truncated(needed: 32, available: 0)) { try TransferFrame(kind: 2, body: Array(rfcPublicKey) + [0, 0, 0, 0, 0, 0, 0, 1]) }
        #expect(throws: WireError.truncated(needed: 32, available: 31)) { try TransferFrame(kind: 10, body: Array(Self.initiatorNonce.dropLast())) }
        #expect(throws: WireError.truncated(needed: 32, available: 0)) { try TransferFrame(kind: 11, body: []) }
        #expect(throws: WireError.truncated(needed: 1, available: 0)) { try TransferFrame(kind: 12, body: []) }
        #expect(throws: WireError.truncated(needed: 1, available: 0)) { try TransferFrame(kind: 8, body: []) }
        #expect(throws: WireError.truncated(needed: 4, available: 3)) { try TransferFrame(kind: 8, body: hex("04 626574")) }
        // A commitment that is missing or short.
        #expect(throws: WireError.truncated(needed: 32, available: 0)) { try TransferFrame(kind: 9, body: hex("05 616c706861")) }
        #expect(throws: WireError.truncated(needed: 32, available: 31)) {
            try TransferFrame(kind: 9, body: hex("05 616c706861") + Array(Self.commitment.dropLast()))
        }
        // Nonces and commitments of the wrong size encode as given, and the peer refuses them.
        #expect(throws: WireError.self) { try TransferFrame(decoding: TransferFrame.pairNonce(Array(Self.initiatorNonce.dropLast())).encoded()) }
        #expect(throws: WireError.self) { try TransferFrame(decoding: TransferFrame.pairReveal(Self.responderNonce + [0]).encoded()) }
        #expect(throws: WireError.self) { try TransferFrame(decoding: TransferFrame.pairCommit(name: "a", commitment: [1, 2]).encoded()) }
    }

    @Test func pairConfirmationIsZeroOrOne() throws {
        for flag: UInt8 in [2, 0x80, 0xFF] {
            #expect(throws: WireError.invalidValue("confirmation must be 0 or 1")) { try TransferFrame(kind: 12, body: [flag]) }
        }
    }

    @Test func pairingNamesAreCheckedLikeAnnouncementNames() throws {
        let longest = String(repeating: "n", count: Summary.nameBytes)
        for frame in [TransferFrame.pairRequest(name: longest), .pairCommit(name: longest, commitment: Self.commitment),
                      .pairRequest(name: ""), .pairRequest(name: "Ålpha's laptop 💻")] {
            #expect(try TransferFrame(decoding: frame.encoded()) == frame)
        }
        // Too long on the wire: refused.
        let tooLong = [UInt8(65)] + [UInt8](repeating: 0x6E, count: 65)
        #expect(throws: WireError.tooLong(field: "device name", length: 65, limit: 64)) { try TransferFrame(kind: 8, body: tooLong) }
        #expect(throws: WireError.tooLong(field: "device name", length: 65, limit: 64)) { try TransferFrame(kind: 9, body: tooLong + Self.commitment) }
        // Too long when sending: cut at a character boundary.
        guard case let .pairRequest(sent) = try TransferFrame(decoding: TransferFrame.pairRequest(name: "a" + String(repeating: "é", count: 40)).encoded()) else {
            Issue.record("not a pair request")
            return
        }
        #expect(sent == "a" + String(repeating: "é", count: 31))
        // Not UTF-8, or text that could rewrite the terminal showing it.
        #expect(throws: WireError.invalidText) { try TransferFrame(kind: 8, body: hex("02 c328")) }
        for name in ["a\nb", "tab\there", "\u{1B}[2J", "bidi\u{202E}txt", "line\u{2028}sep"] {
            let body = [UInt8(name.utf8.count)] + Array(name.utf8)
            #expect(throws: WireError.invalidValue("device name contains control characters"), "\(name.debugDescription)") {
                try TransferFrame(kind: 8, body: body)
            }
            #expect(throws: WireError.invalidValue("device name contains control characters"), "\(name.debugDescription)") {
                try TransferFrame(kind: 9, body: body + Self.commitment)
            }
        }
    }

    @Test func refusalMessageLimits() throws {
        let atLimit = TransferFrame.Refusal(code: .trust, message: String(repeating: "m", count: 512))
        #expect(try TransferFrame(decoding: TransferFrame.refusal(atLimit).encoded()) == .refusal(atLimit))
        // Over the limit on the wire: refused.
        var writer = ByteWriter()
        writer.write(UInt8(5))
        writer.write(contentsOf: "trust".utf8)
        writer.write(UInt16(513))
        writer.write([UInt8](repeating: 0x6D, count: 513))
        #expect(throws: WireError.tooLong(field: "refusal message", length: 513, limit: 512)) {
            try TransferFrame(kind: 4, body: writer.bytes)
        }
        // Over the limit when sending: cut at a character boundary, never mid-character.
        let long = TransferFrame.Refusal(code: .trust, message: "a" + String(repeating: "é", count: 300))
        guard case let .refusal(sent) = try TransferFrame(decoding: TransferFrame.refusal(long).encoded()) else {
            Issue.record("not a refusal")
            return
        }
        #expect(sent.message == "a" + String(repeating: "é", count: 255))
        #expect(sent.message.utf8.count == 511)
    }

    @Test func refusalCodesFailClosed() throws {
        for code in HandoffError.Code.allCases {
            let refusal = TransferFrame.Refusal(code: code, message: "m")
            #expect(try TransferFrame(decoding: TransferFrame.refusal(refusal).encoded()) == .refusal(refusal))
        }
        // A code from a newer peer becomes an internal error rather than being guessed at.
        let unknown = hex("02 04 0000000e 08 6e65772d636f6465 0003 6d7367")
        #expect(try TransferFrame(decoding: unknown) == .refusal(.init(code: .internal, message: "msg")))
        let badText = hex("02 04 00000005 01 ff 0001 6d")
        #expect(throws: WireError.invalidText) { try TransferFrame(decoding: badText) }
        let badMessage = hex("02 04 0000000a 05 7472757374 0002 c328")
        #expect(throws: WireError.invalidText) { try TransferFrame(decoding: badMessage) }
    }

    @Test func utf8PrefixKeepsWholeCharacters() {
        #expect("hello".utf8Prefix(maxBytes: 10) == "hello")
        #expect("hello".utf8Prefix(maxBytes: 3) == "hel")
        #expect("héllo".utf8Prefix(maxBytes: 2) == "h")
        #expect("👍🏽ok".utf8Prefix(maxBytes: 4) == "")
        #expect("👍🏽ok".utf8Prefix(maxBytes: 9) == "👍🏽o")
        #expect("abc".utf8Prefix(maxBytes: 0) == "")
    }

    @Test func randomGarbageThrowsOrRoundTrips() throws {
        for (index, bytes) in randomGarbage(seed: 0x4652_4D01).enumerated() {
            if let frame = try? TransferFrame(decoding: bytes) {
                #expect(try TransferFrame(decoding: frame.encoded()) == frame, "garbage #\(index)")
            }
        }
        // Past the version check: a v2 header with a random kind, length and body.
        for (index, tail) in randomGarbage(seed: 0x4652_4D04).enumerated() {
            if let frame = try? TransferFrame(decoding: [TransferFrame.version] + tail) {
                #expect(try TransferFrame(decoding: frame.encoded()) == frame, "v2 garbage #\(index)")
            }
        }
        // A well-formed header for every kind, then a random body of the declared length.
        var rng = SplitMix64(seed: 0x4652_4D05)
        for kind in Self.kinds {
            for _ in 0..<200 {
                let body = rng.bytes(Int.random(in: 0...80, using: &rng))
                var writer = ByteWriter()
                writer.write(TransferFrame.version)
                writer.write(kind)
                writer.write(UInt32(body.count))
                if let frame = try? TransferFrame(decoding: writer.bytes + body) {
                    // Exactly the bytes received, except that a refusal's unknown code becomes "internal".
                    if kind == 4 {
                        #expect(try TransferFrame(decoding: frame.encoded()) == frame)
                    } else {
                        #expect(frame.encoded() == writer.bytes + body, "kind \(kind)")
                    }
                }
            }
        }
    }

    @Test func garbageBodiesForEveryKindThrowOrRoundTrip() throws {
        var decoded = 0
        for (index, body) in randomGarbage(seed: 0x4652_4D02, maxLength: 200).enumerated() {
            for kind in Self.kinds {
                guard let frame = try? TransferFrame(kind: kind, body: body) else { continue }
                decoded += 1
                #expect(try TransferFrame(decoding: frame.encoded()) == frame, "garbage #\(index) kind \(kind)")
            }
        }
        // Every body is a valid payload frame, and every body up to 256 bytes a valid handshake frame.
        #expect(decoded >= 2000 * 4)
    }

    @Test func mutatedFramesThrowOrRoundTrip() throws {
        for (frame, bytes) in Self.vectors {
            for (index, mutated) in mutations(of: bytes, seed: 0x4652_4D03, count: 500).enumerated() {
                if let decoded = try? TransferFrame(decoding: mutated) {
                    #expect(try TransferFrame(decoding: decoded.encoded()) == decoded, "\(frame) mutation #\(index)")
                }
            }
        }
    }
}

@Suite struct RefusalTextSafetyTests {
    @Test func controlCharactersInARefusalAreDropped() throws {
        let frame = TransferFrame.refusal(.init(code: .trust, message: "no\u{1B}[2J\u{202E} way"))
        guard case let .refusal(refusal) = try TransferFrame(decoding: frame.encoded()) else {
            Issue.record("not a refusal")
            return
        }
        #expect(refusal.message == "no[2J way")
    }
}
