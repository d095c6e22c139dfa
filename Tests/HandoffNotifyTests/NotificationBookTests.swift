import HandoffCore
@testable import HandoffNotify
import Testing

/// One notification per device: shown once, replaced by a newer offer, withdrawn with the offer,
/// Continue and Not now carried out once.
@Suite struct NotificationBookTests {
    func offer(_ peer: String = "P1", sequence: Int64 = 1, deliverTo: String = "Reader") -> OfferNotice {
        OfferNotice(peer: peer, name: "laptop-\(peer)", type: "t.x", title: "Title \(sequence)", sequence: sequence,
                    deliverTo: deliverTo, remainingMillis: 30_000)
    }

    func notice(_ offer: OfferNotice, _ book: NotificationBook) -> Notice { Notice(offer: offer, capabilities: book.capabilities) }

    /// A book showing `offer` as notification `id`.
    func showing(_ offer: OfferNotice, id: UInt32 = 11) -> NotificationBook {
        var book = NotificationBook()
        _ = book.update(offers: [offer])
        _ = book.notified(peer: offer.peer, id: id)
        return book
    }

    @Test func anOfferIsShownOnceThenReplacedByANewerOne() {
        var book = NotificationBook()
        let first = offer()
        #expect(book.update(offers: [first]) == [.notify(peer: "P1", notice: notice(first, book), replaces: 0)])
        #expect(book.notified(peer: "P1", id: 11) == [])
        #expect(book.update(offers: [first]) == [])
        let second = offer(sequence: 2)
        #expect(book.update(offers: [second]) == [.notify(peer: "P1", notice: notice(second, book), replaces: 11)])
        #expect(book.showsOffers)
    }

    @Test func aNewerOfferWhileNotifyIsUnansweredWaitsForTheID() {
        var book = NotificationBook()
        _ = book.update(offers: [offer()])
        #expect(book.update(offers: [offer(sequence: 2)]) == [])
        #expect(book.notified(peer: "P1", id: 11) == [.notify(peer: "P1", notice: notice(offer(sequence: 2), book), replaces: 11)])
    }

    @Test func aWithdrawnOfferClosesItsNotification() {
        var book = showing(offer())
        #expect(book.update(offers: []) == [.close(11)])
        #expect(!book.showsOffers)
        // Withdrawn before the server answered: closed once the id is known.
        var early = NotificationBook()
        _ = early.update(offers: [offer()])
        _ = early.update(offers: [])
        #expect(early.notified(peer: "P1", id: 12) == [.close(12)])
    }

    @Test func devicesHaveOneNotificationEach() {
        var book = NotificationBook()
        let commands = book.update(offers: [offer("P1"), offer("P2")])
        #expect(commands.count == 2)
        _ = book.notified(peer: "P1", id: 1)
        _ = book.notified(peer: "P2", id: 2)
        #expect(book.update(offers: [offer("P2")]) == [.close(1)])
    }

    @Test func continueRunsOnceWhateverIsInvoked() {
        var book = showing(offer())
        #expect(book.actionInvoked(id: 11, key: "continue") == [.accept(offer())])
        #expect(book.actionInvoked(id: 11, key: "default") == [])
        #expect(book.actionInvoked(id: 11, key: "continue") == [])
        #expect(book.actionInvoked(id: 11, key: "decline") == [])
        // The server closes it after the action; the outcome still finds it.
        book.closed(id: 11)
        #expect(book.acceptFinished(peer: "P1", error: nil) == [.close(11)])
        // The same offer, still listed, is not shown again.
        #expect(book.update(offers: [offer()]) == [])
    }

    @Test func aClickContinues() {
        var book = showing(offer())
        #expect(book.actionInvoked(id: 11, key: "default") == [.accept(offer())])
    }

    @Test func otherIdsAndKeysDoNothing() {
        var book = showing(offer())
        #expect(book.actionInvoked(id: 12, key: "continue") == [])
        #expect(book.actionInvoked(id: 11, key: "open") == [])
    }

    @Test func aTerminalOfferCannotBeContinuedFromTheNotification() {
        let terminal = offer(deliverTo: "terminal")
        var book = showing(terminal)
        #expect(book.actionInvoked(id: 11, key: "default") == [])
        #expect(book.actionInvoked(id: 11, key: "continue") == [])
        #expect(book.actionInvoked(id: 11, key: "decline") == [.decline(terminal)])
    }

    @Test func aFailureReplacesTheNotificationAndStays() {
        var book = showing(offer())
        _ = book.actionInvoked(id: 11, key: "continue")
        let error = HandoffError(.network, "laptop-P1 does not answer.", fix: "Check the network.")
        #expect(book.acceptFinished(peer: "P1", error: error)
                == [.notify(peer: "P1", notice: Notice(failure: error, from: offer(), capabilities: book.capabilities), replaces: 11)])
        #expect(book.notified(peer: "P1", id: 11) == [])
        // The offer going away leaves the failure on screen; a newer offer replaces it.
        #expect(book.update(offers: []) == [])
        #expect(book.update(offers: [offer(sequence: 2)]) == [.notify(peer: "P1", notice: notice(offer(sequence: 2), book), replaces: 11)])
    }

    @Test func notNowDeclinesAndCloses() {
        var book = showing(offer())
        #expect(book.actionInvoked(id: 11, key: "decline") == [.decline(offer())])
        #expect(book.declineFinished(peer: "P1") == [.close(11)])
        #expect(book.update(offers: [offer()]) == [])
    }

    @Test func aDismissedOfferStaysDismissed() {
        var book = showing(offer())
        book.closed(id: 11)
        #expect(book.update(offers: [offer()]) == [])
        #expect(book.update(offers: [offer(sequence: 2)]) == [.notify(peer: "P1", notice: notice(offer(sequence: 2), book), replaces: 0)])
    }

    @Test func aRefusedNotifyIsTriedAgain() {
        var book = NotificationBook()
        _ = book.update(offers: [offer()])
        book.notifyFailed(peer: "P1")
        #expect(book.update(offers: [offer()]).count == 1)
    }

    @Test func aNewServerShowsTheOffersAgainAsItCan() {
        var book = showing(offer())
        let plain = ServerCapabilities(actions: false, bodyMarkup: false)
        #expect(book.serverChanged(plain) == [.notify(peer: "P1", notice: Notice(offer: offer(), capabilities: plain), replaces: 0)])
    }

    @Test func theSoonestExpiryIsKnown() {
        var book = NotificationBook()
        var short = offer("P2")
        short.remainingMillis = 900
        _ = book.update(offers: [offer("P1"), short])
        _ = book.notified(peer: "P1", id: 1)
        _ = book.notified(peer: "P2", id: 2)
        #expect(book.soonestExpiryMillis == 900)
        #expect(Set(book.shownIDs) == [1, 2])
    }
}
