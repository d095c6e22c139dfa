import Dispatch
import Glibc
import HandoffBrowserHost
import HandoffCore
import Testing

/// The framing: a native-endian length, checked before anything is allocated.
@Suite struct NativeMessagingTests {
    @Test func headerIsNativeEndianLength() {
        #expect(NativeMessaging.header([0x10, 0x00, 0x00, 0x00]) == .message(16))
        #expect(NativeMessaging.header([0x00, 0x00, 0x01, 0x00]) == .message(65536))
        #expect(NativeMessaging.lengthBytes(258) == [0x02, 0x01, 0x00, 0x00])
    }

    @Test func lengthOverTheLimitIsRefusedWithoutAllocating() {
        guard case let .oversized(length, error) = NativeMessaging.header([0x01, 0x00, 0x01, 0x00]) else {
            Issue.record("65537 bytes accepted")
            return
        }
        #expect(length == 65537)
        #expect(error.code == .invalidRequest)
        #expect(error.message.contains("65537-byte"))
        guard case .oversized(4_294_967_295, _) = NativeMessaging.header([0xFF, 0xFF, 0xFF, 0xFF]) else {
            Issue.record("4 GiB accepted")
            return
        }
    }

    @Test func frameHasItsLengthFirstAndIsCappedAtOneMebibyte() throws {
        let frame = try NativeMessaging.frame(["type": "ok"])
        #expect(Array(frame.prefix(4)) == NativeMessaging.lengthBytes(frame.count - 4))
        #expect(String(decoding: frame.dropFirst(4), as: UTF8.self) == #"{"type":"ok"}"#)
        let big = String(repeating: "a", count: NativeMessaging.maximumOutgoingBytes)
        #expect(throws: HandoffError.self) { try NativeMessaging.frame(["title": .string(big)]) }
    }
}

@Suite struct ExtensionMessageTests {
    func parse(_ text: String) throws(HandoffError) -> ExtensionMessage { try ExtensionMessage.parse(Array(text.utf8)) }

    @Test func currentTab() throws {
        let message = try parse(#"{"type":"current","url":"https://example.org/a?b#c","title":"Atomics","scrollX":0,"scrollY":1234.6}"#)
        #expect(message == .current(TabState(url: "https://example.org/a?b#c", title: "Atomics", scrollX: 0, scrollY: 1235)))
        #expect(try parse(#"{"type":"resign"}"#) == .resign)
    }

    @Test(arguments: ["file:///etc/passwd", "about:config", "chrome://settings", "moz-extension://x/p.html",
                      "chrome-extension://abc/p.html", "data:text/html,hi", "view-source:https://a.org", "javascript:alert(1)",
                      "https://", "http:///path", "https://a.org/ x", "ftp://a.org", "HTTPS"])
    func nonWebURLsAreRefused(url: String) {
        #expect(throws: HandoffError.self) { try parse(#"{"type":"current","url":"\#(url)","title":"t"}"#) }
    }

    @Test(arguments: ["", "[]", "{", #"{"url":"https://a.org"}"#, #"{"type":"publish"}"#, #"{"type":"current"}"#,
                      #"{"type":"current","url":"https://a.org","evil":1}"#, #"{"type":"current","url":"https://a.org","title":5}"#,
                      #"{"type":"current","url":"https://a.org","scrollY":-1}"#, #"{"type":"current","url":"https://a.org","scrollY":"9"}"#,
                      #"{"type":"resign","url":"https://a.org"}"#, "\u{FF}\u{FE}"])
    func malformedMessagesAreRefusedWithAMessageAndAFix(text: String) {
        do {
            _ = try parse(text)
            Issue.record("accepted \(text)")
        } catch {
            #expect(error.code == .invalidRequest)
            #expect(!error.message.isEmpty && !error.fix.isEmpty)
        }
    }

    @Test func longURLIsRefusedAndLongTitleCut() throws {
        let long = "https://a.org/" + String(repeating: "x", count: ActivityLimits.webpageURLBytes)
        #expect(throws: HandoffError.self) { try parse(#"{"type":"current","url":"\#(long)"}"#) }
        let tab = TabState(url: "https://a.org", title: String(repeating: "é", count: 200))
        let activity = tab.activity(family: .firefox)
        #expect(activity.title.utf8.count <= ActivityLimits.titleBytes)
        #expect(activity.title.allSatisfy { $0 == "é" })
        #expect(activity.type == "io.github.handoff.browser.firefox")
        #expect(activity.userInfo == ["scrollX": .integer(0), "scrollY": .integer(0)])
        #expect(activity.webpageURL == "https://a.org")
        try activity.validate()
    }

    @Test func familyFromTheBrowsersArguments() throws {
        #expect(try BrowserFamily.detect(arguments: ["/usr/bin/handoff-webext-host", "chrome-extension://abcdefghijklmnop/"]) == .chromium)
        #expect(try BrowserFamily.detect(arguments: ["h", "chrome-extension://abc/", "--parent-window=0"]) == .chromium)
        #expect(try BrowserFamily.detect(arguments: ["h", "/usr/lib/mozilla/native-messaging-hosts/io.github.handoff.json",
                                                    "handoff@handoff.github.io"]) == .firefox)
        #expect(throws: HandoffError.self) { try BrowserFamily.detect(arguments: ["handoff-webext-host"]) }
    }

