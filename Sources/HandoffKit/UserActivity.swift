import Dispatch
import FoundationEssentials
import Glibc
import HandoffAPI
import HandoffCore
import HandoffTransport
import HandoffRuntime

/// An activity an app offers to continue on another host, with
/// NSUserActivity's semantics (Docs/APPS.md):
/// - `becomeCurrent()` makes it the one this host offers; `resignCurrent()`
///   stops offering it for now; `invalidate()` ends it for good.
/// - Setting `needsSave` marks it stale: before it is offered again, `willSave`
///   is called to refill it, then it is republished. Changing
///   `targetContentIdentifier` (or any field) does not set `needsSave`.
/// - `isEligibleForHandoff == false` keeps it off the network entirely.
/// - `requiredUserInfoKeys` must all be present in `userInfo` when it is offered.
/// - With `supportsContinuationStreams`, the app that continues it may open a
///   byte stream back: `awaitContinuationStream()` returns it here.
public final class UserActivity: @unchecked Sendable {
    // @unchecked Sendable: the activity's state (`_` properties, `refreshScheduled`) is read
    // and written under `lock`; the public settings are set before it is published.
    private let lock = Locked(())
    private let client: HandoffClient
    private var _activity: Activity
    private var _needsSave = false
    private var _isCurrent = false
    private var _invalidated = false
    private var refreshScheduled = false
    /// The sequence the daemon gave the latest publish (0: not published).
    private var _sequence: UInt64 = 0

    public var isEligibleForHandoff = true
    public var requiredUserInfoKeys: Set<String> = []
    /// Called (on a background queue) to refill the activity before it is offered again.
    public var willSave: (@Sendable (UserActivity) -> Void)?
    /// Errors from publishing in the background (after `needsSave`).
    public var onError: (@Sendable (HandoffError) -> Void)?

    /// How long to gather several `needsSave` in a row into one republish.
    public static let saveCoalescing: DispatchTimeInterval = .milliseconds(100)
    private static let queue = DispatchQueue(label: "handoffkit.user-activity")

    public init(type: String, client: HandoffClient) {
        _activity = Activity(type: type, title: "")
        self.client = client
    }

    private func locked<T>(_ body: () -> T) -> T {
        lock.withLock { _ in body() }
    }

    public var activityType: String { locked { _activity.type } }
    public var title: String {
        get { locked { _activity.title } }
        set { locked { _activity.title = newValue } }
    }
    public var userInfo: [String: PropertyListValue] {
        get { locked { _activity.userInfo } }
        set { locked { _activity.userInfo = newValue } }
    }
    public var targetContentIdentifier: String? {
        get { locked { _activity.targetContentIdentifier } }
        set { locked { _activity.targetContentIdentifier = newValue } }
    }
    public var webpageURL: String? {
        get { locked { _activity.webpageURL } }
        set { locked { _activity.webpageURL = newValue } }
    }
    public var expirationDate: Date? {
        get { locked { _activity.expiresAtMillis.map { Date(timeIntervalSince1970: Double($0) / 1000) } } }
        set { locked { _activity.expiresAtMillis = newValue.map { UInt64(max(0, $0.timeIntervalSince1970 * 1000)) } } }
    }
    public var isCurrent: Bool { locked { _isCurrent } }
    /// Lets the continuing app open a stream to this one (Apple: `supportsContinuationStreams`).
    public var supportsContinuationStreams: Bool {
        get { locked { _activity.supportsContinuationStreams } }
        set { locked { _activity.supportsContinuationStreams = newValue } }
    }

    /// Marks the activity stale. While it is current, `willSave` runs and the
    /// refreshed activity is offered again shortly after.
    public var needsSave: Bool {
        get { locked { _needsSave } }
        set {
            let schedule: Bool = locked {
                _needsSave = newValue
                guard newValue, _isCurrent, !refreshScheduled else { return false }
                refreshScheduled = true
                return true
            }
            if schedule {
                Self.queue.asyncAfter(deadline: .now() + Self.saveCoalescing) { [self] in
                    locked { refreshScheduled = false }
                    do throws(HandoffError) {
                        try publishIfCurrent()
                    } catch {
                        onError?(error)
                    }
                }
            }
        }
    }

