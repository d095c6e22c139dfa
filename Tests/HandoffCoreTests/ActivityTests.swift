import Foundation
import HandoffCore
import Testing

private func validationError(_ activity: Activity) -> HandoffError? {
    #expect(throws: HandoffError.self) { try activity.validate() }
}

private func payloadError(_ bytes: [UInt8]) -> HandoffError? {
    #expect(throws: HandoffError.self) { try Activity(payload: bytes) }
}

private func jsonError(_ json: JSONValue) -> HandoffError? {
    #expect(throws: HandoffError.self) { try Activity(json: json) }
}

@Suite struct ActivityValidationTests {
    @Test(arguments: [
        "org.example.reader",
        "org.example.reader.document",
        "a.b",
        "com.Example-App_2.doc",
        "x1._",
        String(repeating: "a", count: 63) + "." + String(repeating: "b", count: 63),
        // Exactly 128 bytes.
        String(repeating: "a", count: 62) + "." + String(repeating: "b", count: 63) + ".c",
    ])
    func goodTypes(_ type: String) {
        #expect(throws: Never.self) { try Activity.validateType(type) }
    }

    @Test(arguments: [
        "",
        "nodots",
        ".org.example",
        "org..example",
        "org.example.",
        "1org.example",
        "-org.example",
        "_org.example",
        "org.exa mple",
        "org.example/doc",
        "org.exämple",
        "org.example.\n",
        "org." + String(repeating: "b", count: 64),
        // 129 bytes.
        String(repeating: "a", count: 63) + "." + String(repeating: "b", count: 63) + ".c",
    ])
    func badTypes(_ type: String) {
        let failure = #expect(throws: HandoffError.self) { try Activity.validateType(type) }
        #expect(failure?.code == .invalidActivity)
        #expect(failure?.fix.contains("reverse-DNS") == true)
    }

    @Test func validateChecksTheType() {
        let failure = validationError(Activity(type: "not-reverse-dns", title: "t"))
        #expect(failure?.message == "The activity type 'not-reverse-dns' is not reverse-DNS.")
    }

    @Test func titleLimitIsInBytes() {
        #expect(throws: Never.self) { try Activity(type: "a.b", title: String(repeating: "x", count: 256)).validate() }
        #expect(throws: Never.self) { try Activity(type: "a.b", title: String(repeating: "é", count: 128)).validate() }
        let ascii = validationError(Activity(type: "a.b", title: String(repeating: "x", count: 257)))
        #expect(ascii?.message == "title is 257 bytes, over the limit of 256.")
        let accented = validationError(Activity(type: "a.b", title: String(repeating: "é", count: 129)))
        #expect(accented?.message == "title is 258 bytes, over the limit of 256.")
    }

    @Test(arguments: ["line\nbreak", "tab\there", "bell\u{07}", "nul\u{00}", "del\u{7F}", "next\u{85}line", "esc\u{1B}[2J"])
    func controlCharactersAreRefused(_ text: String) {
        let inTitle = validationError(Activity(type: "a.b", title: text))
        #expect(inTitle?.message == "title contains control, line-separator or bidirectional-override characters.")
        let inIdentifier = validationError(Activity(type: "a.b", title: "ok", targetContentIdentifier: text))
        #expect(inIdentifier?.message == "targetContentIdentifier contains control, line-separator or bidirectional-override characters.")
    }

