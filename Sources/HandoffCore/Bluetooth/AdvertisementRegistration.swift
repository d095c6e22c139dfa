/// When handoffd registers and unregisters its beacon with bluetoothd. Pure: the
/// BlueZ backend feeds it bluetoothd's answers and adapter changes with a
/// monotonic clock in milliseconds, and performs the actions it returns.
///
/// Why it waits. bluetoothd re-adds ("refreshes") every registered advertisement
/// when the adapter's Discoverable setting changes. Before BlueZ 5.73 a client
/// freed while that refresh waits for the kernel is used after free (commit
/// c01c40498), and before 5.74 a refresh that fails replies to a D-Bus message
/// that does not exist and aborts bluetoothd (commit 6b5447583): the user's
/// mouse and headphones go with it. UnregisterAdvertisement frees the client, so
/// an unregister sent right after the Discoverable signal (which bluetoothd emits
/// just before it starts the refresh) is exactly that path: in the VM lab it
/// logged "Failed to add advertisement (0xea)", that is -EINVAL from the freed
/// client, and a D-Bus assertion. So nothing is registered or unregistered
/// until the adapter's Powered and Discoverable have been still for
/// `settleMillis`, and one call is in flight at a time. While the adapter is
/// discoverable the beacon stays withdrawn, so a later refresh (a discoverable
/// timeout, a power-off) never touches it.
public struct AdvertisementRegistration: Sendable, Equatable {
    public enum State: Sendable, Equatable {
        case off
        case registering(token: [UInt8])
        case registered(token: [UInt8])
        case unregistering
    }

    public enum Action: Sendable, Equatable {
        case none
        case register(token: [UInt8])
        case unregister
        /// Ask again then: a change is wanted but must wait (the quiet period, or a retry's back-off).
        case wait(millis: UInt64)
    }

    public enum RegisterAnswer: Sendable, Equatable {
        case registered
        /// org.bluez.Error.AlreadyExists: bluetoothd holds an earlier registration.
        case alreadyExists
        case failed
    }

    /// Long enough for bluetoothd's refresh (two mgmt round trips: milliseconds on a
    /// laptop, up to a few hundred under QEMU's TCG) to finish before we touch the client.
    public static let settleMillis: UInt64 = 1500
    public static let retryMillis: UInt64 = 2000

    public private(set) var state = State.off
    /// The registration no longer matches what is on the air: the adapter changed under it
    /// (`adapterChanged`), or bluetoothd answered AlreadyExists. Unregister, then register.
    private var stale = false
    private var retriedAlreadyExists = false
    private var quietUntil: UInt64 = 0

    public init() {}

    /// The token being registered or registered: what the advertisement object serves when
    /// bluetoothd reads it, so the registration and the data on the air stay one.
    public var token: [UInt8]? {
        switch state {
        case let .registering(token), let .registered(token): token
        case .off, .unregistering: nil
        }
    }

    /// The beacon bluetoothd has on the air for us, if any.
    public var isAdvertising: Bool {
        if case .registered = state { return !stale }
        return false
    }

    /// How long until the quiet period ends (0: now). Stopping waits it out too.
    public func quietMillis(at now: UInt64) -> UInt64 {
        now < quietUntil ? quietUntil - now : 0
    }

    /// Powered or Discoverable changed: bluetoothd may be refreshing our advertisement now, and
    /// whatever it left is not to be trusted: a power-off drops the set (bluetoothd 5.66 keeps the
    /// registration), and a Discoverable change makes the kernel set ours up from the public
    /// address, where it stayed after discoverable ended in the VM lab (no second refresh came).
    /// Once quiet, the registration is made afresh, or withdrawn while discoverable.
    public mutating func adapterChanged(at now: UInt64) {
        quietUntil = max(quietUntil, now + Self.settleMillis)
        if state != .off { stale = true }
    }

    /// bluetoothd went away, or another adapter is in use: nothing of ours is registered.
    public mutating func forget() {
        state = .off
        stale = false
        retriedAlreadyExists = false
    }

    /// bluetoothd called Release: it dropped the advertisement itself.
    public mutating func released(at now: UInt64) {
        if case .unregistering = state { return }
        state = .off
        stale = false
        quietUntil = max(quietUntil, now + 500)
    }

    /// What to do now. `wanted`: the token to advertise, nil when nothing should be on
    /// the air (Handoff off, adapter off or discoverable, no advertising manager).
    public mutating func next(wanted: [UInt8]?, at now: UInt64) -> Action {
        let change: Action
        switch state {
        case .registering, .unregistering:
            return .none // its answer asks again
        case .off:
            guard let wanted else { return .none }
            change = .register(token: wanted)
        case let .registered(token):
            guard stale || wanted != token else { return .none }
            change = .unregister
        }
        if now < quietUntil { return .wait(millis: quietUntil - now) }
        switch change {
        case let .register(token): state = .registering(token: token)
        default: state = .unregistering
        }
        return change
    }

    public mutating func registerAnswered(_ answer: RegisterAnswer, at now: UInt64) {
        guard case let .registering(token) = state else { return }
        switch answer {
        case .registered:
            state = .registered(token: token)
            retriedAlreadyExists = false
        case .alreadyExists where !retriedAlreadyExists:
            // An earlier registration whose set the kernel may have dropped: afresh, once.
            retriedAlreadyExists = true
            state = .registered(token: token)
            stale = true
        case .alreadyExists:
            state = .registered(token: token)
        case .failed:
            state = .off
            stale = false
            quietUntil = max(quietUntil, now + Self.retryMillis)
        }
    }

    public mutating func unregisterAnswered() {
        guard case .unregistering = state else { return }
        state = .off
        stale = false
    }
}
