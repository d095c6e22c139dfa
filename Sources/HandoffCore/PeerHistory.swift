/// What each paired device last said and did, kept after it leaves the peer
/// table, so a failure can be explained by its last words ("stopped at 14:02")
/// rather than by its absence. Bounded: one entry per trusted device, and a
/// short list of devices unpaired here.
public struct PeerHistory: Sendable {
    public struct Entry: Sendable, Equatable {
        public var announcementsByPath: [DiscoveryPathName: UInt64] = [:]
        public var ttlMillis: UInt64 = 15_000
        public var state: Announcement.SenderState?
        public var goodbyeMillis: UInt64?
        public var hosts: [String] = []
        public var transferPort: UInt16 = 0
        /// The last offer seen, and when it stopped being offered.
        public var lastOffer: (type: String, sequence: UInt64, expiresAtMillis: UInt64)?
        public var offerGoneMillis: UInt64?
        /// What the peer said when it stopped offering it.
        public var offerEnd: ConditionEvidence.Withdrawal = .unknown
        public var declined: (sequence: UInt64, atMillis: UInt64)?

        public static func == (lhs: Entry, rhs: Entry) -> Bool {
            lhs.announcementsByPath == rhs.announcementsByPath && lhs.state == rhs.state && lhs.goodbyeMillis == rhs.goodbyeMillis
                && lhs.hosts == rhs.hosts && lhs.lastOffer?.sequence == rhs.lastOffer?.sequence && lhs.offerGoneMillis == rhs.offerGoneMillis
        }
    }

    public static let maximumUnpaired = 16

    public private(set) var entries: [DeviceKey: Entry] = [:]
    /// Names of devices unpaired here, most recent last.
    public private(set) var unpaired: [(name: String, atMillis: UInt64)] = []

    public init() {}

    /// A present announcement from `peer` was taken into the peer table.
    public mutating func heard(_ peer: Peer, nowMillis: UInt64) {
        var entry = entries[peer.key] ?? Entry()
        // Kept across the peer's absences (multicast now carries only first contact and one copy
        // a period, so a return by unicast must not forget it); a goodbye starts afresh.
        if let goodbye = entry.goodbyeMillis, goodbye >= entry.announcementsByPath.values.max() ?? 0 {
            entry.announcementsByPath = peer.lastSeenByPath
        } else {
            entry.announcementsByPath.merge(peer.lastSeenByPath, uniquingKeysWith: max)
        }
        entry.ttlMillis = peer.ttlMillis
        entry.state = peer.senderState
        // Newest first, the older ones kept: a peer back from an absence is often heard over one
        // family first, and its other addresses are what a probe needs if it vanishes again.
        entry.hosts = Array((peer.hosts + entry.hosts.filter { !peer.hosts.contains($0) }).prefix(PeerTable.maximumHostsPerPeer))
        entry.transferPort = peer.transferPort
        if let offer = peer.offer?.summary {
            if entry.lastOffer?.sequence != offer.sequence || entry.offerGoneMillis != nil {
                entry.lastOffer = (offer.activityType, offer.sequence, offer.expiresAtMillis)
                entry.offerGoneMillis = nil
            } else {
                entry.lastOffer?.expiresAtMillis = offer.expiresAtMillis
            }
        } else if entry.lastOffer != nil, entry.offerGoneMillis == nil {
            entry.offerGoneMillis = nowMillis
            entry.offerEnd = peer.senderState.contains(.offerInvalidated) ? .invalidated
                : peer.senderState.contains(.offerResigned) ? .resigned : .unknown
        }
        entries[peer.key] = entry
    }

    public mutating func saidGoodbye(_ key: DeviceKey, nowMillis: UInt64) {
        entries[key, default: Entry()].goodbyeMillis = nowMillis
    }

    public mutating func declined(_ key: DeviceKey, sequence: UInt64, nowMillis: UInt64) {
        entries[key, default: Entry()].declined = (sequence, nowMillis)
    }

    /// The device is no longer trusted here: forget what it said, remember that it was unpaired.
    public mutating func unpairedHere(_ key: DeviceKey, name: String, nowMillis: UInt64) {
        entries.removeValue(forKey: key)
        unpaired.removeAll { $0.name == name }
        unpaired.append((name, nowMillis))
        if unpaired.count > Self.maximumUnpaired { unpaired.removeFirst(unpaired.count - Self.maximumUnpaired) }
    }

    /// Asked only for names that name no paired device, so pairing again needs no bookkeeping here.
    public func unpairedMillis(name: String) -> UInt64? {
        unpaired.last { $0.name == name }?.atMillis
    }

    /// What `key` offers now, or why it offers nothing: declined here, expired, withdrawn.
    public func offerState(of key: DeviceKey, peer: Peer?, hasWebpage: Bool, nowMillis: UInt64) -> ConditionEvidence.Offer {
        if let peer, let offer = peer.offer?.summary {
            if offer.sequence == peer.declinedSequence {
                return .declinedHere(type: offer.activityType, atMillis: entries[key]?.declined?.atMillis ?? nowMillis)
            }
            if offer.isExpired(nowMillis: nowMillis) {
                return .expired(type: offer.activityType, atMillis: offer.expiresAtMillis)
            }
            return .offered(type: offer.activityType, hasWebpage: hasWebpage)
        }
        guard let entry = entries[key], let last = entry.lastOffer else { return .none }
        // Withdrawn before its expiry: resigned or invalidated there; at or after it: expired.
        if let gone = entry.offerGoneMillis, gone < last.expiresAtMillis || entry.offerEnd != .unknown {
            return .withdrawn(type: last.type, atMillis: gone, how: entry.offerEnd)
        }
        if entry.offerGoneMillis != nil || last.expiresAtMillis <= nowMillis {
            return .expired(type: last.type, atMillis: last.expiresAtMillis)
        }
        return .none
    }
}
