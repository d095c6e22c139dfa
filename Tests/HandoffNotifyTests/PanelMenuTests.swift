import HandoffCore
@testable import HandoffNotify
import Testing

@Suite struct PanelMenuTests {
    static func offer(_ peer: String, name: String? = nil, title: String = "Chapter 2", sequence: Int64 = 1,
                      deliverTo: String = "Reader") -> OfferNotice {
        OfferNotice(peer: peer, name: name ?? "laptop-\(peer)", type: "t", title: title, sequence: sequence, deliverTo: deliverTo,
                    remainingMillis: 60_000)
    }

    @Test func theItemIsShownOnlyWhileSomethingIsOffered() {
        var menu = PanelMenu()
        #expect(menu.update(offers: []) == [])
        #expect(menu.rows.isEmpty)
        #expect(menu.update(offers: [Self.offer("a")]) == [.layoutChanged(revision: 2), .show])
        #expect(menu.shown)
        // The same listing again changes nothing.
        #expect(menu.update(offers: [Self.offer("a")]) == [])
        #expect(menu.update(offers: []) == [.layoutChanged(revision: 3), .hide])
        #expect(!menu.shown)
    }

    @Test func switchedOffItShowsNothingAndOnAgainItShowsWhatIsOffered() {
        var menu = PanelMenu(enabled: false)
        #expect(menu.update(offers: [Self.offer("a")]) == [.layoutChanged(revision: 2)])
        #expect(!menu.shown)
        #expect(menu.setEnabled(true) == [.show])
        #expect(menu.setEnabled(false) == [.hide])
    }

    @Test func rowsNameTheDeviceTheTitleAndWhereItContinues() {
        var menu = PanelMenu()
        _ = menu.update(offers: [Self.offer("b", name: "laptop-b", title: "a_b", deliverTo: "browser"),
                                 Self.offer("a", name: "laptop-a", deliverTo: "Reader"),
                                 Self.offer("c", name: "laptop-c", deliverTo: "terminal")])
        let rows = menu.rows
        #expect(rows.map(\.id) == [PanelMenu.headerID, PanelMenu.separatorID, 4, 6, 8])
        #expect(rows[1].separator)
        #expect(rows[2].label == "\u{201C}Chapter 2\u{201D} from laptop-a (in Reader)")
        // A title's underscore is not a mnemonic.
        #expect(rows[3].label == "\u{201C}a__b\u{201D} from laptop-b (in the browser)")
        #expect(rows[3].enabled)
        // Nothing here continues a terminal-only offer: listed, greyed.
        #expect(rows[4].label == "\u{201C}Chapter 2\u{201D} from laptop-c (no app here opens it)")
        #expect(!rows[4].enabled)
        #expect(menu.summary == "3 nearby laptops offer something to continue")
        #expect(menu.clicked(id: 8) == [])
    }

    @Test func longTitlesAndControlCharactersAreTrimmed() {
        var menu = PanelMenu()
        _ = menu.update(offers: [Self.offer("a", title: String(repeating: "x", count: 200) + "\u{202E}")])
        let label = menu.rows[2].label
        #expect(label.contains(String(repeating: "x", count: 59) + "\u{2026}"))
        #expect(!label.contains("\u{202E}"))
    }

    @Test func aClickContinuesOnceHoweverOftenItIsRepeated() {
        var menu = PanelMenu()
        _ = menu.update(offers: [Self.offer("a")])
        let id = menu.rows[2].id
        let commands = menu.clicked(id: id)
        #expect(commands.last == .accept(Self.offer("a")))
        #expect(menu.clicked(id: id) == [])
        #expect(menu.acceptStarted(Self.offer("a")) == [])
        #expect(menu.rows[2].label.hasPrefix("Continuing"))
        #expect(!menu.rows[2].enabled)
        // Listed again while it runs: still one accept.
        #expect(menu.update(offers: [Self.offer("a")]) == [])
        #expect(menu.clicked(id: id) == [])
        // Continued: the row goes and the same offer is not listed again (as its notification is not shown again).
        #expect(menu.acceptFinished(peer: "a", error: nil) == [.layoutChanged(revision: 4), .hide])
        #expect(menu.update(offers: [Self.offer("a")]) == [])
        #expect(menu.rows.isEmpty)
        // A newer offer from the device is.
        #expect(menu.update(offers: [Self.offer("a", sequence: 2)]) == [.layoutChanged(revision: 5), .show])
    }

