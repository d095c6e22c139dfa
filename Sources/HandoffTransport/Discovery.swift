import HandoffCore

/// One way of finding peers (UDP multicast, unicast to mDNS-found peers, Avahi mDNS, Bluetooth LE). The
/// daemon starts each path it is configured for and feeds every observation
/// into one peer table.
public protocol DiscoveryPath: AnyObject, Sendable {
    /// Which path it is, for status, logs and the conditions.
    var name: DiscoveryPathName { get }
    func start(observer: @escaping @Sendable (DiscoveryObservation) -> Void) throws(HandoffError)
    /// Sends this device's announcements, if the path carries them.
    func announce(_ datagrams: [OutgoingAnnouncement])
    /// Human-readable state for `status` ("joined 224.0.0.199 and ff02::4846 on eth0").
    var state: String { get }
    func stop()
}
