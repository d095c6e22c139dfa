import HandoffBluetooth
import HandoffCore
import HandoffMDNS
import HandoffTransport

/// How this host finds paired devices and how near they are: the running paths, the mDNS
/// sightings (bounded: anyone on the link can publish services), Bluetooth proximity, what each
/// paired device last said (kept after it leaves, for the conditions), and the active multicast check.
struct Discovery {
    /// Distinct mDNS instances kept (a household or office has far fewer Handoff hosts).
    static let maximumSightings = 256
    static let maximumAddressesPerSighting = 4
    /// A paired device listed for this long and not heard by multicast within a period is asked
    /// by multicast (issue 24: a filtered network showed only after two 15-minute periods).
    static let multicastCheckAfterMillis: UInt64 = 10_000
    /// Clear pairing beacons whose signatures are checked, per source and overall.
    static let pairingBeaconRate = SourceBudget.Rate(perSecond: 2, burst: 4)
    static let pairingBeaconOverallRate = SourceBudget.Rate(perSecond: 50, burst: 50)

    /// The running paths, in the order they started (DiscoveryPaths, then the configuration's extras).
    var paths: [any DiscoveryPath] = []
    /// The path that tells which devices are near: with one, proximity is enforced.
    var bluetooth: (any BluetoothPresence)? { paths.lazy.compactMap { $0 as? any BluetoothPresence }.first }
    /// For mDNS's own lines in status (instance, sightings).
    var mdns: AvahiDiscovery? { paths.lazy.compactMap { $0 as? AvahiDiscovery }.first }
    /// A path reaches every host on the link (multicast): the active check can ask by it.
    var reachesEveryone: Bool { paths.contains { $0.abilities.contains(.reachEveryone) } }
    /// A path sends straight to a device's address (unicast): announcements say this host accepts them.
    var sendsStraight: Bool { paths.contains { $0.abilities.contains(.sendStraight) } }

    /// Tells every path an interface or address came or went. True when one of them says what it
    /// uses changed, or when none follows addresses (then nobody can tell: assume it did).
    func networkChanged() -> Bool {
        let answers = paths.compactMap { $0.networkChanged() }
        return answers.isEmpty || answers.contains(true)
    }
    /// mDNS sightings by instance name (one per address family and link).
    private(set) var sightings: [String: [ServiceSighting]] = [:]
    var proximity: ProximityTracker
    private(set) var unknownBeacons = 0
    var pairingBeaconBudget = SourceBudget(perSource: Discovery.pairingBeaconRate, overall: Discovery.pairingBeaconOverallRate,
                                           maximumSources: 256)
    /// What each paired device last said, kept after it leaves (Daemon+Conditions).
    var history = PeerHistory()
    /// When each listed paired device was last asked by multicast (`multicastChecksDue`).
    private(set) var multicastChecks: [DeviceKey: UInt64] = [:]
    /// The devices whose last check doctor made: their answer is awaited `doctorAnswerWaitMillis`.
    private var checkedByDoctor: Set<DeviceKey> = []
    /// The new period's tokens (mDNS name, beacon), offered at a random time in the period (monotonic ms).
    var tokensDue: (epoch: UInt64, atMillis: UInt64)?

    init(proximity: ProximityTracker.Settings) {
        self.proximity = ProximityTracker(settings: proximity)
    }

    // MARK: mDNS sightings

    enum SightingChange: Equatable { case changed, refused, unchanged }

    /// A service seen on mDNS: kept unless the bound is reached, with its latest few addresses.
    mutating func found(_ sighting: ServiceSighting) -> SightingChange {
        guard sightings[sighting.instance] != nil || sightings.count < Self.maximumSightings else { return .refused }
        var known = sightings[sighting.instance, default: []]
        known.removeAll { $0.host == sighting.host }
        known.append(sighting)
        sightings[sighting.instance] = Array(known.suffix(Self.maximumAddressesPerSighting))
        return .changed
    }

    mutating func lost(instance: String) -> SightingChange {
        sightings.removeValue(forKey: instance) == nil ? .unchanged : .changed
    }

    mutating func resetSightings() {
        sightings.removeAll()
    }

    // MARK: Proximity

    /// True when proximity holds: always without Bluetooth (opted out), else a fresh, strong beacon.
    func isNear(_ key: DeviceKey, nowMillis: UInt64) -> Bool {
        bluetooth == nil || proximity.isNear(key, nowMillis: nowMillis)
    }