    @Test func contentIdentifierLimit() {
        #expect(throws: Never.self) {
            try Activity(type: "a.b", title: "", targetContentIdentifier: String(repeating: "i", count: 256)).validate()
        }
        let failure = validationError(Activity(type: "a.b", title: "", targetContentIdentifier: String(repeating: "i", count: 257)))
        #expect(failure?.message == "targetContentIdentifier is 257 bytes, over the limit of 256.")
    }

    @Test(arguments: [
        "https://example.org",
        "http://example.org/path?q=1#frag",
        "HTTPS://EXAMPLE.ORG/",
        "https://example.org:8443/a",
        "http://192.0.2.1/",
        "https://example.org/" + String(repeating: "p", count: 2048 - 20),
    ])
    func goodWebpageURLs(_ url: String) {
        #expect(throws: Never.self) { try Activity.validateWebpageURL(url) }
    }

    @Test(arguments: [
        "ftp://example.org/file",
        "javascript:alert(1)",
        "file:///etc/passwd",
        "mailto:someone@example.org",
        "data:text/html,hello",
        "/relative/path",
        "relative/path",
        "//example.org/no-scheme",
        "example.org",
        "https://",
        "http:///path-only",
        "https:example.org",
        "",
    ])
    func badWebpageURLs(_ url: String) {
        let failure = #expect(throws: HandoffError.self) { try Activity.validateWebpageURL(url) }
        #expect(failure?.code == .invalidActivity)
        #expect(failure?.message == "webpageURL '\(url)' is not an http or https URL.")
    }

    @Test func webpageURLLengthAndControlCharacters() {
        let long = "https://example.org/" + String(repeating: "p", count: 2048 - 19)
        let tooLong = #expect(throws: HandoffError.self) { try Activity.validateWebpageURL(long) }
        #expect(tooLong?.message == "webpageURL is 2049 bytes, over the limit of 2048.")
        let withNewline = #expect(throws: HandoffError.self) { try Activity.validateWebpageURL("https://example.org/\n") }
        #expect(withNewline?.message == "webpageURL contains control, line-separator or bidirectional-override characters.")
        #expect(validationError(Activity(type: "a.b", title: "", webpageURL: "ftp://example.org"))?.code == .invalidActivity)
    }

    @Test func userInfoHardLimitIsPayloadTooLarge() {
        // {"b": data(n)} encodes to 13 + n bytes: 09 count(4) keylen(2) "b" 06 len(4) data.
        let atLimit = ActivityLimits.userInfoBytes - 13
        let blob = [UInt8](repeating: 0xA5, count: atLimit + 1)
        let over = Activity(type: "a.b", title: "", userInfo: ["b": .data(blob)])
        #expect(over.encodedUserInfoSize == ActivityLimits.userInfoBytes + 1)
        let failure = validationError(over)
        #expect(failure?.code == .payloadTooLarge)
        #expect(failure?.message == "userInfo encodes to \(ActivityLimits.userInfoBytes + 1) bytes, over the hard limit of \(ActivityLimits.userInfoBytes).")
        let exact = Activity(type: "a.b", title: "", userInfo: ["b": .data(Array(blob.dropLast()))])
        #expect(exact.encodedUserInfoSize == ActivityLimits.userInfoBytes)
        #expect(throws: Never.self) { try exact.validate() }
    }

    @Test func expiry() {
        let never = Activity(type: "a.b", title: "")
        #expect(!never.isExpired(nowMillis: .max))
        let timed = Activity(type: "a.b", title: "", expiresAtMillis: 1000)
        #expect(!timed.isExpired(nowMillis: 999))
        #expect(timed.isExpired(nowMillis: 1000))
        #expect(timed.isExpired(nowMillis: 1001))
    }

    @Test func limitsAreConsistent() {
        #expect(ActivityLimits.payloadBytes > ActivityLimits.userInfoBytes)
        #expect(ActivityLimits.recommendedUserInfoBytes < ActivityLimits.userInfoBytes)
        #expect(TransferFrame.maximumBodyBytes == ActivityLimits.payloadBytes)
    }
}

@Suite struct ActivityPayloadTests {
    @Test func staticVectorEncodes() {
        #expect(VectorInputs.activity.encodedPayload() == VectorInputs.payload)
        #expect(VectorInputs.payload.count == 143)
    }

    @Test func staticVectorDecodes() throws {
        #expect(try Activity(payload: VectorInputs.payload) == VectorInputs.activity)
    }

    @Test func minimalVector() throws {
        // No optional fields: flags 00, then sequence and an empty dictionary.
        let activity = Activity(type: "a.b", title: "", sequence: 1)
        let bytes = hex("01 03 612e62 0000 00 0000000000000001 09 00000000")
        #expect(activity.encodedPayload() == bytes)
        #expect(try Activity(payload: bytes) == activity)
    }

