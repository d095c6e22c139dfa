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

