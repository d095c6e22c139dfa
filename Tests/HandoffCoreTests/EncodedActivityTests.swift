import HandoffCore
import Testing

/// The daemon keeps a publisher's activity as its payload only; a new sequence is written in place.
@Suite struct EncodedActivityTests {
    let activity = Activity(type: "org.example.reader.document", title: "Chapter 3",
                            userInfo: ["page": .integer(42), "cover": .data([1, 2, 3])], targetContentIdentifier: "doc-7",
                            webpageURL: "https://example.org/ch3", expiresAtMillis: 1_900_000_000_000, sequence: 5)

    @Test func theFieldsAreThePayloadsAndTheUserInfoStaysEncoded() throws {
        let encoded = try EncodedActivity(activity)
        #expect(encoded.payload == activity.encodedPayload())
        #expect(encoded.type == activity.type && encoded.header.title == activity.title)
        #expect(encoded.header.webpageURL == activity.webpageURL && encoded.expiresAtMillis == activity.expiresAtMillis)
        #expect(encoded.sequence == 5)
    }

    @Test func aNewSequenceIsTheSameAsEncodingTheActivityWithIt() throws {
        var encoded = try EncodedActivity(activity)
        encoded.sequence = 1_700_000_000_123
        var expected = activity
        expected.sequence = 1_700_000_000_123
        #expect(encoded.payload == expected.encodedPayload())
        #expect(try Activity(payload: encoded.payload) == expected)
    }

    @Test func aCopyKeepsItsOwnSequence() throws {
        let first = try EncodedActivity(activity)
        var second = first
        second.sequence = 9
        #expect(try Activity(payload: first.payload).sequence == 5)
        #expect(try Activity(payload: second.payload).sequence == 9)
    }

    @Test func aPayloadThatIsNotAnActivityIsRefusedAsTheDecoderRefusesIt() {
        var bytes = activity.encodedPayload()
        bytes.removeLast()
        #expect(throws: HandoffError.self) { try EncodedActivity(payload: bytes) }
        #expect(throws: HandoffError.self) { try EncodedActivity(payload: []) }
    }

    @Test func expiry() throws {
        let encoded = try EncodedActivity(activity)
        #expect(!encoded.isExpired(nowMillis: 1_899_999_999_999))
        #expect(encoded.isExpired(nowMillis: 1_900_000_000_000))
    }
}
