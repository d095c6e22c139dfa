/// When this host's sealed announcements go out, to which paired devices and
/// by which route (Docs/PROTOCOL.md, "When announcements go out"). No I/O and
/// no clock of its own: the daemon passes a monotonic `nowMillis` and what it
/// knows of each paired device at that moment.
///
/// - A change (publish, resign, invalidate, enable/disable, re-sign) goes to
///   every present device at once, and once more `changeRepeatMillis` later (a
///   datagram lost to a full receive buffer or a flood would otherwise wait for
///   the keepalive), then only a keepalive every `keepaliveMillis`.
/// - First contact (start, a new or changed network address, a new pairing)
///   goes by multicast and asks each recipient to answer; once every 15-minute
///   period, every device gets one copy by multicast, each at its own random
///   time in the period (`periodCopyDues`), so the copies of all the hosts of a
///   network arrive spread over the period instead of together at its turn.
/// - A device that appears, or asks, is answered with the current state at once.
/// - A device neither heard nor seen gets nothing; one seen by mDNS or by its
///   beacon but not heard gets a probe at most once per keepalive interval.
/// - Rounds are at least `minimumSpacingMillis` apart and carry the latest state.
public struct AnnounceSchedule: Sendable {
    public enum Route: Hashable, Sendable {
        /// To the IPv4 and IPv6 groups: first contact, or a device that takes nothing else.
        case multicast
        /// To the device's announcement port (its transfer port, over UDP).
        case unicast(host: String, port: UInt16)
    }

    /// What the daemon knows of one paired device when a round is made.
    public struct Device: Sendable, Equatable {
        public var key: DeviceKey
        /// Heard from (an announcement) within its TTL.
        public var present: Bool
        /// Its mDNS service or its Bluetooth beacon is seen now.
        public var seen: Bool
        /// May be told our state now: always without Bluetooth, only while near with it.
        public var eligible: Bool
        /// Where it takes unicast announcements, when it says it does and we can send them.
        public var unicast: (host: String, port: UInt16)?

        public init(key: DeviceKey, present: Bool, seen: Bool = false, eligible: Bool = true,
                    unicast: (host: String, port: UInt16)? = nil) {
            self.key = key
            self.present = present
            self.seen = seen
            self.eligible = eligible
            self.unicast = unicast
        }

        /// Unicast once its address is known and current, multicast otherwise.
        public var route: Route { unicast.map { .unicast(host: $0.host, port: $0.port) } ?? .multicast }

        public static func == (a: Device, b: Device) -> Bool {
            a.key == b.key && a.present == b.present && a.seen == b.seen && a.eligible == b.eligible
                && a.unicast?.host == b.unicast?.host && a.unicast?.port == b.unicast?.port
        }
    }

    /// One sealed copy: to whom, how, and whether it asks the recipient to answer.
    public struct Delivery: Hashable, Sendable {
        public var key: DeviceKey
        public var route: Route
        public var answerMe: Bool

        public init(key: DeviceKey, route: Route, answerMe: Bool) {
            self.key = key
            self.route = route
            self.answerMe = answerMe
        }
    }

    public let keepaliveMillis: UInt64
    public let minimumSpacingMillis: UInt64
    public static let changeRepeatMillis: UInt64 = 2_000

    private var lastSentMillis: UInt64?
    private var lastRoundMillis: UInt64?
    private var changePending = false
    /// When the last change goes out again (nil: no repeat due).
    private var changeRepeatAt: UInt64?
    /// nil: no first contact pending; false: to devices not present; true: to every eligible device.
    private var firstContactPending: Bool?
    /// The period's multicast copy of each device, due then (see `periodTurned`).
    private var periodCopiesDue: [DeviceKey: UInt64] = [:]
    /// Devices to answer, with the route the question came by (nil: the device's own route).
    private var answers: [DeviceKey: Route?] = [:]
    /// Devices heard only by unicast, to be asked by multicast (`checkMulticast`).
    private var multicastChecks: Set<DeviceKey> = []
    /// When each device seen but not heard was last probed.
    private var probed: [DeviceKey: UInt64] = [:]

    public init(keepaliveMillis: UInt64, minimumSpacingMillis: UInt64 = 100) {
        self.keepaliveMillis = keepaliveMillis
        self.minimumSpacingMillis = minimumSpacingMillis
    }

    /// What this host offers or says about itself changed: every present device hears of it.
    public mutating func changed() { changePending = true }

    /// A first-contact round by multicast: to every eligible device (`all`: start,
    /// address change), or only to those not present (new pairing, period turn).
    public mutating func firstContact(all: Bool) { firstContactPending = (firstContactPending ?? false) || all }

    /// The 15-minute period turned: each paired device gets one copy by multicast at its time
    /// in `due` (monotonic), instead of its usual route, asking for an answer only if it is not
    /// present. A device not heard may be back on a path that healed; one heard learns multicast
    /// still reaches it (how `doctor` tells a network that filters multicast). A copy not yet sent
    /// from the period before is replaced.
    public mutating func periodTurned(due: [DeviceKey: UInt64]) { periodCopiesDue = due }

    /// When each device's copy of a period goes: at a random time in the period, counted from
    /// the turn (`intoPeriodMillis` have passed already: a laptop that wakes late in a period
    /// sends what is overdue at once). At the turn itself every host of a network used to send
    /// to every device within the same minute: (N-1)^2 x 2 datagrams received by each of N paired
    /// hosts in that minute (issue 21). Spread this way a host receives them evenly over the period.
    public static func periodCopyDues(for keys: some Sequence<DeviceKey>, nowMillis now: UInt64, intoPeriodMillis: UInt64,
                                      periodMillis: UInt64, using random: inout some RandomNumberGenerator) -> [DeviceKey: UInt64] {
        var due: [DeviceKey: UInt64] = [:]
        for key in keys {
            let offset = UInt64.random(in: 0..<periodMillis, using: &random)
            due[key] = now &+ (offset > intoPeriodMillis ? offset - intoPeriodMillis : 0)
        }
        return due
    }

