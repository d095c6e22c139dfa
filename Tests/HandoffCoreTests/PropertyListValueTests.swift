import Foundation
import HandoffCore
import Testing

/// Decodes exactly one value and nothing after it, the way the activity payload uses it.
private func decodeWhole(_ bytes: [UInt8]) throws(WireError) -> PropertyListValue {
    var reader = ByteReader(bytes)
    let value = try PropertyListValue(from: &reader)
    try reader.expectEnd()
    return value
}

/// `levels` arrays of one element each, around `false`.
private func nestedArrays(_ levels: Int) -> [UInt8] {
    Array([[UInt8]](repeating: hex("08 00000001"), count: levels).joined()) + [0x04]
}

private func bigEndian32(_ value: Int) -> [UInt8] {
    (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) }
}

private func nestedValue(_ levels: Int) -> PropertyListValue {
    (0..<levels).reduce(PropertyListValue.bool(false)) { inner, _ in .array([inner]) }
}

@Suite struct PropertyListBinaryTests {
    // Laid out by hand from PropertyListValue.Tag and the encoder: tag, then u32 BE
    // lengths/counts, u64 BE numbers, u16 BE key lengths, keys in ascending order.
    static let vectorValue = PropertyListValue.dictionary([
        "a": .integer(1),
        "b": .array([.bool(true), .string("hi")]),
        "c": .data([0xDE, 0xAD]),
        "d": .date(0),
        "e": .double(-2.5),
        "f": .bool(false),
    ])
    static let vectorBytes = hex("""
        09 00000006
        0001 61 02 0000000000000001
        0001 62 08 00000002 05 01 00000002 6869
        0001 63 06 00000002 dead
        0001 64 07 0000000000000000
        0001 65 03 c004000000000000
        0001 66 04
        """)

    @Test func staticVectorEncodes() {
        #expect(Self.vectorValue.encoded == Self.vectorBytes)
    }

    @Test func staticVectorDecodes() throws {
        #expect(try decodeWhole(Self.vectorBytes) == Self.vectorValue)
    }

    @Test func scalarVectors() throws {
        let cases: [(PropertyListValue, String)] = [
            (.string(""), "01 00000000"),
            (.string("é"), "01 00000002 c3a9"),
            (.integer(-1), "02 ffffffffffffffff"),
            (.integer(.min), "02 8000000000000000"),
            (.double(1.5), "03 3ff8000000000000"),
            (.double(-0.0), "03 8000000000000000"),
            (.bool(false), "04"),
            (.bool(true), "05"),
            (.data([]), "06 00000000"),
            (.date(1_700_000_000), "07 41d954fc40000000"),
            (.array([]), "08 00000000"),
            (.dictionary([:]), "09 00000000"),
        ]
        for (value, bytes) in cases {
            #expect(value.encoded == hex(bytes), "\(value)")
            #expect(try decodeWhole(hex(bytes)) == value, "\(bytes)")
        }
    }

    @Test func negativeZeroKeepsItsSign() throws {
        guard case let .double(number) = try decodeWhole(hex("03 8000000000000000")) else {
            Issue.record("not a double")
            return
        }
        #expect(number.sign == .minus)
    }

    @Test func keysAreWrittenInAscendingOrder() {
        let value = PropertyListValue.dictionary(["b": .bool(true), "a": .bool(true), "B": .bool(true), "é": .bool(true)])
        // "B" (42) < "a" (61) < "b" (62) < "é" (c3 a9): byte order, so the digest is deterministic.
        #expect(value.encoded == hex("09 00000004 0001 42 05 0001 61 05 0001 62 05 0002 c3a9 05"))
    }

