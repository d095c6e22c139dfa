import HandoffCore

/// The current offer with everything needed to serve it.
struct PublishedActivity {
    /// The payload, shared with the publisher's entry: kept once.
    var encoded: EncodedActivity
    var summary: SignedSummary
    var activity: ActivityHeader { encoded.header }
    var payload: [UInt8] { encoded.payload }
    /// Which publisher's entry this is, and its generation (PublisherStack.Entry).
    var publisher: String
    var generation: UInt64
}

/// What this host offers and in which order it says so: every publisher's activity (the most
/// recent is on the air), the sequences announcements and activities carry, what of them is on
/// disk (so a restart never reuses one), and which paired devices hear from it next (AnnounceSchedule).
struct Offering {
    var publishers = PublisherStack<EncodedActivity>()
    /// The activity on the air; nil after a resign, invalidate or expiry with no other publisher left.
    var current: PublishedActivity?
    /// The last offer was ended by `invalidate` (said in announcements, so peers can tell it from a resign).
    var invalidated = false
    var schedule: AnnounceSchedule
    private(set) var announceSequence: UInt64
    private(set) var activitySequence: UInt64
    /// The replay protection as it must be on disk (the sequences reserved), and as it is.
    private var replay: ReplayState
    private(set) var savedReplay: ReplayState
    var replaySavedAtMillis: UInt64 = 0

    /// Sequences start above everything sent before a restart (`loaded` from disk), whatever the
    /// clock says. The start's reservation is to be saved before anything is sent (`replayToSave`).
    init(loaded: ReplayState, schedule: AnnounceSchedule, wallClockMillis now: UInt64) {
        var replay = loaded
        announceSequence = replay.startSequence(wallClockMillis: now)
        activitySequence = announceSequence
        self.replay = replay
        savedReplay = loaded
        self.schedule = schedule
    }

    /// The replay state to write, with the paired devices' `highest` sequences; nil when the disk has it.
    func replayToSave(highest: [DeviceKey: UInt64]) -> ReplayState? {
        var wanted = replay
        wanted.highest = highest
        return wanted == savedReplay ? nil : wanted
    }

    mutating func replaySaved(_ state: ReplayState) {
        savedReplay = state
        replay.highest = state.highest
    }

    enum Reservation: Equatable {
        /// Within what is on disk already.
        case reserved
        /// Past it: the replay state must be saved before the sequence is sent.
        case mustSave
    }

    /// The next announcement's sequence: above the last one and at least the wall clock.
    mutating func nextAnnouncement(wallClockMillis now: UInt64) -> (sequence: UInt64, Reservation) {
        announceSequence = max(announceSequence + 1, now)
        return (announceSequence, replay.reserve(through: announceSequence) ? .mustSave : .reserved)
    }

    /// The next activity's sequence, by the same rule.
    mutating func nextActivity(wallClockMillis now: UInt64) -> (sequence: UInt64, Reservation) {
        activitySequence = max(activitySequence + 1, now)
        return (activitySequence, replay.reserve(through: activitySequence) ? .mustSave : .reserved)
    }

    /// What the sender state says of the offer when nothing is on the air.
    var endedBy: Announcement.SenderState {
        guard current == nil else { return [] }
        if !publishers.entries.isEmpty { return .offerResigned }
        return invalidated ? .offerInvalidated : []
    }

    /// Whether `entry` is the one on the air.
    func isCurrent(_ entry: PublisherStack<EncodedActivity>.Entry) -> Bool {
        current?.publisher == entry.publisher && current?.generation == entry.generation
    }
}