    @Test func aClickOnARowDrawnBeforeANewerOfferContinuesNothing() {
        var menu = PanelMenu()
        _ = menu.update(offers: [Self.offer("a", sequence: 1)])
        let old = menu.rows[2].id
        _ = menu.update(offers: [Self.offer("a", title: "Chapter 3", sequence: 2)])
        #expect(menu.rows[2].id != old)
        #expect(menu.clicked(id: old) == [])
        #expect(menu.clicked(id: menu.rows[2].id).last == .accept(Self.offer("a", title: "Chapter 3", sequence: 2)))
    }

    @Test func aFailureIsShownBelowItsRowUntilTheNextClick() {
        var menu = PanelMenu()
        _ = menu.update(offers: [Self.offer("a")])
        let id = menu.rows[2].id
        _ = menu.clicked(id: id)
        _ = menu.acceptFinished(peer: "a", error: HandoffError(.timedOut, "laptop-a did not answer in time.", fix: "Retry."))
        #expect(menu.rows.count == 4)
        #expect(menu.rows[3] == PanelMenu.Row(id: id + 1, label: "Not continued: timed-out. laptop-a did not answer in time.", enabled: false))
        _ = menu.clicked(id: id)
        #expect(menu.rows.count == 3)
    }

    @Test func anOfferWithdrawnWhileItsAcceptRunsGoesWhenItEnds() {
        var menu = PanelMenu()
        _ = menu.update(offers: [Self.offer("a")])
        _ = menu.clicked(id: menu.rows[2].id)
        // Withdrawn: the greyed row waits for the outcome, the item stays.
        #expect(menu.update(offers: []) == [])
        #expect(menu.rows.count == 3)
        #expect(menu.acceptFinished(peer: "a", error: nil) == [.layoutChanged(revision: 4), .hide])
        #expect(menu.rows.isEmpty)
    }

    @Test func theMenuIsBounded() {
        var menu = PanelMenu()
        _ = menu.update(offers: (0..<40).map { Self.offer("p\($0)") })
        #expect(menu.rows.count == 2 + PanelMenu.maximumEntries)
    }

    @Test func theLayoutHasARootAndRowsWithOnlyPropertiesThatDifferFromDefaults() {
        var menu = PanelMenu()
        _ = menu.update(offers: [Self.offer("a"), Self.offer("c", deliverTo: "terminal")])
        let layout = MenuLayout(menu)
        #expect(layout.revision == menu.revision)
        #expect(layout.root.properties.map(\.name) == ["children-display"])
        #expect(layout.children(of: 0).count == 4)
        #expect(layout.children(of: 4).isEmpty)
        #expect(layout.node(PanelMenu.separatorID)?.properties.first?.value == .text("separator"))
        #expect(layout.node(4)?.properties.map(\.name) == ["label"])
        #expect(layout.node(6)?.properties.map(\.name) == ["label", "enabled"])
        #expect(layout.node(99) == nil)
        #expect(layout.allIDs == [0, 1, 3, 4, 6])
    }

    @Test func iconPixmapsAreARGBOfTheirSize() {
        for pixmap in PanelIcon.pixmaps {
            #expect(pixmap.argb.count == Int(pixmap.width * pixmap.height) * 4)
            // Corners are transparent, the centre opaque and white (the arrow).
            #expect(pixmap.argb[0] == 0)
            let centre = (Int(pixmap.height / 2) * Int(pixmap.width) + Int(pixmap.width / 2)) * 4
            #expect(pixmap.argb[centre] == 255)
            #expect(pixmap.argb[centre + 1] > 0xF0)
        }
        #expect(PanelIcon.pixmaps.map(\.width) == [16, 22, 24, 32, 48])
    }
}