    /// A beacon heard with the token of `key` (nil: no paired device's). True when it just came near.
    mutating func heardBeacon(of key: DeviceKey?, rssi: Int, nowMillis: UInt64) -> Bool {
        guard let key else {
            unknownBeacons += 1
            return false
        }
        let wasNear = proximity.isNear(key, nowMillis: nowMillis)
        proximity.heard(key, rssi: rssi, nowMillis: nowMillis)
        return !wasNear && proximity.isNear(key, nowMillis: nowMillis)
    }

    // MARK: The active multicast check

    /// The listed paired devices to ask by multicast now: listed for 10 s, not heard by multicast
    /// within two periods (every host multicasts one copy a period, at a random time in it, so
    /// two copies are at most two periods apart and at rest on a network that carries multicast
    /// nothing is due), and not asked within a period. No multicast answer
    /// within 10 s is the evidence for multicast-filtered.
    mutating func multicastChecksDue(_ listed: [Listed], nowMillis now: UInt64) -> [DeviceKey] {
        guard reachesEveryone else { return [] }
        let period = ServiceRecord.rotationSeconds * 1000
        let keys = Set(listed.map(\.key))
        multicastChecks = multicastChecks.filter { keys.contains($0.key) }
        checkedByDoctor.formIntersection(keys)
        let due = listed.filter { peer in
            peer.appearedMillis + Self.multicastCheckAfterMillis <= now
                && !(peer.heardByMulticastMillis.map { $0 + 2 * period + 60_000 > now } ?? false)
                && (multicastChecks[peer.key].map { $0 + period <= now } ?? true)
        }.map(\.key)
        for key in due { multicastChecks[key] = now }
        checkedByDoctor.subtract(due)
        return due
    }

    /// What the check needs to know of a listed paired device.
    struct Listed {
        var key: DeviceKey
        var appearedMillis: UInt64
        var heardByMulticastMillis: UInt64?

        init(key: DeviceKey, appearedMillis: UInt64, heardByMulticastMillis: UInt64?) {
            self.key = key
            self.appearedMillis = appearedMillis
            self.heardByMulticastMillis = heardByMulticastMillis
        }

        init(_ peer: Peer) {
            self.init(key: peer.key, appearedMillis: peer.appearedMillis, heardByMulticastMillis: peer.lastSeenByPath[.multicast])
        }
    }

    /// doctor about a listed device not heard by multicast within `doctorQuietMillis`: ask it by
    /// multicast now (unless asked that recently), so a network that stopped carrying multicast
    /// shows in this run, not after two periods. True when it was asked now.
    mutating func doctorChecksMulticast(_ peer: Listed, nowMillis now: UInt64) -> Bool {
        guard paths.contains(where: { $0.abilities.contains(.reachEveryone) && $0.health.state == .working }),
              !(peer.heardByMulticastMillis.map { $0 + Self.doctorQuietMillis > now } ?? false),
              !(multicastChecks[peer.key].map { $0 + Self.doctorQuietMillis > now } ?? false) else { return false }
        multicastChecks[peer.key] = now
        checkedByDoctor.insert(peer.key)
        return true
    }

    /// How long the answer to `key`'s last check is awaited: 2 s for doctor's own, 10 s for the daemon's.
    func multicastAnswerWait(of key: DeviceKey) -> UInt64 {
        checkedByDoctor.contains(key) ? Self.doctorAnswerWaitMillis : ConditionEvidence.multicastAnswerWaitMillis
    }

    /// Multicast from a device within this long counts as working for doctor; also how often doctor asks.
    static let doctorQuietMillis: UInt64 = 30_000
    /// How long doctor waits for the multicast answer: a round trip on a LAN takes milliseconds.
    static let doctorAnswerWaitMillis: UInt64 = 2_000

    /// When the first check of a newly listed device is due (nil: none is pending for it).
    func firstMulticastCheck(of peer: Listed) -> UInt64? {
        guard reachesEveryone, multicastChecks[peer.key] == nil else { return nil }
        return peer.appearedMillis &+ Self.multicastCheckAfterMillis
    }

    /// When `key` was last asked by multicast.
    func multicastCheck(of key: DeviceKey) -> UInt64? { multicastChecks[key] }
}
