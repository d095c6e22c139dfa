import HandoffCore

/// One way of finding peers (UDP multicast, unicast to mDNS-found peers, Avahi mDNS, Bluetooth LE).
/// The daemon starts every path its configuration names (`DiscoveryPaths` in HandoffDaemon), feeds
/// every observation into one peer table, and asks the paths by what they can do (`abilities`),
/// never by which one they are; each says how it is doing as a value (`health`).
public protocol DiscoveryPath: AnyObject, Sendable {
    /// Which path it is, for status, logs and `list`.
    var name: DiscoveryPathName { get }
    var abilities: PathAbilities { get }
    func start(observer: @escaping @Sendable (DiscoveryObservation) -> Void) throws(HandoffError)
    /// Sends this device's announcements, if the path carries them.
    func announce(_ datagrams: [OutgoingAnnouncement])
    var health: PathHealth { get }
    /// An interface or address came or went: follow it. True when what the path uses changed
    /// (peers must learn this host's addresses again); nil from a path that does not watch them.
    func networkChanged() -> Bool?
    /// This host's tokens for the new period (mDNS name, beacon), or none while Handoff is off.
    func show(_ tokens: PeriodTokens?)
    func stop()
}

extension DiscoveryPath {
    public func networkChanged() -> Bool? { nil }
    public func show(_ tokens: PeriodTokens?) {}
    /// The sentence `status` shows ("joined 224.0.0.199 and ff02::4846 on eth0").
    public var state: String { health.text }
}
