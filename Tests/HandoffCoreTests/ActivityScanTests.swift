@testable import HandoffCore
import Testing

// The receiver's scan (`Activity.scanPayload`) must accept and refuse exactly
// what `Activity(payload:)` does, with the same error, for any bytes.

private enum Outcome: Equatable {
    case accepted(ActivityHeader)
    case refused(code: HandoffError.Code, message: String)
}

private func decoded(_ bytes: [UInt8]) -> Outcome {
    do {
        let activity = try Activity(payload: bytes)
        let start = bytes.count - PropertyListValue.dictionary(activity.userInfo).encoded.count
        return .accepted(ActivityHeader(type: activity.type, title: activity.title,
                                        targetContentIdentifier: activity.targetContentIdentifier, webpageURL: activity.webpageURL,
                                        expiresAtMillis: activity.expiresAtMillis, sequence: activity.sequence,
                                        userInfoOffset: start, userInfoBytes: bytes.count - start))
    } catch {
        return .refused(code: error.code, message: error.message)
    }
}

private func scanned(_ bytes: [UInt8]) -> Outcome {
    let result = bytes.withUnsafeBytes { raw in Result { () throws(HandoffError) in try Activity.scanPayload(raw) } }
    switch result {
    case let .success(header): return .accepted(header)
    case let .failure(error): return .refused(code: error.code, message: error.message)
    }
}

/// A small deterministic generator, so a failure names a reproducible case.
private struct SplitMix {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
}

/// Payloads that exercise every tag, nesting, Unicode keys and the optional fields.
private let seeds: [[UInt8]] = {
    let rich = Activity(type: "org.example.reader.document", title: "Kapitel 3 — Ærø",
                        userInfo: ["page": .integer(-7), "ratio": .double(0.25), "done": .bool(true), "no": .bool(false),
                                   "blob": .data([0, 1, 2, 0xFF]), "when": .date(1_700_000_000.5), "é": .string("naïve 😀"),
                                   "K": .string("ascii key"),
                                   "list": .array([.integer(1), .array([.string("deep"), .dictionary(["x": .bool(true)])])]),
                                   "nested": .dictionary(["a": .dictionary(["b": .dictionary(["c": .string("")])])])],
                        targetContentIdentifier: "document:3F2A", webpageURL: "https://example.org/a?b=c",
                        expiresAtMillis: 1_700_000_600_000, sequence: 99)
    let bare = Activity(type: "a.b", title: "", sequence: 0)
    return [VectorInputs.payload, rich.encodedPayload(), bare.encodedPayload()]
}()

@Suite struct ActivityScanTests {
    @Test func acceptsTheVectorsWithTheirFixedFields() throws {
        for seed in seeds {
            let outcome = scanned(seed)
            #expect(outcome == decoded(seed))
            guard case .accepted = outcome else {
                Issue.record("a valid payload was refused: \(outcome)")
                continue
            }
        }
        let header = try VectorInputs.payload.withUnsafeBytes { raw in Result { () throws(HandoffError) in try Activity.scanPayload(raw) } }.get()
        #expect(header.type == "org.example.reader.document")
        #expect(header.title == "Chapter 1")
        #expect(header.targetContentIdentifier == "document:moby-dick")
        #expect(header.webpageURL == "https://example.org/moby-dick")
        #expect(header.expiresAtMillis == VectorInputs.expires)
        #expect(header.sequence == VectorInputs.timestamp)
        #expect(header.userInfoOffset + header.userInfoBytes == VectorInputs.payload.count)
        #expect(VectorInputs.payload[header.userInfoOffset] == 0x09)
    }

    @Test func agreesOnEveryTruncation() {
        for seed in seeds {
            for length in 0..<seed.count {
                let cut = Array(seed.prefix(length))
                #expect(scanned(cut) == decoded(cut), "prefix \(length)")
            }
        }
    }

    @Test func agreesOnEverySingleByteChange() {
        for seed in seeds {
            for index in seed.indices {
                for value: UInt8 in [0x00, 0x01, 0x7F, 0x80, 0xC0, 0xED, 0xFF, seed[index] ^ 0x01, seed[index] &+ 1, seed[index] &- 1] {
                    var mutated = seed
                    mutated[index] = value
                    #expect(scanned(mutated) == decoded(mutated), "byte \(index) = \(value)")
                }
            }
        }
    }

    @Test func agreesOnRandomMutations() {
        var random = SplitMix(state: 0x5EED)
        for round in 0..<20_000 {
            var mutated = seeds[random.below(seeds.count)]
            for _ in 0...random.below(4) {
                switch random.below(4) {
                case 0 where !mutated.isEmpty: mutated[random.below(mutated.count)] = UInt8(truncatingIfNeeded: random.next())
                case 1: mutated.insert(UInt8(truncatingIfNeeded: random.next()), at: random.below(mutated.count + 1))
                case 2 where !mutated.isEmpty: mutated.remove(at: random.below(mutated.count))
                default: mutated.append(UInt8(truncatingIfNeeded: random.next()))
                }
            }
            #expect(scanned(mutated) == decoded(mutated), "round \(round)")
        }
    }