    @Test(arguments: [
        Activity(type: "a.b", title: ""),
        Activity(type: "org.example.x", title: "Only a title", sequence: .max),
        Activity(type: "org.example.x", title: "", targetContentIdentifier: "doc:1"),
        Activity(type: "org.example.x", title: "", webpageURL: "http://example.org"),
        Activity(type: "org.example.x", title: "", expiresAtMillis: .max),
        Activity(type: "org.example.x", title: "Ünïcödé 📚",
                 userInfo: ["d": .date(12.5), "b": .data([0, 1]), "n": .array([.dictionary(["k": .bool(false)])])],
                 targetContentIdentifier: "doc:1", webpageURL: "https://example.org/ü", expiresAtMillis: 1, sequence: 2),
    ])
    func roundTrip(_ activity: Activity) throws {
        let bytes = activity.encodedPayload()
        let decoded = try Activity(payload: bytes)
        #expect(decoded == activity)
        #expect(decoded.encodedPayload() == bytes)
    }

    @Test func truncationAtEveryPrefixThrows() {
        for length in 0..<VectorInputs.payload.count {
            let failure = payloadError(Array(VectorInputs.payload.prefix(length)))
            #expect(failure?.code == .payloadInvalid, "prefix \(length)")
        }
    }

    @Test func trailingBytesThrow() {
        let failure = payloadError(VectorInputs.payload + [0])
        #expect(failure?.code == .payloadInvalid)
        #expect(failure?.message.contains("1 unexpected bytes after the end") == true)
    }

    @Test func oversizedPayloadIsRefusedBeforeParsing() {
        let failure = payloadError([UInt8](repeating: 0, count: ActivityLimits.payloadBytes + 1))
        #expect(failure?.code == .payloadTooLarge)
    }

    @Test func unknownVersionThrows() {
        var bytes = VectorInputs.payload
        for version: UInt8 in [0, 2, 0xFF] {
            bytes[0] = version
            let failure = payloadError(bytes)
            #expect(failure?.code == .payloadInvalid)
            #expect(failure?.message.contains("unsupported version \(version)") == true)
        }
    }

    @Test func unknownFlagsThrow() {
        let flagsOffset = 1 + 1 + 27 + 2 + 9
        #expect(VectorInputs.payload[flagsOffset] == 0x07)
        for flag: UInt8 in [0x10, 0x20, 0x80] {
            var bytes = VectorInputs.payload
            bytes[flagsOffset] |= flag
            let failure = payloadError(bytes)
            #expect(failure?.code == .payloadInvalid)
            #expect(failure?.message.contains("unknown payload flags") == true)
        }
    }

    /// supportsContinuationStreams is flag 0x08 of the payload: the vector with it set.
    @Test func continuationStreamsFlagRoundTrips() throws {
        let flagsOffset = 1 + 1 + 27 + 2 + 9
        var bytes = VectorInputs.payload
        bytes[flagsOffset] |= 0x08
        let activity = try Activity(payload: bytes)
        #expect(activity.supportsContinuationStreams)
        #expect(activity.encodedPayload() == bytes)
        #expect(try Activity(payload: VectorInputs.payload).supportsContinuationStreams == false)
    }

    @Test func userInfoMustBeADictionary() {
        let bytes = hex("01 03 612e62 0000 00 0000000000000001 08 00000000")
        let failure = payloadError(bytes)
        #expect(failure?.code == .payloadInvalid)
        #expect(failure?.message.contains("userInfo is not a dictionary") == true)
    }

    @Test func invalidUTF8Throws() {
        let badType = hex("01 03 61ff62 0000 00 0000000000000001 09 00000000")
        #expect(payloadError(badType)?.code == .payloadInvalid)
        let badTitle = hex("01 03 612e62 0001 ff 00 0000000000000001 09 00000000")
        #expect(payloadError(badTitle)?.code == .payloadInvalid)
    }

    @Test func nonFiniteAndUnsortedUserInfoThrow() {
        let nan = hex("01 03 612e62 0000 00 0000000000000001 09 00000001 0001 78 03 7ff8000000000000")
        #expect(payloadError(nan)?.message.contains("non-finite double") == true)
        let unsorted = hex("01 03 612e62 0000 00 0000000000000001 09 00000002 0001 62 04 0001 61 04")
        #expect(payloadError(unsorted)?.message.contains("out of order") == true)
    }

