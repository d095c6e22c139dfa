/// What discovery carries, as values: the paths' names, what a path noticed, and what
/// the daemon hands the paths to send. The paths themselves (sockets, Avahi, BlueZ) live
/// in the transport modules behind `DiscoveryPath`.

/// Something a discovery path noticed.
public enum DiscoveryObservation: Sendable {
    /// A signed announcement datagram, by multicast or by unicast.
    case announcement(bytes: [UInt8], fromHost: String, path: DiscoveryPathName)
    /// An mDNS service instance resolved to an address (one per address family and link).
    case serviceFound(ServiceSighting)
    case serviceLost(instance: String)
    /// The mDNS daemon went away: forget every sighting it gave.
    case servicesReset
    /// A Handoff Bluetooth beacon: its rotating token, the advertiser's address and the RSSI in dBm.
    case beacon(token: [UInt8], address: String, rssi: Int)
}

public enum DiscoveryPathName: String, Sendable, CaseIterable, Comparable {
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    case multicast
    case mdns
    /// Announcements sent straight to peers found by mDNS.
    case unicast
    case bluetooth
}

/// How a discovery path is doing, as a value: the conditions and doctor read `state` (never
/// the text); `status` shows `text`, the one sentence for people.
public struct PathHealth: Sendable, Equatable {
    public enum Fault: String, Sendable, Equatable {
        /// No socket could be opened (the port is taken, neither IPv4 nor IPv6 works).
        case noSocket = "no-socket"
        /// The service it works through is not there (avahi-daemon, its client library, the bus).
        case serviceMissing = "service-missing"
        /// The adapter is missing, off, blocked or not answering.
        case adapterUnavailable = "adapter-unavailable"
        /// Stopped, or not started yet.
        case stopped
    }

    public enum State: Sendable, Equatable {
        case working
        /// Running, and working as soon as something outside it comes (a network interface).
        case waiting
        case failed(Fault)
    }

    public var state: State
    public var text: String

    public init(_ state: State, _ text: String) {
        self.state = state
        self.text = text
    }

    /// Working, or ready to work by itself: it counts among the paths this host has.
    public var isUsable: Bool {
        if case .failed = state { return false }
        return true
    }
}

/// What a discovery path can do for the daemon, which asks by ability, never by name.
public struct PathAbilities: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// It delivers announcements or sightings of peers (`DiscoveryObservation`).
    public static let find = PathAbilities(rawValue: 1 << 0)
    /// It reaches every host on the link at once (multicast): first contact, and the active check.
    public static let reachEveryone = PathAbilities(rawValue: 1 << 1)
    /// It sends straight to a paired device's last address or where mDNS saw it (unicast).
    public static let sendStraight = PathAbilities(rawValue: 1 << 2)
    /// It tells which paired devices are near (Bluetooth beacons): proximity is enforced with it.
    public static let tellNear = PathAbilities(rawValue: 1 << 3)
}

/// This host's tokens for a rotation period, as each path shows them; nil fields while Handoff is off.
public struct PeriodTokens: Sendable, Equatable {
    /// The mDNS instance name (DiscoveryToken.token).
    public var service: String?
    /// The Bluetooth beacon token (DiscoveryToken.beaconToken).
    public var beacon: [UInt8]?

    public init(service: String?, beacon: [UInt8]?) {
        self.service = service
        self.beacon = beacon
    }
}

/// An mDNS service as resolved: instance name, numeric host (IPv6 link-local with %zone), port and TXT strings.
public struct ServiceSighting: Sendable, Equatable {
    public var instance: String
    public var host: String
    public var port: UInt16
    public var txt: [String]

    public init(instance: String, host: String, port: UInt16, txt: [String]) {
        self.instance = instance
        self.host = host
        self.port = port
        self.txt = txt
    }
}

/// A datagram to send: sealed to one paired device, or (a pairing beacon) for anyone,
/// by the route the daemon chose (AnnounceSchedule); each path sends only its own.
public struct OutgoingAnnouncement: Sendable {
    public var recipient: DeviceKey?
    public var route: AnnounceSchedule.Route
    public var bytes: [UInt8]

    public init(recipient: DeviceKey?, route: AnnounceSchedule.Route, bytes: [UInt8]) {
        self.recipient = recipient
        self.route = route
        self.bytes = bytes
    }
}

