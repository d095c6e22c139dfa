/// When handoffd commits its mDNS registration to avahi-daemon. Pure: the mDNS
/// path feeds it changes, avahi's answers and its one timer, with a monotonic
/// clock in milliseconds, and does what it returns.
///
/// Why: avahi adds a hold-off to an entry group's next registration at every
/// commit, counted from the last one, and from the 15th commit of a group on it
/// is 60 s (avahi-core/entry.c, AVAHI_RR_HOLDOFF_MSEC_RATE_LIMIT). A group
/// committed 1,400 times in a few seconds (enable/disable toggled) was held for
/// hours, showing "registering" until handoffd restarted. So every registration
/// here uses a fresh group, commits are at least `spacingMillis` apart (the
/// newest record wins), and a registration avahi has not confirmed within
/// `watchdogMillis` is made again with a fresh group.
public struct RegistrationPacer: Sendable, Equatable {
    public static let spacingMillis: UInt64 = 1_000
    public static let watchdogMillis: UInt64 = 10_000

    public enum Action: Sendable, Equatable {
        /// Register now, in a fresh entry group.
        case commit
        /// Nothing until then: (re)arm the timer for it.
        case wait(untilMillis: UInt64)
        /// Nothing to do and nothing to wait for.
        case idle
    }

    private var lastCommitMillis: UInt64?
    /// A change arrived within the spacing: commit it when the spacing has passed.
    private var pending = false
    /// Committed, not yet confirmed by avahi.
    private var awaitingSinceMillis: UInt64?

    public init() {}

    /// The record changed, or must be registered again (avahi-daemon came back).
    public mutating func changed(nowMillis: UInt64) -> Action {
        pending = true
        return next(nowMillis: nowMillis)
    }

    /// The timer armed for the last `wait` fired (or any time: it only acts on what is due).
    public mutating func timerFired(nowMillis: UInt64) -> Action {
        if let since = awaitingSinceMillis, nowMillis >= since + Self.watchdogMillis {
            // avahi never confirmed it: register it again, in a fresh group.
            pending = true
        }
        return next(nowMillis: nowMillis)
    }

    /// avahi confirmed the registration (the group is established).
    public mutating func established() {
        awaitingSinceMillis = nil
    }

    /// Nothing is registered any more (withdrawn, or avahi-daemon went away).
    public mutating func withdrawn() {
        pending = false
        awaitingSinceMillis = nil
    }

    private mutating func next(nowMillis: UInt64) -> Action {
        if pending {
            let due = lastCommitMillis.map { $0 + Self.spacingMillis } ?? 0
            guard nowMillis >= due else { return .wait(untilMillis: due) }
            pending = false
            lastCommitMillis = nowMillis
            awaitingSinceMillis = nowMillis
            return .commit
        }
        if let since = awaitingSinceMillis { return .wait(untilMillis: since + Self.watchdogMillis) }
        return .idle
    }
}
