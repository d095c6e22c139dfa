/// Why a received announcement or summary was dropped. Counted, shown by `status`.
public struct DropCounters: Codable, Equatable, Sendable {
    public var malformed = 0
    public var unsigned = 0
    public var badSignature = 0
    public var expired = 0
    public var replayed = 0
    public var untrusted = 0
    /// Present/goodbye announcements sent in the clear: only pairing beacons may be.
    public var unsealed = 0
    /// Sealed for this host (the hint matched) but failed to decrypt: altered in transit.
    public var undecryptable = 0
    /// A signature check refused because too many were asked for (clear pairing beacons).
    public var overBudget = 0
    /// A bounded table (mDNS services, a peer's addresses) was full.
    public var tooMany = 0

    public init() {}
}

/// A trusted device currently announcing itself, and what it offers.
public struct Peer: Sendable {
    public let key: DeviceKey
    public let deviceID: DeviceID
    public var name: String
    /// Numeric hosts the announcements came from, most recent first (IPv6 link-local with %scope).
    public var hosts: [String]
    public var transferPort: UInt16
    public var lastSeenMillis: UInt64
    /// When an announcement last arrived by each path ("multicast", "unicast").
    public var lastSeenByPath: [DiscoveryPathName: UInt64] = [:]
    /// When it was first heard since it last appeared (it has been listed ever since).
    public var appearedMillis: UInt64 = 0
    public var ttlMillis: UInt64
    public var announceSequence: UInt64
    /// The last accepted datagram, to tell the same announcement arriving over
    /// IPv4 and IPv6 apart from a replay.
    public var lastDatagram: [UInt8]
    public var offer: SignedSummary?
    /// The offer sequence the user declined; hidden until a newer one arrives.
    public var declinedSequence: UInt64?
    /// What the peer last said about itself (disabled, Bluetooth state).
    public var senderState: Announcement.SenderState = []
    /// The peer's clock minus ours when its latest announcement arrived: its
    /// offers expire by its own clock, so a laptop whose clock is minutes off
    /// neither loses nor keeps offers early.
    public var clockOffsetMillis: Int64 = 0

    /// Our time on the peer's clock.
    public func peerClock(nowMillis: UInt64) -> UInt64 {
        clockOffsetMillis >= 0 ? nowMillis &+ UInt64(clockOffsetMillis) : nowMillis &- min(nowMillis, clockOffsetMillis.magnitude)
    }

    /// How long ago, by its own clock, it stamped `timestampMillis` (an offer's age): never negative,
    /// and right whichever of the two clocks is ahead.
    public func age(of timestampMillis: UInt64, nowMillis: UInt64) -> UInt64 {
        let theirs = peerClock(nowMillis: nowMillis)
        return theirs &- min(theirs, timestampMillis)
    }

    public func isExpired(nowMillis: UInt64) -> Bool { lastSeenMillis + ttlMillis <= nowMillis }

    /// The paths that delivered an announcement within the TTL.
    public func livePaths(nowMillis: UInt64) -> [DiscoveryPathName] {
        lastSeenByPath.filter { $0.value + ttlMillis > nowMillis }.keys.sorted()
    }

    /// The offer to show: present, not expired, not declined.
    public func visibleOffer(nowMillis: UInt64) -> SignedSummary? {
        guard let offer, !offer.summary.isExpired(nowMillis: peerClock(nowMillis: nowMillis)),
              offer.summary.sequence != declinedSequence else { return nil }
        return offer
    }
}

public enum PeerEvent: Equatable, Sendable {
    case appeared(DeviceKey)
    case left(DeviceKey)
    case offerReceived(DeviceKey)
    case offerWithdrawn(DeviceKey)
}

/// The receiving half of discovery, with no I/O: checks each (unsealed,
/// signed) announcement in the order cheapest-to-refuse first, keeps the peers
/// that pass, and counts every drop.
public struct PeerTable: Sendable {
    public private(set) var peers: [DeviceKey: Peer] = [:]
    public private(set) var drops = DropCounters()
    /// The highest announce sequence accepted from each trusted key. Kept when
    /// a peer says goodbye or expires, so its old datagrams cannot bring it back.
    private var highestSequence: [DeviceKey: UInt64] = [:]

    /// Addresses kept per peer: IPv4 and IPv6 on a link or two is all a laptop has.
    public static let maximumHostsPerPeer = 4