    @Test func roundTripOfEveryKind() throws {
        let value = PropertyListValue.dictionary([
            "string": .string("Moby-Dick; or, The Whale 🐋"),
            "ints": .array([.integer(0), .integer(.max), .integer(.min)]),
            "doubles": .array([.double(0.1), .double(-1e300), .double(.leastNonzeroMagnitude), .double(.greatestFiniteMagnitude)]),
            "flags": .array([.bool(true), .bool(false)]),
            "blob": .data(Array(0...255)),
            "when": .date(-1.25),
            "nested": .dictionary(["inner": .array([.dictionary(["x": .string("y")])]), "": .string("empty key")]),
        ])
        let bytes = value.encoded
        #expect(try decodeWhole(bytes) == value)
        #expect(try decodeWhole(bytes).encoded == bytes)
    }

    @Test func truncationAtEveryPrefixThrows() {
        for length in 0..<Self.vectorBytes.count {
            #expect(throws: WireError.self, "prefix \(length)") { try decodeWhole(Array(Self.vectorBytes.prefix(length))) }
        }
    }

    @Test func trailingBytesThrow() {
        #expect(throws: WireError.trailingBytes(1)) { try decodeWhole(Self.vectorBytes + [0x00]) }
        #expect(throws: WireError.trailingBytes(2)) { try decodeWhole(hex("04 0404")) }
    }

    @Test func declaredLengthsLargerThanTheInputThrowWithoutAllocating() {
        #expect(throws: WireError.truncated(needed: 0xFFFF_FFFF, available: 2)) { try decodeWhole(hex("01 ffffffff 6869")) }
        #expect(throws: WireError.truncated(needed: 0xFFFF_FFFF, available: 2)) { try decodeWhole(hex("06 ffffffff dead")) }
        #expect(throws: WireError.truncated(needed: 0xFFFF_FFFF, available: 1)) { try decodeWhole(hex("08 ffffffff 04")) }
        #expect(throws: WireError.truncated(needed: 3 * 0xFFFF_FFFF, available: 4)) { try decodeWhole(hex("09 ffffffff 0001 6104")) }
        // Three elements announced, two present.
        #expect(throws: WireError.truncated(needed: 3, available: 2)) { try decodeWhole(hex("08 00000003 0404")) }
        // A dictionary entry needs at least 3 bytes, so 2 entries cannot fit in 5.
        #expect(throws: WireError.self) { try decodeWhole(hex("09 00000002 0001 6104")) }
        #expect(throws: WireError.truncated(needed: 3, available: 1)) { try decodeWhole(hex("09 00000001 00")) }
    }

    @Test func unknownTagsThrow() {
        for tag: UInt8 in [0x00, 0x0A, 0x10, 0x7F, 0xFF] {
            #expect(throws: WireError.invalidValue("unknown value tag \(tag)")) { try decodeWhole([tag]) }
        }
    }

    @Test func invalidUTF8Throws() {
        #expect(throws: WireError.invalidText) { try decodeWhole(hex("01 00000001 ff")) }
        #expect(throws: WireError.invalidText) { try decodeWhole(hex("01 00000003 eda080")) }
        #expect(throws: WireError.invalidText) { try decodeWhole(hex("09 00000001 0001 c3 04")) }
    }

    @Test func nonFiniteNumbersThrow() {
        for bits in ["7ff8000000000000", "fff8000000000000", "7ff0000000000000", "fff0000000000000", "7ff0000000000001"] {
            #expect(throws: WireError.invalidValue("non-finite double")) { try decodeWhole(hex("03" + bits)) }
            #expect(throws: WireError.invalidValue("non-finite date")) { try decodeWhole(hex("07" + bits)) }
        }
    }

    @Test func unsortedOrDuplicateKeysThrow() {
        let outOfOrder = WireError.invalidValue("dictionary keys out of order or repeated")
        #expect(throws: outOfOrder) { try decodeWhole(hex("09 00000002 0001 62 04 0001 61 04")) }
        #expect(throws: outOfOrder) { try decodeWhole(hex("09 00000002 0001 61 04 0001 61 05")) }
        // "a" then "B": ascending in no sense the encoder uses.
        #expect(throws: outOfOrder) { try decodeWhole(hex("09 00000002 0001 61 04 0001 42 04")) }
        // Canonically equivalent spellings of "é" are one key, so they count as a repeat.
        #expect(throws: outOfOrder) { try decodeWhole(hex("09 00000002 0002 c3a9 04 0003 65cc81 04")) }
        // The same keys in order decode.
        #expect(throws: Never.self) { try decodeWhole(hex("09 00000002 0001 61 04 0001 62 04")) }
    }