    /// Refusals the mutations rarely reach: depth, value count, key order and Unicode-equal keys, non-finite numbers.
    @Test func agreesOnCraftedRefusals() {
        func payload(userInfo: [UInt8]) -> [UInt8] {
            Array(Activity(type: "a.b", title: "t", sequence: 1).encodedPayload().dropLast(5)) + userInfo
        }
        var deep: [UInt8] = []
        for _ in 0..<40 { deep += [0x08, 0, 0, 0, 1] }
        deep += [0x04]
        var many: [UInt8] = [0x08] + [0x00, 0x01, 0x00, 0x01] // 65,537 falses
        many += [UInt8](repeating: 0x04, count: 65_537)
        let nfc = Array("\u{E9}".utf8), nfd = Array("e\u{301}".utf8)
        let (first, second) = nfd.lexicographicallyPrecedes(nfc) ? (nfd, nfc) : (nfc, nfd)
        let kelvin = Array("\u{212A}".utf8)
        let cases: [[UInt8]] = [
            [0x09, 0, 0, 0, 1, 0, 1, 0x61] + deep,
            [0x09, 0, 0, 0, 1, 0, 1, 0x61] + many,
            [0x09, 0, 0, 0, 2, 0, 1, 0x62, 0x04, 0, 1, 0x61, 0x04],           // out of order
            [0x09, 0, 0, 0, 2, 0, 1, 0x61, 0x04, 0, 1, 0x61, 0x04],           // repeated
            [0x09, 0, 0, 0, 2, 0, UInt8(first.count)] + first + [0x04, 0, UInt8(second.count)] + second + [0x04], // é twice
            [0x09, 0, 0, 0, 2, 0, 1, 0x4B, 0x04, 0, UInt8(kelvin.count)] + kelvin + [0x04],                     // K and Kelvin sign
            [0x09, 0, 0, 0, 1, 0, 1, 0x61, 0x03, 0x7F, 0xF0, 0, 0, 0, 0, 0, 0],   // infinity
            [0x09, 0, 0, 0, 1, 0, 1, 0x61, 0x07, 0x7F, 0xF8, 0, 0, 0, 0, 0, 1],   // NaN date
            [0x09, 0, 0, 0, 1, 0, 1, 0x61, 0x01, 0, 0, 0, 2, 0xC0, 0x80],         // overlong UTF-8
            [0x09, 0, 0, 0, 1, 0, 1, 0x61, 0x01, 0, 0, 0, 3, 0xED, 0xA0, 0x80],   // surrogate
            [0x09, 0, 0, 0, 1, 0x04, 0x01] + [UInt8](repeating: 0x61, count: 1025) + [0x04], // key too long
            [0x08, 0, 0, 0, 0],                                                    // not a dictionary
            [0x09, 0xFF, 0xFF, 0xFF, 0xFF],                                        // count past the bytes left
        ]
        for (index, userInfo) in cases.enumerated() {
            let bytes = payload(userInfo: userInfo)
            let outcome = scanned(bytes)
            #expect(outcome == decoded(bytes), "case \(index)")
            if case .accepted = outcome { Issue.record("case \(index) was accepted") }
        }
    }

    @Test func oversizedPayloadIsTooLargeBeforeAnythingIsRead() {
        let huge = [UInt8](repeating: 0, count: ActivityLimits.payloadBytes + 1)
        #expect(scanned(huge) == decoded(huge))
        #expect(scanned(huge) == .refused(code: .payloadTooLarge,
                                          message: "The payload is \(huge.count) bytes, over the limit of \(ActivityLimits.payloadBytes)."))
    }

    /// The in-place UTF-8 check agrees with the standard library's on every kind of sequence.
    @Test func utf8CheckAgreesWithTheStandardLibrary() {
        var random = SplitMix(state: 0xC0FFEE)
        let pieces: [[UInt8]] = [[0x61], [0xC3, 0xA9], [0xE2, 0x82, 0xAC], [0xF0, 0x9F, 0x98, 0x80], [0x80], [0xC0, 0xAF], [0xE0, 0x80, 0x80],
                                 [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xF5], [0xFF], [0xE2, 0x82], [0xF0, 0x9F, 0x98]]
        for _ in 0..<20_000 {
            var bytes: [UInt8] = []
            for _ in 0..<random.below(24) {
                if random.below(3) == 0 {
                    bytes.append(UInt8(truncatingIfNeeded: random.next()))
                } else {
                    bytes += pieces[random.below(pieces.count)]
                }
            }
            let expected = String(validating: bytes, as: UTF8.self) != nil
            #expect(bytes.withUnsafeBytes { UTF8Check.isValid($0) } == expected, "\(bytes)")
        }
        let longASCII = [UInt8](repeating: 0x41, count: 1000) + [0xC3, 0xA9] + [UInt8](repeating: 0x42, count: 17)
        #expect(longASCII.withUnsafeBytes { UTF8Check.isValid($0) })
        #expect((longASCII + [0xC3]).withUnsafeBytes { UTF8Check.isValid($0) } == false)
    }
}
