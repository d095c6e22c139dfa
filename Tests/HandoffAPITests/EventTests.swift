import HandoffAPI
import HandoffCore
import Testing

/// One sample of every event; the suite fails when an event has none.
let sampleEvents: [Event] = [
    .peerAppeared(peer: "K7QM", name: "laptop-a"), .peerLeft(peer: "K7QM"), .summaryReceived(peer: "K7QM", offer: offer),
    .summaryWithdrawn(peer: "K7QM"), .declined(peer: "K7QM", type: "a.b"),
    .willContinue(acceptID: 1, peer: "K7QM", type: "a.b", deliverTo: "Reader"),
    .continued(ContinuedEvent(acceptID: 1, peer: "K7QM", activity: ActivityHeader(activity), deliverTo: "Reader", payloadBytes: 120, payloadFd: 0)),
    .continued(ContinuedEvent(acceptID: 1, peer: "K7QM", activity: ActivityHeader(activity), deliverTo: "terminal", payloadBytes: 120)),
    .failed(acceptID: 2, peer: "K7QM", type: "a.b", error: HandoffError(.timedOut, "m", fix: "f"), deliverTo: "Reader"),
    .failed(acceptID: 2, peer: "K7QM", type: "a.b", error: HandoffError(.connectionLost, "m", fix: "f"), deliverTo: nil),
    .progress(TransferProgress(acceptID: 3, peer: "K7QM", type: "a.b", bytes: 1 << 20, total: 64 << 20, bytesPerSecond: 812.5e6)),
    .transferWaiting(TransferWaiting(acceptID: 3, peer: "K7QM", name: "laptop-a", untilMillis: 1_796_010_000_000, reason: "link lost")),
    .transferResumed(acceptID: 3, peer: "K7QM", fromByte: 4_194_304),
    .payloadServed(peer: "K7QM", type: "a.b", sequence: 42), .activityEnded(type: "a.b", reason: "expired"),
    .paired(peer: "K7QM", name: "laptop-a"), .near(peer: "K7QM"), .enabled, .disabled,
    .pairable(peer: "K7QM", name: "laptop-a"), .pairingClosed(reason: "paired"), .unpaired(peer: "K7QM", name: "laptop-a"),
    .pairingCode(PairingCodeEvent(session: 3, peer: "K7QM", name: "laptop-a", code: "123456", role: "responder")),
    .pairingEnded(session: 3, peer: "K7QM", name: "laptop-a", error: HandoffError(.declined, "m", fix: "f")),
]

@Suite struct EventTests {
    @Test func everyEventHasASample() {
        #expect(Set(sampleEvents.map(\.name)) == Set(EventName.allCases))
    }

    @Test(arguments: sampleEvents) func roundTripsThroughItsLine(_ event: Event) throws {
        let json = try JSONValue.parse(String(decoding: JSONWriter.line(event.json), as: UTF8.self))
        #expect(json["event"] == .string(event.name.rawValue))
        #expect(try Event(json: json) == event)
        #expect(MessageDescriptors.declared(in: json) == event.descriptorCount)
    }

    /// The shared names of the progress events (common brief), field by field.
    @Test func progressEventsHaveTheAgreedFields() {
        let progress = Event.progress(TransferProgress(acceptID: 3, peer: "K7QM", type: "a.b", bytes: 10, total: 20, bytesPerSecond: 5))
        #expect(Set(progress.json.objectValue!.keys) == ["event", "acceptId", "peer", "type", "bytes", "total", "bytesPerSecond"])
        let waiting = Event.transferWaiting(TransferWaiting(acceptID: 3, peer: "K7QM", name: "n", untilMillis: 1, reason: "r"))
        #expect(Set(waiting.json.objectValue!.keys) == ["event", "acceptId", "peer", "name", "untilMillis", "reason"])
        #expect(Set(Event.transferResumed(acceptID: 3, peer: "K7QM", fromByte: 0).json.objectValue!.keys) == ["event", "acceptId", "peer", "fromByte"])
    }

    @Test func anUnknownEventIsSkippedAndABrokenOneIsAnError() throws {
        #expect(try Event(json: ["event": "teleported", "peer": "K7QM"]) == nil)
        #expect(throws: HandoffError.self) { try Event(json: ["event": "willContinue", "acceptId": 1]) }
        #expect(throws: HandoffError.self) { try Event(json: ["peer": "K7QM"]) }
    }
}