    /// Makes this the activity this host offers.
    public func becomeCurrent() throws(HandoffError) {
        guard !locked({ _invalidated }) else {
            throw HandoffError(.invalidActivity, "This activity was invalidated.", fix: "Create a new UserActivity.")
        }
        locked { _isCurrent = true }
        try publishIfCurrent()
    }

    /// Stops offering it for now; `becomeCurrent()` offers it again.
    public func resignCurrent() throws(HandoffError) {
        let wasCurrent = locked {
            defer { _isCurrent = false }
            return _isCurrent
        }
        if wasCurrent { try client.resign() }
    }

    /// Ends the activity everywhere: peers drop it, and it cannot become current again.
    public func invalidate() throws(HandoffError) {
        locked {
            _invalidated = true
            _isCurrent = false
        }
        try client.invalidate()
    }

    private func publishIfCurrent() throws(HandoffError) {
        guard locked({ _isCurrent }) else { return }
        if locked({ _needsSave }), let willSave {
            willSave(self)
        }
        let (activity, eligible, required) = locked { () -> (Activity, Bool, Set<String>) in
            _needsSave = false
            return (_activity, isEligibleForHandoff, requiredUserInfoKeys)
        }
        guard eligible else {
            try client.resign()
            return
        }
        let missing = required.subtracting(activity.userInfo.keys)
        guard missing.isEmpty else {
            throw HandoffError(.invalidActivity, "userInfo lacks the required keys \(missing.sorted().joined(separator: ", ")).",
                               fix: "Fill them in willSave, or remove them from requiredUserInfoKeys.")
        }
        let receipt = try client.publish(activity)
        locked { _sequence = UInt64(clamping: receipt.sequence) }
    }

    // MARK: - Continuation streams

    /// Blocks until the app that continued this activity opens a stream to it
    /// (Apple: `userActivity(_:didReceive:outputStream:)`), and returns it. A
    /// republish (after `needsSave`) keeps the wait going for the new offer; a
    /// resign, invalidate or expiry ends it with `not-current`.
    public func awaitContinuationStream() throws(HandoffError) -> ContinuationStream {
        var unchanged = 0
        while true {
            let (sequence, streams, current) = locked { (_sequence, _activity.supportsContinuationStreams, _isCurrent) }
            guard streams else {
                throw HandoffError(.invalidRequest, "This activity does not support continuation streams.",
                                   fix: "Set supportsContinuationStreams before becomeCurrent().")
            }
            guard current, sequence != 0 else {
                throw HandoffError(.notCurrent, "This activity is not current, so no stream can reach it.", fix: "Call becomeCurrent() first.")
            }
            do {
                return try ContinuationStream.request(socketPath: client.socketPath, .awaitStream(sequence: sequence))
            } catch where error.code == .notCurrent && locked({ _isCurrent }) {
                // The daemon may end the wait just before a republish returns its new sequence: give it a moment.
                if locked({ _sequence == sequence }) {
                    unchanged += 1
                    guard unchanged < Self.republishWaits else { throw error }
                    Threads.sleep(seconds: 0.05)
                } else {
                    unchanged = 0
                }
            }
        }
    }

    /// How many times (50 ms apart) a wait ended by `not-current` looks for a republish before giving up.
    static let republishWaits = 20

    /// Calls `handler`, on a new thread per stream, with each stream opened to
    /// this activity, for as long as it stays current.
    public func acceptContinuationStreams(_ handler: @escaping @Sendable (ContinuationStream) -> Void) {
        Threads.start("handoffkit streams") { [self] in
            while let stream = try? awaitContinuationStream() {
                Threads.start("handoffkit stream") { handler(stream) }
            }
        }
    }
}
