import HandoffAPI
import HandoffCore
import HandoffKit
import HandoffTransport
import Testing

/// For every willContinue, exactly one of continued or failed reaches the app.
@Suite struct ContinuationTrackerTests {
    let type = "org.example.reader"
    let activity = Activity(type: "org.example.reader", title: "t", userInfo: ["page": .integer(42), "cover": .data([1, 2, 3])], sequence: 7)

    func will(_ id: Int64, to app: String = "Reader") -> Event {
        .willContinue(acceptID: id, peer: "K7QM", type: type, deliverTo: app)
    }
    /// The ticket an accept of this user made (AcceptTicketsTests covers the real files).
    static let ticket = String(repeating: "ab", count: 16)
    static let accepted: @Sendable (String?) -> Bool = { $0 == ticket }

    func continued(_ id: Int64, ticket: String? = Self.ticket) -> Event {
        .continued(ContinuedEvent(acceptID: id, peer: "K7QM", activity: ActivityHeader(activity), deliverTo: "Reader",
                                  payloadBytes: Int64(activity.encodedPayload().count), payloadFd: 0, ticket: ticket))
    }
    func failed(_ id: Int64) -> Event {
        .failed(acceptID: id, peer: "K7QM", type: type, error: HandoffError(.timedOut, "m", fix: "f"), deliverTo: "Reader")
    }
    /// The payload as handoffd passes it: Activity's payload encoding in a sealed memfd.
    func payload(_ activity: Activity) throws -> PayloadBuffer {
        try activity.encodedPayload().withUnsafeBytes { try PayloadBuffer.sealed(copying: $0) }
    }

    @Test func successIsWillContinueThenContinuedOnce() throws {
        var tracker = ContinuationTracker(app: "Reader", types: [type], redeem: Self.accepted)
        #expect(tracker.handle(will(1)) == [.willContinue(type: type)])
        #expect(tracker.handle(continued(1), payload: try payload(activity)) == [.continued(activity)])
        #expect(tracker.handle(continued(1), payload: try payload(activity)).isEmpty)
        #expect(tracker.handle(failed(1)).isEmpty)
        #expect(tracker.open.isEmpty)
    }

    @Test func failureIsWillContinueThenDidFailOnce() throws {
        var tracker = ContinuationTracker(app: "Reader", types: [type], redeem: Self.accepted)
        _ = tracker.handle(will(2))
        #expect(tracker.handle(failed(2)) == [.failed(type: type, error: HandoffError(.timedOut, "m", fix: "f"))])
        #expect(tracker.handle(continued(2), payload: try payload(activity)).isEmpty)
    }

    @Test func cancellationFailsWhatIsOpenOnce() throws {
        var tracker = ContinuationTracker(app: "Reader", types: [type], redeem: Self.accepted)
        _ = tracker.handle(will(3))
        _ = tracker.handle(will(4))
        _ = tracker.handle(continued(4), payload: try payload(activity))
        let lost = tracker.connectionLost()
        #expect(lost.count == 1)
        #expect(tracker.connectionLost().isEmpty)
        #expect(tracker.handle(continued(3), payload: try payload(activity)).isEmpty)
    }

    @Test func anOutcomeWithoutItsWillContinueGetsOneFirst() throws {
        var tracker = ContinuationTracker(app: "Reader", types: [type], redeem: Self.accepted)
        #expect(tracker.handle(continued(5), payload: try payload(activity)) == [.willContinue(type: type), .continued(activity)])
    }

    @Test func eventsForOtherAppsAndTypesAreIgnored() {
        var tracker = ContinuationTracker(app: "Reader", types: [type], redeem: Self.accepted)
        #expect(tracker.handle(will(6, to: "Other")).isEmpty)
        #expect(tracker.handle(.willContinue(acceptID: 7, peer: "K7QM", type: "org.example.other", deliverTo: "Reader")).isEmpty)
        #expect(tracker.handle(.peerAppeared(peer: "X", name: "x")).isEmpty)
    }

    /// The activity comes from the payload's mapping, userInfo and all; JSON carries only its fixed fields.
    @Test func continuedDecodesTheActivityFromThePayloadDescriptor() throws {
        var tracker = ContinuationTracker(app: "Reader", types: [type], redeem: Self.accepted)
        _ = tracker.handle(will(8))
        let outcome = tracker.handle(continued(8), payload: try payload(activity))
        #expect(outcome == [.continued(activity)])
        #expect(continued(8).json["activity"]?["userInfo"] == nil)
    }

    @Test func continuedWithoutItsPayloadOrWithAnotherOneFails() throws {
        var tracker = ContinuationTracker(app: "Reader", types: [type], redeem: Self.accepted)
        _ = tracker.handle(will(9))
        #expect(failureCode(tracker.handle(continued(9))) == .payloadInvalid)
        _ = tracker.handle(will(10))
        var other = activity
        other.sequence = 8
        #expect(failureCode(tracker.handle(continued(10), payload: try payload(other))) == .payloadInvalid)
    }

    /// A `continued` nobody here accepted (no ticket, or one not minted here) is not acted on:
    /// ignored outright when its willContinue was not seen, a failure when it was (review,
    /// round three, item 1: a handoffd taken over must not make the documents agent write files).
    @Test func aContinuationNobodyAcceptedHereIsNotActedOn() throws {
        var tracker = ContinuationTracker(app: "Reader", types: [type], redeem: Self.accepted)
        #expect(tracker.handle(continued(12, ticket: nil), payload: try payload(activity)).isEmpty)
        #expect(tracker.handle(continued(13, ticket: String(repeating: "cd", count: 16)), payload: try payload(activity)).isEmpty)
        _ = tracker.handle(will(14))
        #expect(failureCode(tracker.handle(continued(14, ticket: nil), payload: try payload(activity))) == .declined)
        #expect(tracker.handle(continued(14), payload: try payload(activity)).isEmpty, "an accept ends once")
    }

    func failureCode(_ callbacks: [ContinuationTracker.Callback]) -> HandoffError.Code? {
        guard case let .failed(_, error)? = callbacks.first else { return nil }
        return error.code
    }

    @Test func progressReachesTheAppOnlyWhileItsContinuationIsOpen() {
        var tracker = ContinuationTracker(app: "Reader", types: [type], redeem: Self.accepted)
        let progress = TransferProgress(acceptID: 11, peer: "K7QM", type: type, bytes: 1 << 20, total: 4 << 20, bytesPerSecond: 1e8)
        #expect(tracker.handle(.progress(progress)).isEmpty)
        _ = tracker.handle(will(11))
        #expect(tracker.handle(.progress(progress)) == [.transfer(type: type, .progress(progress))])
        #expect(tracker.handle(.transferResumed(acceptID: 11, peer: "K7QM", fromByte: 4096)) == [.transfer(type: type, .resumed(fromByte: 4096))])
        _ = tracker.handle(failed(11))
        #expect(tracker.handle(.progress(progress)).isEmpty)
    }
}