    @Test func decodedFieldsAreValidatedToo() {
        // Well-formed bytes a correct publisher could never produce.
        let badType = Activity(type: "nodots", title: "").encodedPayload()
        #expect(payloadError(badType)?.code == .invalidActivity)
        let controlTitle = Activity(type: "a.b", title: "\u{1B}[2J").encodedPayload()
        #expect(payloadError(controlTitle)?.message == "title contains control, line-separator or bidirectional-override characters.")
        let ftp = Activity(type: "a.b", title: "", webpageURL: "ftp://example.org").encodedPayload()
        #expect(payloadError(ftp)?.code == .invalidActivity)
        let longTitle = Activity(type: "a.b", title: String(repeating: "x", count: 300)).encodedPayload()
        #expect(payloadError(longTitle)?.message == "title is 300 bytes, over the limit of 256.")
    }

    @Test func randomGarbageThrowsOrDecodesCanonically() {
        for (index, bytes) in randomGarbage(seed: 0x4143_5401).enumerated() {
            do throws(HandoffError) {
                let activity = try Activity(payload: bytes)
                #expect(activity.encodedPayload() == bytes, "garbage #\(index)")
            } catch {
                #expect([.payloadInvalid, .invalidActivity].contains(error.code), "garbage #\(index): \(error)")
            }
        }
    }

    @Test func mutatedPayloadsThrowOrDecodeCanonically() {
        var decoded = 0
        for (index, bytes) in mutations(of: VectorInputs.payload, seed: 0x4143_5402).enumerated() {
            do throws(HandoffError) {
                let activity = try Activity(payload: bytes)
                decoded += 1
                #expect(activity.encodedPayload() == bytes, "mutation #\(index)")
            } catch {
                #expect([.payloadInvalid, .invalidActivity].contains(error.code), "mutation #\(index): \(error)")
            }
        }
        #expect(decoded > 0)
    }
}

@Suite struct ActivityJSONTests {
    @Test func fullObjectRoundTrips() throws {
        let json: JSONValue = [
            "type": "org.example.reader.document",
            "title": "Chapter 1",
            "userInfo": ["page": 42, "font": .double(1.5), "cover": ["$data": "3q0="],
                         "opened": ["$date": "2023-11-14T22:13:20Z"]],
            "targetContentIdentifier": "document:moby-dick",
            "webpageURL": "https://example.org/moby-dick",
            "expiresAtMillis": 1_700_000_600_000,
            "sequence": 5,
        ]
        let activity = try Activity(json: json)
        #expect(activity == Activity(type: "org.example.reader.document", title: "Chapter 1",
                                     userInfo: ["page": .integer(42), "font": .double(1.5), "cover": .data([0xDE, 0xAD]),
                                                "opened": .date(1_700_000_000)],
                                     targetContentIdentifier: "document:moby-dick",
                                     webpageURL: "https://example.org/moby-dick",
                                     expiresAtMillis: 1_700_000_600_000, sequence: 5))
        #expect(activity.json == json)
        #expect(try Activity(json: activity.json) == activity)
    }

    @Test func minimalObject() throws {
        let activity = try Activity(json: ["type": "a.b"])
        #expect(activity == Activity(type: "a.b", title: ""))
        #expect(activity.json == ["type": "a.b", "title": "", "userInfo": [:], "sequence": 0])
    }

    @Test func continuationStreamsField() throws {
        let activity = try Activity(json: ["type": "a.b", "supportsContinuationStreams": true])
        #expect(activity.supportsContinuationStreams)
        #expect(activity.json == ["type": "a.b", "title": "", "userInfo": [:], "sequence": 0, "supportsContinuationStreams": true])
        // false and null mean the same as absent, and absent stays absent in the JSON.
        #expect(try Activity(json: ["type": "a.b", "supportsContinuationStreams": false]).json["supportsContinuationStreams"] == nil)
        #expect(try Activity(json: ["type": "a.b", "supportsContinuationStreams": .null]).supportsContinuationStreams == false)
        let error = #expect(throws: HandoffError.self) { try Activity(json: ["type": "a.b", "supportsContinuationStreams": "yes"]) }
        #expect(error?.code == .invalidActivity)
    }

    @Test func nullOptionalStringsMeanAbsent() throws {
        let activity = try Activity(json: ["type": "a.b", "title": nil, "webpageURL": nil, "targetContentIdentifier": nil])
        #expect(activity.title == "")
        #expect(activity.webpageURL == nil)
        #expect(activity.targetContentIdentifier == nil)
    }

    @Test func unknownFieldIsNamed() {
        let failure = jsonError(["type": "a.b", "titel": "typo"])
        #expect(failure?.code == .invalidActivity)
        #expect(failure?.message == "The activity has an unknown field 'titel'.")
        #expect(failure?.fix.contains("title") == true)
    }

    @Test func structuralErrors() {
        #expect(jsonError("a.b")?.message == "The activity must be a JSON object.")
        #expect(jsonError([:])?.message == "The activity has no type.")
        #expect(jsonError(["type": 5])?.message == "The activity has no type.")
        #expect(jsonError(["type": "a.b", "title": 5])?.message == "title must be a string.")
        #expect(jsonError(["type": "a.b", "webpageURL": ["x": 1]])?.message == "webpageURL must be a string.")
        #expect(jsonError(["type": "a.b", "userInfo": [1, 2]])?.message == "userInfo must be a JSON object.")
        #expect(jsonError(["type": "a.b", "userInfo": ["$data": "3q0="]])?.message == "userInfo must be a JSON object.")
    }

    @Test(arguments: [JSONValue.integer(0), .integer(-5), .string("tomorrow"), .double(1.5), .bool(true)])
    func expiresAtMillisMustBePositiveInteger(_ value: JSONValue) {
        let failure = jsonError(["type": "a.b", "expiresAtMillis": value])
        #expect(failure?.message == "expiresAtMillis must be a positive integer.")
    }

    @Test func userInfoErrorsNameTheKeyPath() {
        let null = jsonError(["type": "a.b", "userInfo": ["a": ["b": [1, 2, nil]]]])
        #expect(null?.code == .invalidActivity)
        #expect(null?.message.hasPrefix("userInfo.a.b[2] is null") == true)
        let unknownTyped = jsonError(["type": "a.b", "userInfo": ["when": ["$time": 5]]])
        #expect(unknownTyped?.message == "userInfo.when uses the unknown typed key $time.")
    }

    @Test func jsonDoesNotValidateButPublishersDo() throws {
        // Parsing keeps fields as given; validate() is the publish-time gate.
        let activity = try Activity(json: ["type": "nodots", "webpageURL": "ftp://x"])
        #expect(activity.type == "nodots")
        #expect(throws: HandoffError.self) { try activity.validate() }
    }
}

