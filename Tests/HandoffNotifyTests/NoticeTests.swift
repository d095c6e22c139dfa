import HandoffAPI
import HandoffCore
@testable import HandoffNotify
import Testing

/// What a notification says, for each kind of server and each place an offer continues.
@Suite struct NoticeTests {
    let offer = OfferNotice(peer: "K7QM-2XPA-9D3F-H6RT", name: "laptop-a", type: "org.example.reader.document",
                            title: "Rust <atomics> & \"fences\"", sequence: 7, deliverTo: "Reader", remainingMillis: 60_000)
    let full = ServerCapabilities(["actions", "body", "body-markup"])
    let plain = ServerCapabilities(["body"])

    @Test func namesTheDeviceTheTitleAndTheApp() {
        let notice = Notice(offer: offer, capabilities: ServerCapabilities(["actions"]))
        #expect(notice.summary == "Continue from laptop-a")
        #expect(notice.body == "Rust <atomics> & \"fences\"\nContinues in Reader.")
        #expect(notice.actions == ["default", "Continue", "continue", "Continue", "decline", "Not now"])
    }

    @Test func escapesTheTitleWhereTheServerReadsMarkup() {
        let notice = Notice(offer: offer, capabilities: full)
        #expect(notice.body == "Rust &lt;atomics&gt; &amp; &quot;fences&quot;\n<i>Continues in Reader.</i>")
        // The summary is plain text in every server (the specification says so).
        #expect(notice.summary == "Continue from laptop-a")
    }

    /// Issue 25: dunst listed "Continue" twice in its menu (the default action and the Continue action).
    @Test func aServerThatListsTheDefaultActionGetsOneContinue() {
        for server in ["dunst", "mako"] {
            let notice = Notice(offer: offer, capabilities: ServerCapabilities(["actions"], serverName: server))
            #expect(notice.actions == ["default", "Continue", "decline", "Not now"])
        }
        // GNOME Shell and Plasma show only the other actions as buttons: Continue stays one.
        let shell = Notice(offer: offer, capabilities: ServerCapabilities(["actions"], serverName: "gnome-shell"))
        #expect(shell.actions == ["default", "Continue", "continue", "Continue", "decline", "Not now"])
    }

    @Test func withoutActionsAClickContinues() {
        #expect(Notice(offer: offer, capabilities: plain).actions == ["default", "Continue"])
    }

    @Test func webPageAndTerminal() {
        var web = offer
        web.deliverTo = "browser"
        #expect(Notice(offer: web, capabilities: plain).body.hasSuffix("\nOpens as a web page in the browser."))
        var terminal = offer
        terminal.deliverTo = "terminal"
        let notice = Notice(offer: terminal, capabilities: full)
        #expect(notice.summary == "Offered by laptop-a")
        #expect(notice.body.hasSuffix("run &apos;handoff-peer accept laptop-a&apos; in a terminal.</i>"))
        // Nothing here continues it: no Continue, and a click does nothing.
        #expect(notice.actions == ["decline", "Not now"])
        #expect(Notice(offer: terminal, capabilities: plain).actions == [])
    }

    @Test func controlCharactersFromThePeerAreDropped() {
        var garbled = offer
        garbled.title = "a\u{1B}[2Jb\u{7}c"
        garbled.name = "lap\u{0}top"
        let notice = Notice(offer: garbled, capabilities: plain)
        #expect(notice.summary == "Continue from laptop")
        #expect(notice.body.hasPrefix("a[2Jbc\n"))
    }

    @Test func aFailureNamesTheConditionAndTheFix() {
        let error = HandoffError(.proximity, "laptop-a is not near this host.", fix: "Bring the laptops closer & try again.")
        let notice = Notice(failure: error, from: offer, capabilities: full)
        #expect(notice.summary == "Not continued from laptop-a: proximity")
        #expect(notice.body == "laptop-a is not near this host.\n<b>Fix:</b> Bring the laptops closer &amp; try again.")
        #expect(notice.actions == [])
        #expect(Notice(failure: error, from: offer, capabilities: plain).body == "laptop-a is not near this host.\nFix: Bring the laptops closer & try again.")
    }

    @Test func readsListEntries() throws {
        let entry = try PeerEntry(json: ["peer": "K7QM", "name": "laptop-a", "hosts": [], "port": 47181, "lastSeenMillisAgo": 5,
                                         "paths": [], "proximity": nil, "offer": [
            "type": "t.x", "title": "T", "sequence": 9, "deliverTo": "browser", "payloadSize": 10, "digest": "00",
            "timestampMillis": 1_000, "expiresAtMillis": 61_000, "ageMillis": 10_000]], context: "a peer")
        #expect(OfferNotice(listEntry: entry) == OfferNotice(peer: "K7QM", name: "laptop-a", type: "t.x", title: "T", sequence: 9,
                                                             deliverTo: "browser", remainingMillis: 50_000, digest: "00"))
        var idle = entry
        idle.offer = nil
        #expect(OfferNotice(listEntry: idle) == nil)
        // An offer without where it continues (not from list) is not shown.
        var partial = entry
        partial.offer?.deliverTo = nil
        #expect(OfferNotice.offers(inList: [entry, partial, idle]).count == 1)
    }
}
