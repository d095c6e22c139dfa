import HandoffCore
@testable import HandoffDaemon
import Testing

private func offering(reserved: UInt64 = 0, nowMillis: UInt64 = 1_000_000) -> Offering {
    Offering(loaded: ReplayState(reservedSequence: reserved),
             schedule: AnnounceSchedule(keepaliveMillis: 30_000, minimumSpacingMillis: 100), wallClockMillis: nowMillis)
}

@Suite struct OfferingTests {
    @Test func theStartIsAboveEverythingReservedBeforeWhateverTheClockSays() {
        // The clock stepped back below what was reserved before the restart.
        var offer = offering(reserved: 5_000_000, nowMillis: 1_000)
        #expect(offer.announceSequence == 5_000_000)
        // The start's own reservation must reach the disk before anything is sent.
        #expect(offer.replayToSave(highest: [:])?.reservedSequence == 5_000_000 + ReplayState.reservationBlock)
        let (next, _) = offer.nextAnnouncement(wallClockMillis: 1_001)
        #expect(next == 5_000_001)
    }

    @Test func sequencesFollowTheClockAndNeverRepeat() {
        var offer = offering(nowMillis: 1_000_000)
        let a = offer.nextAnnouncement(wallClockMillis: 2_000_000).sequence
        let b = offer.nextAnnouncement(wallClockMillis: 2_000_000).sequence
        let activity = offer.nextActivity(wallClockMillis: 1_500_000).sequence
        #expect(a == 2_000_000 && b == 2_000_001)
        // Activities have their own order, also above the start.
        #expect(activity == 1_500_000)
    }

    @Test func aSequencePastTheReservationMustBeSavedAndIsSavedOnlyOnce() {
        var offer = offering(nowMillis: 1_000_000)
        let start = offer.replayToSave(highest: [:])!
        offer.replaySaved(start)
        #expect(offer.replayToSave(highest: [:]) == nil)
        let within = offer.nextAnnouncement(wallClockMillis: start.reservedSequence - 1)
        #expect(within.1 == .reserved)
        // Past it: saved with the new reservation, even when no peer's highest sequence changed
        // (the daemon used to mark it reserved in memory only, so nothing was written).
        let past = offer.nextAnnouncement(wallClockMillis: start.reservedSequence + 10)
        #expect(past.1 == .mustSave)
        let toSave = offer.replayToSave(highest: [:])
        #expect(toSave?.reservedSequence == past.sequence + ReplayState.reservationBlock)
        offer.replaySaved(toSave!)
        #expect(offer.replayToSave(highest: [:]) == nil)
    }

    @Test func anEndedOfferSaysWhetherItWasResignedOrInvalidated() throws {
        var offer = offering()
        #expect(offer.endedBy == [])
        offer.invalidated = true
        #expect(offer.endedBy == .offerInvalidated)
        let encoded = try EncodedActivity(Activity(type: "org.example.read", title: "t"))
        offer.publishers.publish(encoded, by: "reader")
        _ = offer.publishers.resign("reader")
        #expect(offer.endedBy == .offerResigned)
    }
}