    @Test func continuedActivityBecomesATabWithItsScroll() throws {
        let activity = Activity(type: BrowserFamily.chromium.activityType, title: "t",
                                userInfo: ["scrollX": .integer(3), "scrollY": .double(400.4)], webpageURL: "http://169.254.10.1:8000/a.html")
        #expect(try TabState(continuing: activity) == TabState(url: "http://169.254.10.1:8000/a.html", title: "t", scrollX: 3, scrollY: 400))
        let odd = Activity(type: "x.y", title: "t", userInfo: ["scrollY": .string("no")], webpageURL: "https://a.org")
        #expect(try TabState(continuing: odd).scrollY == 0)
        #expect(throws: HandoffError.self) { try TabState(continuing: Activity(type: "x.y", title: "t")) }
    }

    /// The extension's own names (extension/background.js reads them), written by Codable.
    @Test func hostMessagesKeepTheExtensionsShape() {
        func line(_ message: HostMessage) -> String { String(decoding: JSONWriter.line(message.json).dropLast(), as: UTF8.self) }
        #expect(line(.continue(TabState(url: "https://a.org/", title: "A", scrollX: 3, scrollY: 400)))
            == #"{"scrollX":3,"scrollY":400,"title":"A","type":"continue","url":"https://a.org/"}"#)
        #expect(line(.done("current")) == #"{"done":"current","type":"ok"}"#)
        #expect(line(.error(HandoffError(.declined, "m", fix: "f"))) == #"{"code":"declined","fix":"f","message":"m","type":"error"}"#)
    }
}

