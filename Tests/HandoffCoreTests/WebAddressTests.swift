import HandoffCore
import Testing

/// A peer's webpageURL is read as the receiving browser reads it (review, round three, item 6).
@Suite struct WebAddressTests {
    @Test(arguments: ["http://localhost:631/admin", "http://LOCALHOST./", "http://printer.localhost/", "http://127.0.0.1:8080/",
                      "http://127.1/", "http://2130706433/", "http://0x7f.0.0.1/", "http://0177.0.0.1/", "http://0.0.0.0:3000/",
                      "http://[::1]:8080/", "http://[0:0:0:0:0:0:0:1]/", "http://[::ffff:127.0.0.1]/", "http://[::]/"])
    func loopbackAddressesAreRefused(_ url: String) {
        #expect(WebAddress.refusal(url)?.contains("this computer itself") == true, "\(url)")
        #expect(throws: HandoffError.self) { try Activity.validateWebpageURL(url) }
    }

    @Test(arguments: ["https://accounts.google.com@evil.example/", "https://user:pass@example.org/", "http://evil.example\\@bank.example/"])
    func aUserNameOrBackslashBeforeTheHostIsRefused(_ url: String) {
        #expect(WebAddress.refusal(url) != nil, "\(url)")
        #expect(throws: HandoffError.self) { try Activity.validateWebpageURL(url) }
    }

    @Test(arguments: ["https://example.org/a?b=c@d", "http://192.168.1.20:8080/", "https://en.wikipedia.org/wiki/Atomic#x", "http://[2001:db8::1]/",
                      "https://127example.org/", "http://localhostess.example/"])
    func ordinaryAddressesPass(_ url: String) throws {
        #expect(WebAddress.refusal(url) == nil, "\(url)")
        try Activity.validateWebpageURL(url)
    }

    @Test func theShownHostIsASCII() {
        #expect(WebAddress.displayHost(of: "https://Example.ORG/page") == "example.org")
        // RFC 3492 section 7.1's sample (L) and a Cyrillic look-alike of "apple".
        #expect(WebAddress.displayHost(of: "https://3年b組金八先生.jp/") == "xn--3b-ww4c5e180e575a65lsy2b.jp")
        #expect(WebAddress.displayHost(of: "https://аррӏе.com/") == "xn--80ak6aa92e.com")
    }

    @Test func ipv4SpellingsAreReadAsBrowsersReadThem() {
        #expect(WebAddress.ipv4("127.0.0.1") == 0x7F00_0001)
        #expect(WebAddress.ipv4("127.1") == 0x7F00_0001)
        #expect(WebAddress.ipv4("0x7f000001") == 0x7F00_0001)
        #expect(WebAddress.ipv4("1.2.3.256") == nil)
        #expect(WebAddress.ipv4("example") == nil)
    }
}

/// Notification markup is escaped per Unicode scalar, and format characters are dropped
/// (review, round three, item 7).
@Suite struct NotificationMarkupTests {
    @Test func combiningMarksAndPrefixesDoNotHideMarkup() {
        let hostile = "\u{600}<b>\u{301}x\u{600}</b>\u{301}"
        let escaped = NotificationMarkup.escape(hostile)
        #expect(!escaped.unicodeScalars.contains("<") && !escaped.unicodeScalars.contains(">"))
        #expect(escaped == "\u{600}&lt;b&gt;\u{301}x\u{600}&lt;/b&gt;\u{301}")
    }

    @Test func formatCharactersAreDropped() {
        #expect(NotificationMarkup.clean("a\u{200B}b\u{202E}c\u{2066}d\u{FEFF}e\u{600}f\u{7}g") == "abcdefg")
        #expect(NotificationMarkup.clean("Rust atomics, chapter 3") == "Rust atomics, chapter 3")
    }
}