    @Test func nestingIsCappedAt32Levels() throws {
        #expect(try decodeWhole(nestedArrays(31)) == nestedValue(31))
        #expect(throws: WireError.nestingTooDeep(limit: 32)) { try decodeWhole(nestedArrays(32)) }
        let dictionaryLevel = hex("09 00000001 0001 6b")
        let deepDictionaries = Array([[UInt8]](repeating: dictionaryLevel, count: 32).joined()) + [0x04]
        #expect(throws: WireError.nestingTooDeep(limit: 32)) { try decodeWhole(deepDictionaries) }
        // Hostile depth far beyond the limit stops at the limit instead of exhausting the stack.
        #expect(throws: WireError.nestingTooDeep(limit: 32)) { try decodeWhole(nestedArrays(100_000)) }
    }

    /// Finding 11: a payload of millions of one-byte booleans took 678 MB to
    /// decode. The count is checked before anything is reserved or stored.
    @Test func valueCountIsCappedWhileDecoding() throws {
        let limit = PropertyListValue.maximumValues
        // The root array counts as one value.
        let atLimit = hex("08") + bigEndian32(limit - 1) + [UInt8](repeating: 0x05, count: limit - 1)
        #expect(try decodeWhole(atLimit) == .array(Array(repeating: .bool(true), count: limit - 1)))
        let over = hex("08") + bigEndian32(limit) + [UInt8](repeating: 0x05, count: limit)
        #expect(throws: WireError.invalidValue("more than 65536 values, the limit")) { try decodeWhole(over) }
        // Counted across containers too: many small arrays add up.
        let inner = hex("08 00000001 05")
        let many = hex("08") + bigEndian32(limit / 2) + Array([[UInt8]](repeating: inner, count: limit / 2).joined())
        #expect(throws: WireError.invalidValue("more than 65536 values, the limit")) { try decodeWhole(many) }
        // A count over the budget is refused before any entry is read (the bytes after it would do for the count).
        let dictionary = hex("09") + bigEndian32(limit) + [UInt8](repeating: 0, count: limit * 3)
        #expect(throws: WireError.invalidValue("more than 65536 values, the limit")) { try decodeWhole(dictionary) }
    }

    @Test func randomGarbageThrowsOrDecodesCanonically() {
        var decoded = 0
        for (index, bytes) in randomGarbage(seed: 0x504C_4953_5401).enumerated() {
            if let value = try? decodeWhole(bytes) {
                decoded += 1
                #expect(value.encoded == bytes, "garbage #\(index) decoded but re-encodes differently")
            }
        }
        // Most random strings start with an invalid tag; a few are a bare bool or short value.
        #expect(decoded < 100)
    }

    @Test func mutatedValuesThrowOrDecodeCanonically() {
        var decoded = 0
        for (index, bytes) in mutations(of: Self.vectorBytes, seed: 0x504C_4953_5402).enumerated() {
            if let value = try? decodeWhole(bytes) {
                decoded += 1
                #expect(value.encoded == bytes, "mutation #\(index) decoded but re-encodes differently")
            }
        }
        #expect(decoded > 0)
    }
}

@Suite struct PropertyListJSONTests {
    private func error(_ json: JSONValue) -> HandoffError? {
        #expect(throws: HandoffError.self) { try PropertyListValue(json: json) }
    }