@Suite struct HostStateTests {
    @Test func refusedMessagesChangeNothing() {
        var state = HostState(family: .chromium)
        let tab = TabState(url: "https://a.org", title: "A")
        guard case let .publish(published, activity) = state.receive(Array(#"{"type":"current","url":"https://a.org","title":"A"}"#.utf8)) else {
            Issue.record("not published")
            return
        }
        #expect(published == tab && activity.type == "io.github.handoff.browser.chromium")
        state.published(tab)
        // The same tab reported again is not offered again; a scroll is.
        #expect(state.receive(Array(#"{"type":"current","url":"https://a.org","title":"A"}"#.utf8)) == .reply(.done("current")))
        guard case .publish = state.receive(Array(#"{"type":"current","url":"https://a.org","title":"A","scrollY":900}"#.utf8)) else {
            Issue.record("a scrolled tab was not offered")
            return
        }
        guard case .reply(.error) = state.receive(Array(#"{"type":"current","url":"file:///x"}"#.utf8)) else {
            Issue.record("file: accepted")
            return
        }
        #expect(state.offered == tab)
        #expect(state.receive(Array(#"{"type":"resign"}"#.utf8)) == .resign)
        state.resigned()
        // Nothing offered: a resign does not reach handoffd, where it would end another publisher's activity.
        #expect(state.receive(Array(#"{"type":"resign"}"#.utf8)) == .reply(.done("resign")))
    }
}

/// The host's real read loop over pipes, with no handoffd: refusals come back
/// as messages and the loop goes on; end of input ends it.
@Suite struct WebExtensionHostPipeTests {
    @Test func malformedAndOversizedMessagesGetErrorsAndTheHostGoesOn() throws {
        var toHost: [Int32] = [0, 0], fromHost: [Int32] = [0, 0]
        #expect(pipe(&toHost) == 0 && pipe(&fromHost) == 0)
        let host = WebExtensionHost(family: .firefox, socketPath: "/nonexistent/handoffd.sock", input: toHost[0], output: fromHost[1])
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            host.run()
            done.signal()
        }
        func send(_ bytes: [UInt8]) { _ = bytes.withUnsafeBytes { write(toHost[1], $0.baseAddress, $0.count) } }
        func receive() -> String {
            var header = [UInt8](repeating: 0, count: 4)
            _ = read(fromHost[0], &header, 4)
            guard case let .message(length) = NativeMessaging.header(header) else { return "" }
            var body = [UInt8](repeating: 0, count: length)
            var got = 0
            while got < length { got += body[got...].withUnsafeMutableBytes { read(fromHost[0], $0.baseAddress, $0.count) } }
            return String(decoding: body, as: UTF8.self)
        }
        send(NativeMessaging.lengthBytes(3) + Array("{x}".utf8))
        #expect(receive().contains(#""code":"invalid-request""#))
        let oversized = NativeMessaging.maximumIncomingBytes + 1
        send(NativeMessaging.lengthBytes(oversized) + [UInt8](repeating: 0x20, count: oversized))
        #expect(receive().contains("65537-byte message"))
        // Still reading frames after the skip; no daemon, so the publish itself fails, clearly.
        send(NativeMessaging.lengthBytes(17) + Array(#"{"type":"resign"}"#.utf8))
        #expect(receive() == #"{"done":"resign","type":"ok"}"#)
        let current = Array(#"{"type":"current","url":"https://a.org","title":"A"}"#.utf8)
        send(NativeMessaging.lengthBytes(current.count) + current)
        #expect(receive().contains(#""code":"daemon-unavailable""#))
        close(toHost[1])
        done.wait()
        close(toHost[0]); close(fromHost[0]); close(fromHost[1])
    }
}

/// The vector in Docs/PROTOCOL.md ("Browser extension and native messaging host"), byte for byte.
@Suite struct NativeMessagingVectorTests {
    @Test func theDocumentedFrameReadsAsTheTab() throws {
        let hex = """
            57 00 00 00
            7b 22 74 79 70 65 22 3a 22 63 75 72 72 65 6e 74 22 2c 22 75 72 6c 22 3a 22 68 74 74 70 73 3a 2f
            2f 65 78 61 6d 70 6c 65 2e 6f 72 67 2f 61 22 2c 22 74 69 74 6c 65 22 3a 22 41 22 2c 22 73 63 72
            6f 6c 6c 58 22 3a 30 2c 22 73 63 72 6f 6c 6c 59 22 3a 31 35 30 30 7d
            """
        let bytes = hex.split(whereSeparator: { $0 == " " || $0 == "\n" }).map { UInt8($0, radix: 16)! }
        #expect(NativeMessaging.header(Array(bytes.prefix(4))) == .message(87))
        #expect(bytes.count == 4 + 87)
        #expect(try ExtensionMessage.parse(Array(bytes.dropFirst(4))) == .current(TabState(url: "https://example.org/a", title: "A", scrollX: 0, scrollY: 1500)))
    }
}

/// Found by the native-message fuzz target: a URL the parser took that the activity refused.
@Suite struct TabAcceptanceTests {
    @Test func whatTheParserAcceptsTheActivityAccepts() throws {
        var body = Array(#"{"type":"current","url":"https://exa.ple.og/a","title":"A"}"#.utf8)
        body[body.firstIndex(of: UInt8(ascii: "."))!] = 0xED // not UTF-8: the host name is no longer ASCII
        #expect(throws: HandoffError.self) { try ExtensionMessage.parse(body) }
        let tab = try ExtensionMessage.parse(Array(#"{"type":"current","url":"https://example.org/","title":"Tab\there\u202Eevil"}"#.utf8))
        guard case let .current(state) = tab else { Issue.record("not a tab"); return }
        let activity = state.activity(family: .firefox)
        try activity.validate()
        #expect(activity.title == "Tab here evil")
    }
}
