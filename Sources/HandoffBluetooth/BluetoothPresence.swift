import HandoffCore
import HandoffTransport

/// What the daemon needs from a Bluetooth backend: advertise this host's
/// beacon, report the beacons it hears (as `.beacon` observations), and say
/// how it is doing. Two backends: BlueZ over D-Bus (HandoffBlueZ, the default)
/// and raw HCI (`BluetoothDiscovery`, for the emulated lab and controllers
/// bluetoothd does not manage).
public protocol BluetoothPresence: DiscoveryPath {
    var currentStatus: BluetoothStatus { get }
    /// A new token (a new rotation period, or the first); nil stops advertising (Handoff disabled).
    func setBeacon(token: [UInt8]?)
}

/// What `status` reports about Bluetooth, whichever backend runs.
public struct BluetoothStatus: Sendable, Equatable {
    /// "bluez" or "hci".
    public var backend: String
    /// The adapter or controller in use (hci0, unix:PATH), once known.
    public var adapter: String?
    /// One line for people: what it is doing, or what it waits for and why.
    public var text = "starting"
    /// Advertising and scanning both work.
    public var available = false
    /// The advertised address, when the backend knows it (raw HCI picks it; under BlueZ the kernel does).
    public var address: String?
    /// How the backend scans: "passive scan" (raw HCI) or "discovery" (BlueZ).
    public var scanning: String?
    public var beaconsHeard = 0

    public init(backend: String, adapter: String?) {
        self.backend = backend
        self.adapter = adapter
    }
}
