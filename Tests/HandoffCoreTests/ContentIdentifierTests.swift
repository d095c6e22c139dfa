import HandoffCore
import Testing

@Suite struct ContentIdentifierTests {
    @Test(arguments: [
        ("document:3F2A-99", "document", "3F2A-99"),
        ("x:y", "x", "y"),
        ("chat.thread-2:abc", "chat.thread-2", "abc"),
        ("urn:isbn:978-0-14-243724-7", "urn", "isbn:978-0-14-243724-7"),
        ("a:!~#$%&'()*+,/;=?@[]^_`{|}", "a", "!~#$%&'()*+,/;=?@[]^_`{|}"),
    ])
    func parsesAndRoundTrips(text: String, scheme: String, opaque: String) throws {
        let identifier = try #require(ContentIdentifier(parsing: text))
        #expect(identifier.scheme == scheme)
        #expect(identifier.opaqueID == opaque)
        #expect(identifier.description == text)
        #expect(ContentIdentifier(parsing: identifier.description) == identifier)
        #expect(ContentIdentifier(scheme: scheme, opaqueID: opaque) == identifier)
    }

    @Test(arguments: [
        "",                       // nothing
        "document",               // no colon
        "document:",              // empty opaque id
        ":3F2A",                  // empty scheme
        "Document:3F2A",          // uppercase scheme
        "DOC:1",
        "1doc:3F2A",              // scheme must start with a letter
        "-doc:1",
        "doc_x:1",                // '_' not allowed in a scheme
        "doc x:1",                // space in scheme
        "doc:3F 2A",              // space in opaque id
        "doc:3F2A\n",             // control character
        "doc:\u{7F}",             // DEL
        "doc:é",                  // non-ASCII opaque id
        "dóc:1",                  // non-ASCII scheme
        "doc:3F2A\u{200B}",       // invisible non-ASCII
    ])
    func failsClosed(_ text: String) {
        #expect(ContentIdentifier(parsing: text) == nil)
    }

    @Test func schemeLengthLimit() {
        let scheme32 = String(repeating: "s", count: 32)
        #expect(ContentIdentifier(parsing: scheme32 + ":x") != nil)
        #expect(ContentIdentifier(parsing: scheme32 + "s:x") == nil)
    }

    @Test func totalLengthLimitIsTheActivityLimit() {
        let atLimit = "doc:" + String(repeating: "x", count: ActivityLimits.contentIdentifierBytes - 4)
        #expect(atLimit.utf8.count == 256)
        #expect(ContentIdentifier(parsing: atLimit) != nil)
        #expect(ContentIdentifier(parsing: atLimit + "x") == nil)
        #expect(ContentIdentifier(parsing: "doc:" + String(repeating: "x", count: 100_000)) == nil)
    }

    @Test func memberwiseInitValidatesToo() {
        #expect(ContentIdentifier(scheme: "Doc", opaqueID: "1") == nil)
        #expect(ContentIdentifier(scheme: "doc", opaqueID: "") == nil)
        #expect(ContentIdentifier(scheme: "doc", opaqueID: "a b") == nil)
        #expect(ContentIdentifier(scheme: "", opaqueID: "1") == nil)
    }
}
