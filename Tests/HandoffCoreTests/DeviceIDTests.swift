import HandoffCore
import HandoffCrypto
import Testing

@Suite struct DeviceIDTests {
    @Test(arguments: [
        ("00000000000000000000", "0000-0000-0000-0000"),
        ("ffffffffffffffffffff", "ZZZZ-ZZZZ-ZZZZ-ZZZZ"),
        // 10000 repeated: every 5-bit group is 16, the letter G.
        ("84210842108421084210", "GGGG-GGGG-GGGG-GGGG"),
        ("00000000000000000001", "0000-0000-0000-0001"),
        ("0123456789abcdef0123", "04HM-ASW9-NF6Y-Y093"),
    ])
    func formatsFingerprintsAsCrockfordBase32(fingerprint: String, expected: String) throws {
        let id = try #require(DeviceID(fingerprint: hex(fingerprint)))
        #expect(id.description == expected)
        #expect(id.compact == expected.replacing("-", with: ""))
        #expect(id.compact.count == 16)
    }

    @Test func usesOnlyTheFirst80Bits() throws {
        let short = try #require(DeviceID(fingerprint: hex("0123456789abcdef0123")))
        let long = try #require(DeviceID(fingerprint: hex("0123456789abcdef0123") + [UInt8](repeating: 0xFF, count: 22)))
        #expect(short == long)
    }

    @Test func shortFingerprintsAreRefused() {
        #expect(DeviceID(fingerprint: []) == nil)
        #expect(DeviceID(fingerprint: [UInt8](repeating: 0, count: 9)) == nil)
    }

    @Test func alphabetHasNoAmbiguousLetters() throws {
        var seen = Set<Character>()
        for value in 0..<32 {
            // Put the 5-bit value in the last group: the last byte's low five bits.
            let id = try #require(DeviceID(fingerprint: [UInt8](repeating: 0, count: 9) + [UInt8(value)]))
            seen.insert(id.compact.last!)
        }
        #expect(seen.count == 32)
        #expect(seen.isDisjoint(with: ["I", "L", "O", "U"]))
    }

    @Test(arguments: [
        "NHJ2-X58Z-56DT-QCHQ",
        "NHJ2X58Z56DTQCHQ",
        "nhj2-x58z-56dt-qchq",
        "Nhj2 X58z 56dT qCHQ",
        "--NHJ2--X58Z-56DT-QCHQ--",
    ])
    func parsingAcceptsWhatPeopleType(_ text: String) throws {
        let id = try #require(DeviceID(parsing: text))
        #expect(id.description == "NHJ2-X58Z-56DT-QCHQ")
    }

    @Test func parsingMapsLookAlikes() throws {
        #expect(DeviceID(parsing: "OOOO-oooo-0000-0000")?.compact == "0000000000000000")
        #expect(DeviceID(parsing: "IIII-iiii-LLLL-llll")?.compact == "1111111111111111")
        #expect(DeviceID(parsing: "1O1O-IL0l-ZZZZ-AAAA")?.compact == "10101101ZZZZAAAA")
    }

    @Test(arguments: [
        "", "NHJ2-X58Z-56DT-QCH", "NHJ2-X58Z-56DT-QCHQQ", "NHJ2-X58Z-56DT-QCHU", "UUUU-UUUU-UUUU-UUUU",
        "NHJ2_X58Z_56DT_QCHQ", "NHJ2-X58Z-56DT-QCH*", "NHJ2-X58Z-56DT-QCHÉ", "NHJ2.X58Z.56DT.QCHQ",
    ])
    func parsingRejects(_ text: String) {
        #expect(DeviceID(parsing: text) == nil)
    }

    @Test func normalizeServesPrefixMatching() {
        #expect(DeviceID.normalize("nhj2-x5") == "NHJ2X5")
        #expect(DeviceID.normalize("") == "")
        #expect(DeviceID.normalize("o-i-l") == "011")
        #expect(DeviceID.normalize("abc!") == nil)
        #expect(DeviceID.normalize("u") == nil)
    }

    @Test func ordersByCompactForm() throws {
        let low = try #require(DeviceID(parsing: "0000-0000-0000-0001"))
        let high = try #require(DeviceID(parsing: "0000-0000-0000-000Z"))
        #expect(low < high)
        #expect([high, low].sorted() == [low, high])
    }

    /// Recorded in Vectors.md: the device id of the RFC 8032 test 1 key,
    /// BLAKE2b-256("handoff/device-id/v1" || public key), first 80 bits.
    @Test func rfcKeyDeviceIDIsStable() throws {
        let key = try #require(DeviceKey(bytes: rfcPublicKey))
        #expect(Array(Blake2b.digest(Array("handoff/device-id/v1".utf8) + rfcPublicKey).prefix(10)) == hex("ac642e951f299babb237"))
        #expect(Ed25519.deviceID(of: key).description == "NHJ2-X58Z-56DT-QCHQ")
        #expect(rfcIdentity().deviceID.description == "NHJ2-X58Z-56DT-QCHQ")
        #expect(Ed25519.deviceID(of: try #require(DeviceKey(bytes: rfcPublicKey2))).description == "WPEV-1Z09-FB0Y-E0K6")
    }
}
