import HandoffCore
import HandoffKit
import Testing

/// For every willContinue, exactly one of continued or failed reaches the app.
@Suite struct ContinuationTrackerTests {
    let type = "org.example.reader"
    let activity = Activity(type: "org.example.reader", title: "t", sequence: 7)

    func will(_ id: Int64, to app: String = "Reader") -> JSONValue {
        ["event": "willContinue", "acceptId": .integer(id), "type": .string(type), "deliverTo": .string(app)]
    }
    func continued(_ id: Int64) -> JSONValue {
        ["event": "continued", "acceptId": .integer(id), "activity": activity.json, "deliverTo": "Reader"]
    }
    func failed(_ id: Int64) -> JSONValue {
        ["event": "failed", "acceptId": .integer(id), "type": .string(type), "deliverTo": "Reader",
         "error": ["code": "timed-out", "message": "m", "fix": "f"]]
    }

    @Test func successIsWillContinueThenContinuedOnce() {
        var tracker = ContinuationTracker(app: "Reader", types: [type])
        #expect(tracker.handle(will(1)) == [.willContinue(type: type)])
        #expect(tracker.handle(continued(1)) == [.continued(activity)])
        #expect(tracker.handle(continued(1)).isEmpty)
        #expect(tracker.handle(failed(1)).isEmpty)
        #expect(tracker.open.isEmpty)
    }

    @Test func failureIsWillContinueThenDidFailOnce() {
        var tracker = ContinuationTracker(app: "Reader", types: [type])
        _ = tracker.handle(will(2))
        #expect(tracker.handle(failed(2)) == [.failed(type: type, error: HandoffError(.timedOut, "m", fix: "f"))])
        #expect(tracker.handle(continued(2)).isEmpty)
    }

    @Test func cancellationFailsWhatIsOpenOnce() {
        var tracker = ContinuationTracker(app: "Reader", types: [type])
        _ = tracker.handle(will(3))
        _ = tracker.handle(will(4))
        _ = tracker.handle(continued(4))
        let lost = tracker.connectionLost()
        #expect(lost.count == 1)
        #expect(tracker.connectionLost().isEmpty)
        #expect(tracker.handle(continued(3)).isEmpty)
    }

    @Test func anOutcomeWithoutItsWillContinueGetsOneFirst() {
        var tracker = ContinuationTracker(app: "Reader", types: [type])
        #expect(tracker.handle(continued(5)) == [.willContinue(type: type), .continued(activity)])
    }

    @Test func eventsForOtherAppsAndTypesAreIgnored() {
        var tracker = ContinuationTracker(app: "Reader", types: [type])
        #expect(tracker.handle(will(6, to: "Other")).isEmpty)
        #expect(tracker.handle(["event": "willContinue", "acceptId": 7, "type": "org.example.other"]).isEmpty)
        #expect(tracker.handle(["event": "peerAppeared", "peer": "X"]).isEmpty)
    }
}
