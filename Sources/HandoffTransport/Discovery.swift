import HandoffCore

/// Something a discovery path noticed. Today only signed announcements over
/// UDP multicast; mDNS services and BLE beacons join this enum later.
public enum DiscoveryObservation: Sendable {
    case announcement(bytes: [UInt8], fromHost: String)
}

/// One way of finding peers (UDP multicast now; Avahi and BLE later). The
/// daemon starts each path it is configured for and feeds every observation
/// into one peer table.
public protocol DiscoveryPath: AnyObject, Sendable {
    /// Short name for status and logs ("multicast", "mdns", "bluetooth").
    var name: String { get }
    func start(observer: @escaping @Sendable (DiscoveryObservation) -> Void) throws(HandoffError)
    /// Sends this device's signed announcement, if the path carries them.
    func announce(_ datagram: [UInt8])
    /// Human-readable state for `status` ("joined 224.0.0.199 and ff02::4846 on eth0").
    var state: String { get }
    func stop()
}