    @Test func plainValuesMapOneToOne() throws {
        let json: JSONValue = ["s": "text", "i": 7, "b": true, "a": [1, "two"], "d": ["x": 1]]
        let value = try PropertyListValue(json: json)
        #expect(value == .dictionary([
            "s": .string("text"), "i": .integer(7), "b": .bool(true),
            "a": .array([.integer(1), .string("two")]), "d": .dictionary(["x": .integer(1)]),
        ]))
        #expect(value.json == json)
        #expect(try PropertyListValue(json: .double(2.5)) == .double(2.5))
    }

    @Test func typedDataAndDates() throws {
        #expect(try PropertyListValue(json: ["$data": "3q0="]) == .data([0xDE, 0xAD]))
        #expect(try PropertyListValue(json: ["$data": ""]) == .data([]))
        #expect(try PropertyListValue(json: ["$date": "2023-11-14T22:13:20Z"]) == .date(1_700_000_000))
        #expect(try PropertyListValue(json: ["$date": 1_700_000_000]) == .date(1_700_000_000))
        #expect(try PropertyListValue(json: ["$date": .double(-0.5)]) == .date(-0.5))
        #expect(PropertyListValue.data([0xDE, 0xAD]).json == ["$data": "3q0="])
        #expect(PropertyListValue.date(1_700_000_000).json == ["$date": "2023-11-14T22:13:20Z"])
        // Whole seconds survive the trip through JSON.
        for value: PropertyListValue in [.data(Array(0...255)), .date(0), .date(1_700_000_000), .date(-86_400)] {
            #expect(try PropertyListValue(json: value.json) == value)
        }
    }

    @Test func aDollarKeyAmongOthersIsAPlainKey() throws {
        let value = try PropertyListValue(json: ["$data": "3q0=", "other": 1])
        #expect(value == .dictionary(["$data": .string("3q0="), "other": .integer(1)]))
    }

    @Test func nullNamesItsKeyPath() {
        let json: JSONValue = ["a": ["b": [1, 2, nil]]]
        let failure = error(json)
        #expect(failure?.code == .invalidActivity)
        #expect(failure?.message.hasPrefix("userInfo.a.b[2] is null") == true)
    }

    @Test func nonFiniteDoubleNamesItsKeyPath() {
        for number in [Double.nan, .infinity, -.infinity] {
            let failure = error(["list": [.double(number)]])
            #expect(failure?.code == .invalidActivity)
            #expect(failure?.message.hasPrefix("userInfo.list[0] is not a finite number") == true)
        }
    }

    @Test func badTypedValuesNameTheKeyPath() {
        let badData = error(["blob": ["$data": "not base64!"]])
        #expect(badData?.message.hasPrefix("userInfo.blob holds $data that is not base64") == true)
        let dataNotString = error(["blob": ["$data": 5]])
        #expect(dataNotString?.message.hasPrefix("userInfo.blob holds $data") == true)
        let badDate = error(["when": ["$date": "yesterday"]])
        #expect(badDate?.message.hasPrefix("userInfo.when holds a $date that is not ISO 8601") == true)
        let nanDate = error(["when": ["$date": .double(.nan)]])
        #expect(nanDate?.message.hasPrefix("userInfo.when holds a $date") == true)
        let unknown = error(["x": [["$url": "https://example.org"]]])
        #expect(unknown?.code == .invalidActivity)
        #expect(unknown?.message == "userInfo.x[0] uses the unknown typed key $url.")
    }

    @Test func customKeyPathRoot() {
        #expect(throws: HandoffError.self) { try PropertyListValue(json: nil, keyPath: "activity") }
        let failure = #expect(throws: HandoffError.self) { try PropertyListValue(json: [nil], keyPath: "root") }
        #expect(failure?.message.hasPrefix("root[0] is null") == true)
    }

    @Test func jsonNestingIsCappedLikeTheBinaryForm() throws {
        func nestedJSON(_ levels: Int) -> JSONValue {
            (0..<levels).reduce(JSONValue.bool(false)) { inner, _ in .array([inner]) }
        }
        // Same depth accepted by both forms: 31 levels of containers around a scalar.
        let accepted = try PropertyListValue(json: nestedJSON(31))
        #expect(accepted == nestedValue(31))
        #expect(try decodeWhole(accepted.encoded) == accepted)
        let failure = error(nestedJSON(32))
        #expect(failure?.code == .invalidActivity)
        #expect(failure?.message.contains("nested deeper than 32") == true)
    }
}