    /// The active check that the network carries multicast: each of `keys` gets its next copy
    /// by multicast, asking for an answer, which comes back the way the question came. No
    /// multicast answer means the network filters it (ConditionDecision: multicast-filtered).
    public mutating func checkMulticast(_ keys: [DeviceKey]) { multicastChecks.formUnion(keys) }

    /// `key` appeared or asked for our state: it gets it at once, by `route` if given.
    public mutating func answer(_ key: DeviceKey, by route: Route? = nil) {
        if let already = answers[key], already == .multicast { return }
        answers[key] = route
    }

    /// Whether anything waits for the spacing to pass (period copies wait for their own times).
    public var hasPending: Bool {
        changePending || firstContactPending != nil || !answers.isEmpty || !multicastChecks.isEmpty
    }

    /// The round to send now, or nil (nothing due, or the spacing has not passed;
    /// `nextDeadline` says when to ask again). Clears what it sends.
    public mutating func take(nowMillis now: UInt64, devices: [Device]) -> [Delivery]? {
        let repeatDue = changeRepeatAt.map { now >= $0 } ?? false
        if repeatDue { changePending = true }
        let keepaliveDue = lastRoundMillis.map { elapsed(since: $0, now) >= keepaliveMillis } ?? true
        let periodCopies = devices.filter { periodCopiesDue[$0.key].map { now >= $0 } ?? false }
        let probes = devices.filter { isProbeDue($0, now) }
        guard hasPending || !periodCopies.isEmpty || keepaliveDue || !probes.isEmpty else { return nil }
        if let last = lastSentMillis, elapsed(since: last, now) < minimumSpacingMillis { return nil }

        var deliveries: [Delivery] = []
        var covered = Set<DeviceKey>()
        func add(_ device: Device, _ route: Route, answerMe: Bool) {
            guard device.eligible, covered.insert(device.key).inserted else { return }
            deliveries.append(Delivery(key: device.key, route: route, answerMe: answerMe))
        }
        if let all = firstContactPending {
            for device in devices where all || !device.present { add(device, .multicast, answerMe: true) }
        }
        // A period copy is a delivery of its own: it does not make a round for every present device.
        for device in periodCopies { add(device, .multicast, answerMe: !device.present) }
        for device in devices where multicastChecks.contains(device.key) { add(device, .multicast, answerMe: true) }
        if changePending || keepaliveDue || firstContactPending != nil {
            for device in devices where device.present { add(device, device.route, answerMe: false) }
            lastRoundMillis = now
        }
        // A change goes twice; its repeat, once.
        if changePending && !repeatDue { changeRepeatAt = now &+ Self.changeRepeatMillis }
        else if repeatDue { changeRepeatAt = nil }
        for device in devices {
            guard let asked = answers[device.key] else { continue }
            add(device, asked ?? device.route, answerMe: false)
        }
        for device in probes {
            add(device, device.route, answerMe: true)
            probed[device.key] = now
        }
        // Forget probes of devices that are heard again or gone, so the table stays as small as the trust store.
        let probing = Set(devices.filter { $0.seen && !$0.present }.map(\.key))
        probed = probed.filter { probing.contains($0.key) }
        changePending = false
        // Sent, or not eligible now (it gets a first contact when it is); a device no longer paired goes too.
        let paired = Set(devices.map(\.key))
        periodCopiesDue = periodCopiesDue.filter { paired.contains($0.key) && now < $0.value }
        firstContactPending = nil
        answers.removeAll()
        multicastChecks.removeAll()
        lastSentMillis = now
        return deliveries
    }

    /// A goodbye goes at once to every paired device: one we list by its route, any other by
    /// multicast. A device may list us before we heard it (just paired, or its announcements
    /// lost): it would keep us for a whole TTL. One that does not list us drops the goodbye.
    public static func goodbye(devices: [Device]) -> [Delivery] {
        devices.map { Delivery(key: $0.key, route: $0.present ? $0.route : .multicast, answerMe: false) }
    }

    /// When `take` has something to send next (a monotonic time, possibly already past).
    public func nextDeadline(nowMillis now: UInt64, devices: [Device]) -> UInt64 {
        let spacingEnd = lastSentMillis.map { $0 &+ minimumSpacingMillis } ?? now
        if hasPending { return max(now, spacingEnd) }
        var deadline = lastRoundMillis.map { $0 &+ keepaliveMillis } ?? now
        if let again = changeRepeatAt { deadline = min(deadline, again) }
        for device in devices { if let copy = periodCopiesDue[device.key] { deadline = min(deadline, copy) } }
        for device in devices where device.eligible && device.seen && !device.present {
            deadline = min(deadline, probed[device.key].map { $0 &+ keepaliveMillis } ?? now)
        }
        return max(deadline, spacingEnd)
    }

    private func isProbeDue(_ device: Device, _ now: UInt64) -> Bool {
        guard device.eligible, device.seen, !device.present else { return false }
        return probed[device.key].map { elapsed(since: $0, now) >= keepaliveMillis } ?? true
    }

    /// A clock that went backwards counts as time passed, so nothing waits on it.
    private func elapsed(since then: UInt64, _ now: UInt64) -> UInt64 {
        now >= then ? now - then : .max
    }
}