@Suite struct ActivityTextSafetyTests {
    @Test func invisibleLineBreakersAreRefused() {
        for title in ["a\u{2028}b", "a\u{2029}b", "a\u{202E}b", "a\u{2066}b", "a\u{1B}[2Jb", "a\u{85}b"] {
            #expect(throws: HandoffError.self) { try Activity(type: "org.example.x", title: title).validate() }
        }
        #expect(throws: Never.self) { try Activity(type: "org.example.x", title: "Émile — chapitre 3 📖").validate() }
    }

    @Test func urlsWithSpacesOrImpossiblePortsAreRefused() {
        for url in ["https://example.org:99999/", "https://example.org/a b", "https://example.org:0/"] {
            #expect(throws: HandoffError.self) { try Activity.validateWebpageURL(url) }
        }
        #expect(throws: Never.self) { try Activity.validateWebpageURL("https://example.org:8443/a%20b") }
    }

    @Test func summaryWithEscapeSequenceIsRefusedOnDecode() throws {
        let signer = rfcIdentity()
        let summary = Summary(senderKey: signer.publicKey, senderName: "a", activityType: "\u{1B}[2J", title: "t",
                              payloadSize: 1, payloadDigest: [UInt8](repeating: 0, count: 32), sequence: 1,
                              timestampMillis: 1, expiresAtMillis: 2)
        let signed = try summary.signed(by: signer)
        #expect(throws: WireError.self) { try SignedSummary(decoding: signed.encoded) }
    }
}

/// Titles taken from elsewhere (a page's, a file's name) become titles an activity can hold.
@Suite struct DisplayableTitleTests {
    @Test func unsafeCharactersBecomeSpacesAndLongTitlesAreCutAtACharacter() throws {
        #expect(Activity.displayableTitle("notes\nfinal\u{202E}.md") == "notes final .md")
        let long = String(repeating: "é", count: 200) // 400 bytes
        let cut = Activity.displayableTitle(long)
        #expect(cut.utf8.count == 256 && cut.allSatisfy { $0 == "é" })
        try Activity(type: "a.b", title: Activity.displayableTitle("x\u{7}y\u{2028}z")).validate()
    }
}