/// Regressions for values the encoder once could not take.
@Suite struct PropertyListValidationTests {
    @Test func jsonValueCountIsCappedWithTheKeyPathRoot() throws {
        let limit = PropertyListValue.maximumValues
        let atLimit = JSONValue.array(Array(repeating: .bool(true), count: limit - 1))
        #expect(try PropertyListValue(json: atLimit) == .array(Array(repeating: .bool(true), count: limit - 1)))
        let nested = JSONValue.object(["a": .array(Array(repeating: .array([.integer(1)]), count: limit / 2))])
        let failure = #expect(throws: HandoffError.self) { try PropertyListValue(json: nested) }
        #expect(failure?.code == .invalidActivity)
        #expect(failure?.message == "userInfo holds more than 65536 values, the limit.")
        #expect(failure?.fix.contains("one string or data value") == true)
    }

    @Test func validateCountsValuesLikeTheDecoders() {
        let over = PropertyListValue.dictionary(["a": .array(Array(repeating: .bool(false), count: PropertyListValue.maximumValues))])
        let failure = #expect(throws: HandoffError.self) { try over.validate() }
        #expect(failure?.message == "userInfo holds more than 65536 values, the limit.")
        let atLimit = PropertyListValue.dictionary(["a": .array(Array(repeating: .bool(false), count: PropertyListValue.maximumValues - 2))])
        #expect(throws: Never.self) { try atLimit.validate() }
    }

    @Test func overlongKeyIsAnErrorNotACrash() {
        let value = PropertyListValue.dictionary([String(repeating: "k", count: 65_536): .integer(1)])
        #expect(throws: HandoffError.self) { try value.validate() }
        let activity = Activity(type: "org.example.x", title: "", userInfo: [String(repeating: "k", count: 65_536): .integer(1)])
        #expect(throws: HandoffError.self) { try activity.validate() }
    }

    @Test func depthIsCheckedBeforeEncoding() {
        var value = PropertyListValue.integer(1)
        for _ in 0..<40 { value = .array([value]) }
        let activity = Activity(type: "org.example.x", title: "", userInfo: ["deep": value])
        #expect(throws: HandoffError.self) { try activity.validate() }
    }

    @Test func nonFiniteNumbersAreRefused() {
        #expect(throws: HandoffError.self) { try PropertyListValue.dictionary(["x": .double(.nan)]).validate() }
        #expect(throws: HandoffError.self) { try PropertyListValue.dictionary(["x": .date(.infinity)]).validate() }
    }

    @Test func keysAreOrderedByUTF8Bytes() throws {
        // "e" + combining acute (65 cc 81) sorts before "f" (66) by bytes; Swift's String order puts it after.
        let value = PropertyListValue.dictionary(["e\u{301}": .bool(true), "f": .bool(true)])
        #expect(value.encoded == hex("09 00000002 0003 65cc81 05 0001 66 05"))
        var reader = ByteReader(value.encoded)
        #expect(try PropertyListValue(from: &reader) == value)
    }

    @Test func keysEqualAfterNormalizationAreRefused() {
        // "é" precomposed (c3 a9) and decomposed (65 cc 81) are distinct bytes but one Swift key.
        let bytes = hex("09 00000002 0003 65cc81 02 0000000000000001 0002 c3a9 02 0000000000000002")
        var reader = ByteReader(bytes)
        #expect(throws: WireError.self) { try PropertyListValue(from: &reader) }
    }

    @Test func fractionalDatesSurviveJSON() throws {
        let value = PropertyListValue.date(1_700_000_000.25)
        #expect(try PropertyListValue(json: value.json) == value)
    }
}