    /// Tolerated difference between two hosts' clocks. Replays are caught by
    /// sequence (kept across restarts); the timestamp only bounds how long a
    /// datagram that never arrived can be held back and delivered later.
    public static let maximumClockSkewMillis: UInt64 = 15 * 60_000

    /// The highest announce sequence accepted from each key, to keep across restarts.
    public var highestSequences: [DeviceKey: UInt64] { highestSequence }

    /// After a restart: what was accepted before it stays a replay.
    public mutating func restoreHighestSequences(_ stored: [DeviceKey: UInt64]) {
        for (key, sequence) in stored { highestSequence[key] = max(highestSequence[key] ?? 0, sequence) }
    }

    private let ownKey: DeviceKey
    private let fingerprint: @Sendable (DeviceKey) -> DeviceID

    public init(ownKey: DeviceKey, fingerprint: @escaping @Sendable (DeviceKey) -> DeviceID) {
        self.ownKey = ownKey
        self.fingerprint = fingerprint
    }

    /// Inside [now - ttl - skew, now + skew]: neither stale nor from a clock too far
    /// ahead to trust. Computed from `now`, so no timestamp, however large, overflows.
    public static func isFresh(timestampMillis: UInt64, ttlMillis: UInt64, nowMillis: UInt64) -> Bool {
        let skew = maximumClockSkewMillis
        return timestampMillis > nowMillis &- min(nowMillis, ttlMillis &+ skew) && timestampMillis <= nowMillis &+ skew
    }

    public mutating func receive(datagram: [UInt8], fromHost host: String, path: DiscoveryPathName = .multicast, nowMillis: UInt64,
                                 verifier: some SignatureVerifying,
                                 isTrusted: (DeviceKey) -> Bool) -> [PeerEvent] {
        let received: ReceivedAnnouncement
        do {
            received = try ReceivedAnnouncement(decoding: datagram)
        } catch {
            drops.malformed += 1
            return []
        }
        let announcement = received.announcement
        // Our own datagrams come back through multicast loopback on some setups.
        if announcement.senderKey == ownKey { return [] }
        guard received.signature != nil else {
            drops.unsigned += 1
            return []
        }
        guard received.verify(with: verifier) else {
            drops.badSignature += 1
            return []
        }
        guard isTrusted(announcement.senderKey) else {
            drops.untrusted += 1
            return []
        }
        // Pairing beacons are handled by the daemon, never as peers.
        guard announcement.kind != .pairing else {
            drops.malformed += 1
            return []
        }
        let ttlMillis = UInt64(announcement.ttlSeconds) * 1000
        guard Self.isFresh(timestampMillis: announcement.timestampMillis, ttlMillis: ttlMillis, nowMillis: nowMillis) else {
            drops.expired += 1
            return []
        }
        let key = announcement.senderKey
        if peers[key] == nil, let highest = highestSequence[key], announcement.sequence <= highest {
            drops.replayed += 1
            return []
        }
        if var known = peers[key], announcement.sequence <= known.announceSequence {
            if datagram == known.lastDatagram {
                // The same datagram over another path (IPv4 and IPv6): one more address, not a replay.
                // It does not refresh lastSeen, so resending it cannot keep a departed peer listed.
                // Bounded: a replay of this datagram from spoofed sources must not grow the list.
                if !known.hosts.contains(host) {
                    guard known.hosts.count < Self.maximumHostsPerPeer else {
                        drops.tooMany += 1
                        return []
                    }
                    known.hosts.append(host)
                }
                if known.lastSeenByPath[path] == nil { known.lastSeenByPath[path] = known.lastSeenMillis }
                peers[key] = known
            } else {
                drops.replayed += 1
            }
            return []
        }
        highestSequence[key] = announcement.sequence
        if announcement.kind == .goodbye {
            return peers.removeValue(forKey: key) == nil ? [] : [.left(key)]
        }

        var events: [PeerEvent] = []
        var peer = peers[key] ?? Peer(key: key, deviceID: fingerprint(key), name: announcement.name, hosts: [],
                                      transferPort: announcement.transferPort, lastSeenMillis: nowMillis,
                                      ttlMillis: ttlMillis, announceSequence: 0, lastDatagram: [], offer: nil,
                                      declinedSequence: nil)
        if peers[key] == nil {
            events.append(.appeared(key))
            peer.appearedMillis = nowMillis
        }
        peer.name = announcement.name
        peer.hosts = [host] + peer.hosts.filter { $0 != host }.prefix(Self.maximumHostsPerPeer - 1)
        peer.transferPort = announcement.transferPort
        peer.lastSeenMillis = nowMillis
        peer.lastSeenByPath[path] = nowMillis
        peer.ttlMillis = ttlMillis
        peer.announceSequence = announcement.sequence
        peer.lastDatagram = datagram
        peer.senderState = announcement.state
        peer.clockOffsetMillis = Int64(clamping: announcement.timestampMillis) &- Int64(clamping: nowMillis)

        // The offer's expiry is the sender's: judge it by the sender's clock (its announcement's timestamp).
        switch checkOffer(announcement.summary, from: key, current: peer.offer, nowMillis: announcement.timestampMillis, verifier: verifier) {
        case .keep:
            break
        case let .replace(offer):
            peer.offer = offer
            events.append(.offerReceived(key))
        case let .refresh(offer):
            peer.offer = offer
        case .withdraw:
            if peer.offer != nil { events.append(.offerWithdrawn(key)) }
            peer.offer = nil
        }
        peers[key] = peer
        return events
    }

