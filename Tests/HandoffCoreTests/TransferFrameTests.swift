import HandoffCore
import HandoffCrypto
import Testing

@Suite struct TransferFrameTests {
    let verifier = Ed25519()

    static let nonce: [UInt8] = Array(0..<32)
    static var challenge: TransferFrame.Challenge {
        TransferFrame.Challenge(nonce: nonce, serverKey: DeviceKey(bytes: rfcPublicKey)!)
    }

    static let challengeBytes = hex("""
        01 01 00000040
        000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
        d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a
        """)

    /// Made by the RFC 8032 test 2 key (the receiver) for the summary vector.
    static var fetch: TransferFrame.FetchRequest {
        var request = TransferFrame.FetchRequest(clientKey: DeviceKey(bytes: rfcPublicKey2)!,
                                                 summarySender: DeviceKey(bytes: rfcPublicKey)!,
                                                 summarySequence: VectorInputs.timestamp,
                                                 payloadDigest: VectorInputs.payloadDigest)
        request.sign(for: challenge, with: rfcIdentity2())
        return request
    }

    static let fetchBytes = hex("""
        01 02 000000a8
        3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c
        d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a
        0000018bcfe56800
        2c8c27a5487834f63e6f0f7ba5d822ac8b52fdbe39ab20af91d104f3ccfcb951
        5674ba963fb4e8dc1490e8e93eb24b43b8c8ead7dea3dff0df80295dce786169
        f42b11a9394bd695cb0bfbb27d8ab255d8faf579aa3094a506c46510af6b4506
        """)

    static let payloadBytes = hex("01 03 0000008f") + VectorInputs.payload

    static let refusalBytes = hex("01 04 00000012 0b 6e6f742d63757272656e74 0004 676f6e65")
    static let refusal = TransferFrame.Refusal(code: .notCurrent, message: "gone")

    static var vectors: [(TransferFrame, [UInt8])] {
        [(.challenge(challenge), challengeBytes), (.fetch(fetch), fetchBytes),
         (.payload(VectorInputs.payload), payloadBytes), (.refusal(refusal), refusalBytes)]
    }

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

    @Test func emptyAndLargePayloadsRoundTrip() throws {
        #expect(TransferFrame.payload([]).encoded() == hex("01 03 00000000"))
        #expect(try TransferFrame(decoding: hex("01 03 00000000")) == .payload([]))
        let big = [UInt8](repeating: 0x5A, count: 1 << 20)
        #expect(try TransferFrame(decoding: TransferFrame.payload(big).encoded()) == .payload(big))
    }

    @Test func fetchSignatureBindsTheChallenge() {
        let request = Self.fetch
        #expect(request.verify(for: Self.challenge, with: verifier))
        // Another nonce: a recorded fetch cannot be replayed on a new connection.
        var otherNonce = Self.challenge
        otherNonce.nonce[0] ^= 1
        #expect(!request.verify(for: otherNonce, with: verifier))
        // Another server: a fetch made for one host is useless at another.
        let otherServer = TransferFrame.Challenge(nonce: Self.nonce, serverKey: DeviceKey(bytes: rfcPublicKey2)!)
        #expect(!request.verify(for: otherServer, with: verifier))
        // Any changed field or signature bit fails.
        for flipped in singleBitFlips(of: request.signature) {
            var copy = request
            copy.signature = flipped
            #expect(!copy.verify(for: Self.challenge, with: verifier))
        }
        var changed = request
        changed.summarySequence += 1
        #expect(!changed.verify(for: Self.challenge, with: verifier))
        changed = request
        changed.payloadDigest[31] ^= 1
        #expect(!changed.verify(for: Self.challenge, with: verifier))
        changed = request
        changed.clientKey = DeviceKey(bytes: rfcPublicKey)!
        #expect(!changed.verify(for: Self.challenge, with: verifier))
    }

