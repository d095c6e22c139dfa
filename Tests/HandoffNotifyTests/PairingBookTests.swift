import HandoffCore
@testable import HandoffNotify
import Testing

@Suite struct PairingBookTests {
    private let declined = HandoffError(.declined, "laptop-a declined, or its screen showed another code.", fix: "Pair again.")

    @Test func aPairableDeviceIsOfferedAndPairStartsPairingOnce() {
        var book = PairingBook()
        let shown = book.pairable(peer: "K7QM", name: "laptop-a")
        guard case let .notify(key, notice, 0)? = shown.first else { Issue.record("not shown: \(shown)"); return }
        #expect(notice.summary == "laptop-a can be paired")
        #expect(notice.actions == ["pair", "Pair…"])
        #expect(book.pairable(peer: "K7QM", name: "laptop-a").isEmpty)  // one per device
        #expect(book.notified(key: key, id: 7).isEmpty)
        #expect(book.actionInvoked(id: 7, key: "pair") == [.close(7), .pair(peer: "K7QM", name: "laptop-a")])
        #expect(book.actionInvoked(id: 7, key: "pair").isEmpty)
    }

    /// Pairing closed here: every "can be paired" goes, shown or still on its way; dialogs stay.
    @Test func pairingClosedTakesEveryPairableAway() {
        var book = PairingBook()
        _ = book.pairable(peer: "K7QM", name: "laptop-a")
        _ = book.pairable(peer: "P2XY", name: "laptop-c")
        _ = book.code(session: 4, peer: "Z9ZZ", name: "laptop-d", code: "123456")
        #expect(book.notified(key: "pairable:K7QM", id: 7).isEmpty)
        #expect(book.pairingClosed() == [.close(7)])  // the other's id has not come yet: closed when it does
        #expect(book.notified(key: "pairable:P2XY", id: 8) == [.close(8)])
        #expect(book.pairingClosed().isEmpty)
        #expect(book.owns(id: 9) == false)
        #expect(book.notified(key: "session:4", id: 9).isEmpty)
        #expect(book.owns(id: 9))
    }

    @Test func codesAreShownPerDialogAndAnsweredExactlyOnce() {
        var book = PairingBook()
        let first = book.code(session: 1, peer: "K7QM", name: "laptop-a", code: "123456")
        let second = book.code(session: 2, peer: "X9ZZ", name: "stranger", code: "654321")
        #expect(book.code(session: 1, peer: "K7QM", name: "laptop-a", code: "123456").isEmpty)  // event and reply: one notification
        guard case let .notify(key, notice, _)? = first.first, case let .notify(otherKey, _, _)? = second.first else {
            Issue.record("not shown")
            return
        }
        #expect(notice.summary == "Pair with laptop-a? Code 123 456")
        #expect(notice.actions == ["pair", "Pair", "reject", "Reject"])
        _ = book.notified(key: key, id: 10)
        _ = book.notified(key: otherKey, id: 11)
        #expect(book.actionInvoked(id: 11, key: "reject") == [.confirm(session: 2, accept: false)])
        #expect(book.actionInvoked(id: 10, key: "pair") == [.confirm(session: 1, accept: true)])
        #expect(book.actionInvoked(id: 10, key: "reject").isEmpty)
        // Declined elsewhere: the dialog's notification gives way to why.
        let ended = book.ended(session: 2, peer: "X9ZZ", name: "stranger", error: declined)
        #expect(ended.first == .close(11))
        guard case let .notify(_, outcome, 0)? = ended.last else { Issue.record("no outcome: \(ended)"); return }
        #expect(outcome.summary == "Not paired with stranger")
        // Paired: the code goes, "Paired with" comes.
        let paired = book.paired(peer: "K7QM", name: "laptop-a")
        #expect(paired.first == .close(10))
        guard case let .notify(_, done, _)? = paired.last else { Issue.record("no outcome"); return }
        #expect(done.summary == "Paired with laptop-a")
    }

    @Test func unpairingIsToldBriefly() {
        var book = PairingBook()
        guard case let .notify(_, notice, 0)? = book.unpaired(peer: "K7QM", name: "laptop-a").first else { Issue.record("not shown"); return }
        #expect(notice.summary == "No longer paired with laptop-a")
        #expect(notice.actions.isEmpty && notice.expireMillis == 5_000)
    }

    @Test func strangersCannotFillTheScreen() {
        var book = PairingBook()
        let shown = (0..<10).flatMap { book.pairable(peer: "P\($0)", name: "x\($0)") }
        #expect(shown.count == PairingBook.maximumPairable)
    }

    @Test func aNameIsEscapedWhereTheServerReadsMarkup() {
        var book = PairingBook()
        book.markup = true
        guard case let .notify(_, notice, _)? = book.pairable(peer: "K7QM", name: "<b>a</b>").first else { Issue.record("not shown"); return }
        #expect(notice.body.contains("&lt;b&gt;a&lt;/b&gt;"))
    }

    @Test func aCodeClosedBeforeItsIDCameIsClosedWhenItComes() {
        var book = PairingBook()
        _ = book.pairable(peer: "K7QM", name: "laptop-a")
        // The dialog's code arrives before the server answered the first Notify.
        _ = book.code(session: 1, peer: "K7QM", name: "laptop-a", code: "123456")
        #expect(book.notified(key: "pairable:K7QM", id: 3) == [.close(3)])
    }
}