    /// `refresh`: the same offer (same sequence) re-signed with a later timestamp and expiry.
    private enum OfferChange { case keep, replace(SignedSummary), refresh(SignedSummary), withdraw }

    private mutating func checkOffer(_ offer: SignedSummary?, from key: DeviceKey, current: SignedSummary?,
                                     nowMillis: UInt64, verifier: some SignatureVerifying) -> OfferChange {
        guard let offer else { return .withdraw }
        if offer == current { return .keep }
        guard offer.summary.senderKey == key, offer.verify(with: verifier) else {
            drops.badSignature += 1
            return .keep
        }
        guard !offer.summary.isExpired(nowMillis: nowMillis) else {
            drops.expired += 1
            return .withdraw
        }
        if let current, offer.summary.sequence < current.summary.sequence
            || (offer.summary.sequence == current.summary.sequence && offer.summary.timestampMillis <= current.summary.timestampMillis) {
            drops.replayed += 1
            return .keep
        }
        if let current, offer.summary.sequence == current.summary.sequence {
            return .refresh(offer)
        }
        return .replace(offer)
    }

    /// Drops peers whose TTL has passed.
    public mutating func expire(nowMillis: UInt64) -> [PeerEvent] {
        let gone = peers.values.filter { $0.isExpired(nowMillis: nowMillis) }.map(\.key)
        for key in gone { peers.removeValue(forKey: key) }
        return gone.map { .left($0) }
    }

    /// Forgets a device entirely (it is no longer trusted).
    public mutating func remove(_ key: DeviceKey) -> [PeerEvent] {
        highestSequence.removeValue(forKey: key)
        return peers.removeValue(forKey: key) == nil ? [] : [.left(key)]
    }

    /// Counts a drop decided outside the table (the sealing layer).
    public mutating func recordDrop(_ counter: WritableKeyPath<DropCounters, Int>) {
        drops[keyPath: counter] += 1
    }

    public mutating func decline(_ key: DeviceKey, sequence: UInt64) {
        peers[key]?.declinedSequence = sequence
    }

    /// Finds a peer by device id (any unique prefix of at least 4 characters) or exact name.
    public func resolve(_ reference: String) throws(HandoffError) -> Peer {
        let byName = peers.values.filter { $0.name == reference }
        if byName.count == 1 { return byName[0] }
        if let prefix = DeviceID.normalize(reference), prefix.count >= 4 {
            let matches = peers.values.filter { $0.deviceID.compact.hasPrefix(prefix) }
            if matches.count == 1 { return matches[0] }
            if matches.count > 1 {
                throw HandoffError(.ambiguous, "'\(reference)' matches \(matches.count) peers.",
                                   fix: "Give more characters of the device id (see 'handoff-peer list').")
            }
        }
        if byName.count > 1 {
            throw HandoffError(.ambiguous, "More than one peer is named '\(reference)'.",
                               fix: "Use the device id shown by 'handoff-peer list' instead.")
        }
        throw HandoffError(.notFound, "No peer '\(reference)' is in range.",
                           fix: "Run 'handoff-peer list' to see peers; check that the other host runs handoffd and trusts this one.")
    }
}