    @Test func fetchSignatureIsDomainSeparated() {
        let request = Self.fetch
        let message = request.signedMessage(for: Self.challenge)
        #expect(Array(message.prefix(SigningContext.fetch.count)) == SigningContext.fetch)
        let body = Array(message.dropFirst(SigningContext.fetch.count))
        for context in [SigningContext.summary, SigningContext.announcement] {
            #expect(!verifier.isValid(signature: request.signature, message: context + body, key: request.clientKey))
        }
    }

    @Test func headerErrors() {
        #expect(throws: WireError.unsupportedVersion(2)) { try TransferFrame.bodyLength(header: hex("02 01 00000040")) }
        #expect(throws: WireError.unsupportedVersion(0)) { try TransferFrame.bodyLength(header: hex("00 01 00000040")) }
        for kind: UInt8 in [0, 5, 0xFF] {
            #expect(throws: WireError.unknownKind(kind)) { try TransferFrame.bodyLength(header: [1, kind, 0, 0, 0, 0]) }
            #expect(throws: WireError.unknownKind(kind)) { try TransferFrame(kind: kind, body: []) }
        }
        #expect(throws: WireError.truncated(needed: 4, available: 2)) { try TransferFrame.bodyLength(header: hex("01 03 0000")) }
    }

    @Test func bodyLengthLimit() throws {
        let limit = TransferFrame.maximumBodyBytes
        var header = ByteWriter()
        header.write(UInt8(1))
        header.write(UInt8(3))
        header.write(UInt32(limit))
        #expect(try TransferFrame.bodyLength(header: header.bytes) == (3, limit))
        for length in [UInt32(limit + 1), .max] {
            var over = ByteWriter()
            over.write(UInt8(1))
            over.write(UInt8(3))
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
        // Bodies with more than their fields (the declared length covers the extra byte).
        #expect(throws: WireError.trailingBytes(1)) { try TransferFrame(kind: 1, body: Self.nonce + rfcPublicKey + [0]) }
        #expect(throws: WireError.trailingBytes(1)) {
            try TransferFrame(kind: 2, body: Array(Self.fetchBytes.dropFirst(6)) + [0])
        }
        #expect(throws: WireError.trailingBytes(2)) {
            try TransferFrame(kind: 4, body: Array(Self.refusalBytes.dropFirst(6)) + [0, 0])
        }
    }

    @Test func shortBodiesThrow() {
        #expect(throws: WireError.truncated(needed: 32, available: 31)) { try TransferFrame(kind: 1, body: Array(Self.nonce.prefix(31))) }
        #expect(throws: WireError.truncated(needed: 32, available: 0)) { try TransferFrame(kind: 1, body: Self.nonce) }
        // A fetch whose signature is missing (an unsigned request encoded as is).
        var unsigned = Self.fetch
        unsigned.signature = []
        #expect(throws: WireError.truncated(needed: 64, available: 0)) { try TransferFrame(decoding: TransferFrame.fetch(unsigned).encoded()) }
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
        let unknown = hex("01 04 0000000e 08 6e65772d636f6465 0003 6d7367")
        #expect(try TransferFrame(decoding: unknown) == .refusal(.init(code: .internal, message: "msg")))
        let badText = hex("01 04 00000005 01 ff 0001 6d")
        #expect(throws: WireError.invalidText) { try TransferFrame(decoding: badText) }
        let badMessage = hex("01 04 0000000a 05 7472757374 0002 c328")
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
    }

    @Test func garbageBodiesForEveryKindThrowOrRoundTrip() throws {
        var decoded = 0
        for (index, body) in randomGarbage(seed: 0x4652_4D02, maxLength: 200).enumerated() {
            for kind: UInt8 in 1...4 {
                guard let frame = try? TransferFrame(kind: kind, body: body) else { continue }
                decoded += 1
                #expect(try TransferFrame(decoding: frame.encoded()) == frame, "garbage #\(index) kind \(kind)")
            }
        }
        // Every body is a valid payload frame, so at least those decode.
        #expect(decoded >= 2000)
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
