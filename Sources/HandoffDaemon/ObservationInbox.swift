import HandoffAPI
import HandoffCore
import HandoffTransport
import HandoffRuntime

/// Between discovery (the event loop's sockets, a Bluetooth backend) and the daemon actor. Anyone on the link can
/// send datagrams (and anyone in radio range beacons), so what they cost is
/// bounded here, before the actor sees them: a budget per source and overall,
/// a queue of fixed capacity, and one drain at a time, on the actor, that takes
/// whole batches. A flood costs a token-bucket check per datagram and
/// is dropped (counted) rather than queued without limit.
final class ObservationInbox: Sendable {
    /// Drops for `status`, by reason.
    struct Counters: JSONCodable {
        var rateLimited = 0
        var queueFull = 0
    }

    private struct State: ~Copyable {
        var queue: [DiscoveryObservation] = []
        var draining = false
        /// The daemon stopped: what the paths still hear until they stop is dropped.
        var closed = false
        var network: SourceBudget
        var radio: SourceBudget
        var counters = Counters()
    }

    static let capacity = 512
    private let state: Locked<State>
    /// Runs the drain where the batches go (the daemon's actor), later, in order.
    private let schedule: @Sendable (@escaping @Sendable () -> Void) -> Void
    private let deliver: @Sendable ([DiscoveryObservation]) -> Void

    /// A paired host sends at most ten announcements a second, each one
    /// datagram per paired device of its own and path, all seen here from its
    /// address; a beacon arrives about every 100 ms. The burst absorbs a restart
    /// or a pairing; the overall rate bounds sources that spoof their address.
    static let datagramRate = SourceBudget.Rate(perSecond: 100, burst: 200)
    static let datagramOverallRate = SourceBudget.Rate(perSecond: 2_000, burst: 2_000)
    static let beaconRate = SourceBudget.Rate(perSecond: 20, burst: 40)
    static let beaconOverallRate = SourceBudget.Rate(perSecond: 1_000, burst: 1_000)
    static let maximumSources = 1_024

    init(schedule: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void,
         deliver: @escaping @Sendable ([DiscoveryObservation]) -> Void) {
        self.schedule = schedule
        self.deliver = deliver
        state = Locked(State(
            network: SourceBudget(perSource: Self.datagramRate, overall: Self.datagramOverallRate, maximumSources: Self.maximumSources),
            radio: SourceBudget(perSource: Self.beaconRate, overall: Self.beaconOverallRate, maximumSources: Self.maximumSources)))
    }

    var counters: Counters { state.withLock { $0.counters } }

    /// Called from the event loop or a Bluetooth backend's thread; never blocks beyond a short lock.
    func post(_ observation: DiscoveryObservation) {
        let now = monotonicMillis()
        let startDrain = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            switch observation {
            case let .announcement(_, host, _):
                guard state.network.allow(host, nowMillis: now) else {
                    state.counters.rateLimited += 1
                    return false
                }
            case let .beacon(_, address, _):
                guard state.radio.allow(address, nowMillis: now) else {
                    state.counters.rateLimited += 1
                    return false
                }
            case .serviceFound, .serviceLost, .servicesReset:
                break // from the local avahi-daemon, which bounds its own work
            }
            guard state.queue.count < Self.capacity else {
                state.counters.queueFull += 1
                return false
            }
            state.queue.append(observation)
            guard !state.draining else { return false }
            state.draining = true
            return true
        }
        if startDrain { schedule { [self] in drain() } }
    }

    /// Takes nothing more; a batch already queued is dropped too.
    func close() {
        state.withLock { state in
            state.closed = true
            state.queue.removeAll()
        }
    }

    private func drain() {
        while true {
            let batch = state.withLock { state -> [DiscoveryObservation] in
                let batch = state.queue
                state.queue.removeAll(keepingCapacity: true)
                if batch.isEmpty { state.draining = false }
                return batch
            }
            guard !batch.isEmpty else { return }
            deliver(batch)
        }
    }
}
