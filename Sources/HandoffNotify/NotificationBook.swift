import HandoffCore

/// Which notification stands for which device's offer, and what to ask the
/// notification server and handoffd next. Pure: the agent feeds it what
/// happened (offers listed, the server's replies and signals, outcomes) and
/// carries out the commands it returns. One notification per device: a newer
/// offer replaces it, a withdrawn one closes it.
public struct NotificationBook: Sendable {
    public enum Command: Equatable, Sendable {
        /// Notify; `replaces` is the id to replace (0 for a new notification).
        case notify(peer: String, notice: Notice, replaces: UInt32)
        case close(UInt32)
        case accept(OfferNotice)
        case decline(OfferNotice)
    }

    enum Phase: Equatable, Sendable {
        /// Showing the offer, waiting for the person.
        case offered
        /// Continue was invoked: the accept runs; later actions are ignored (exactly once).
        case continuing
        case declining
        /// Showing why Continue failed.
        case failed
    }

    struct Entry: Sendable {
        var offer: OfferNotice
        var phase: Phase
        /// The server's id; nil until it answers the first Notify.
        var id: UInt32?
        /// A Notify is on its way: wait for its id before changing this entry again.
        var awaitingReply = false
    }

    var entries: [String: Entry] = [:]
    /// The offer sequence last notified per device, so one offer is shown once:
    /// not again after it was dismissed, continued or declined.
    var notified: [String: Int64] = [:]
    var desired: [String: OfferNotice] = [:]
    public var capabilities = ServerCapabilities(actions: true, bodyMarkup: false)

    /// Paired devices are few; this only bounds a pathological run.
    static let maximumRemembered = 256

    public init() {}

    /// What `list` shows now.
    public mutating func update(offers: [OfferNotice]) -> [Command] {
        desired = Dictionary(offers.map { ($0.peer, $0) }, uniquingKeysWith: { first, _ in first })
        return reconcile()
    }

    /// The server answered a Notify for `peer` with `id`.
    public mutating func notified(peer: String, id: UInt32) -> [Command] {
        guard var entry = entries[peer] else { return [.close(id)] }
        entry.id = id
        entry.awaitingReply = false
        entries[peer] = entry
        return reconcile()
    }

    /// The server refused or did not answer a Notify: forget it, so the next listing tries again.
    public mutating func notifyFailed(peer: String) {
        guard let entry = entries[peer], entry.awaitingReply else { return }
        entries[peer] = nil
        if entry.phase == .offered { notified[peer] = nil }
    }

    /// ActionInvoked. Continue runs once however often (or by however many keys) it is invoked.
    public mutating func actionInvoked(id: UInt32, key: String) -> [Command] {
        guard let (peer, entry) = entries.first(where: { $0.value.id == id }), entry.phase == .offered else { return [] }
        switch key {
        case Notice.continueKey, Notice.defaultKey:
            // Nothing here continues a terminal-only offer: its notification has no Continue.
            guard !entry.offer.continuesInTerminal else { return [] }
            entries[peer]?.phase = .continuing
            return [.accept(entry.offer)]
        case Notice.declineKey:
            entries[peer]?.phase = .declining
            return [.decline(entry.offer)]
        default:
            return []
        }
    }

    /// The panel item continues `offer`: its notification waits for the outcome as if Continue was
    /// chosen here (it goes on success, shows the failure otherwise).
    public mutating func continuedElsewhere(_ offer: OfferNotice) {
        guard let entry = entries[offer.peer], entry.phase == .offered, entry.offer.sequence == offer.sequence else { return }
        entries[offer.peer]?.phase = .continuing
    }

    /// NotificationClosed: dismissed, expired by the server, or closed by us.
    public mutating func closed(id: UInt32) {
        guard let (peer, entry) = entries.first(where: { $0.value.id == id }) else { return }
        // An accept or decline still running keeps its entry: its outcome may need the id.
        if entry.phase == .offered || entry.phase == .failed, !entry.awaitingReply { entries[peer] = nil }
    }

    /// The accept of `peer` ended: on success the notification goes; a failure replaces it with the cause and fix.
    public mutating func acceptFinished(peer: String, error: HandoffError?) -> [Command] {
        guard var entry = entries[peer], entry.phase == .continuing else { return [] }
        guard let error else {
            entries[peer] = nil
            return (entry.id.map { [.close($0)] } ?? []) + reconcile()
        }
        entry.phase = .failed
        entry.awaitingReply = true
        entries[peer] = entry
        return [.notify(peer: peer, notice: Notice(failure: error, from: entry.offer, capabilities: capabilities),
                        replaces: entry.id ?? 0)]
    }

    /// The decline of `peer` ended (if it failed, the offer was gone already): the notification goes.
    public mutating func declineFinished(peer: String) -> [Command] {
        guard let entry = entries[peer], entry.phase == .declining else { return [] }
        entries[peer] = nil
        return (entry.id.map { [.close($0)] } ?? []) + reconcile()
    }

    /// Another notification server took over: ids of the old one mean nothing, so what is offered is shown again.
    public mutating func serverChanged(_ capabilities: ServerCapabilities) -> [Command] {
        self.capabilities = capabilities
        for (peer, entry) in entries where !entry.awaitingReply && entry.phase != .continuing && entry.phase != .declining {
            entries[peer] = nil
            notified[peer] = nil
        }
        return reconcile()
    }

    /// Whether an offer is on screen: the agent then re-lists now and then,
    /// as an offer ends without an event when it expires or its device moves away.
    public var showsOffers: Bool { entries.values.contains { $0.phase == .offered } }

    /// The offers on screen, to close when the agent stops (nothing could answer their actions).
    public var shownIDs: [UInt32] { entries.values.filter { $0.phase == .offered }.compactMap(\.id) }

    /// The soonest time left on a shown offer.
    public var soonestExpiryMillis: Int64? { entries.values.filter { $0.phase == .offered }.map(\.offer.remainingMillis).min() }

    private mutating func reconcile() -> [Command] {
        var commands: [Command] = []
        for (peer, entry) in entries where entry.phase == .offered && !entry.awaitingReply && desired[peer] == nil {
            // Resigned, invalidated, expired, declined elsewhere, or the device left: withdraw it.
            entries[peer] = nil
            if let id = entry.id { commands.append(.close(id)) }
        }
        for (peer, offer) in desired.sorted(by: { $0.key < $1.key }) where notified[peer] != offer.sequence {
            let current = entries[peer]
            if let current, current.awaitingReply || current.phase == .continuing || current.phase == .declining { continue }
            if notified[peer] == nil, notified.count >= Self.maximumRemembered, let stale = notified.keys.first(where: { entries[$0] == nil }) {
                notified[stale] = nil
            }
            notified[peer] = offer.sequence
            entries[peer] = Entry(offer: offer, phase: .offered, id: current?.id, awaitingReply: true)
            commands.append(.notify(peer: peer, notice: Notice(offer: offer, capabilities: capabilities), replaces: current?.id ?? 0))
        }
        return commands
    }
}
