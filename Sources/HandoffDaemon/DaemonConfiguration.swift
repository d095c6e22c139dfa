import FoundationEssentials
import Glibc
import HandoffCore
import HandoffRuntime
import HandoffTransport

/// Everything `handoffd` is told on its command line.
public struct DaemonConfiguration: Sendable {
    public var stateDirectory: String
    public var socketPath: String
    public var name: String
    public var interface: String?
    /// TCP port of the transfer socket; 0 picks a free one.
    public var transferPort: UInt16 = DaemonConfiguration.defaultTransferPort
    /// Given on the command line: then it is used or handoffd fails. The default, taken (a second
    /// account's handoffd on this laptop, or another program), gives way to a free port.
    public var transferPortGiven = false
    public static let defaultTransferPort: UInt16 = 47181
    public var multicast = MulticastDiscovery.Configuration()
    /// Which discovery paths run. mDNS brings unicast announcements with it.
    public var discovery: Set<DiscoveryPathName> = [.multicast, .mdns]
    /// Paths made by the caller, started with the others: several daemons in one process
    /// (the tests' loopback discovery) find each other through them.
    public var extraDiscoveryPaths: [any DiscoveryPath] = []
    /// The loop its deadlines run on, whose clock is its time: the process's loop on the system's
    /// clocks, or (tests) a loop on a `ManualClock` that several daemons in one process share.
    public var loop: EventLoop = .shared
    /// Raw HCI controller (`hciN` or `unix:PATH`). With neither this nor
    /// `bluez`, Bluetooth is off, and with it proximity: summaries then go to every paired device.
    public var hci: String?
    /// Bluetooth through bluetoothd's D-Bus API (the default where bluetoothd runs), on
    /// `bluetoothAdapter` (nil: the lowest-numbered adapter). Ignored when `hci` is set.
    public var bluez = false
    public var bluetoothAdapter: String?
    public var proximity = ProximityTracker.Settings()
    public var bluetoothCompanyID: UInt16 = Beacon.defaultCompanyID
    /// The keepalive: how often present paired devices hear from this host when
    /// nothing changes (changes go out at once; Docs/PROTOCOL.md).
    public var announceIntervalMillis: UInt64 = 30_000
    /// How long peers keep this host listed after its last announcement: three
    /// keepalives and 10 s, so one lost datagram never drops a host that runs.
    public var peerTTLSeconds: UInt16 = 100
    /// Lifetime of a summary for an activity without its own expiration; it is
    /// re-signed with a new sequence before it runs out.
    public var summaryLifetimeMillis: UInt64 = 3_600_000
    /// How long a fetch may wait on the peer at any one step.
    public var transferTimeoutMillis: Int = 10_000
    public var logLevel: Log.Level = .info

    public init(stateDirectory: String, socketPath: String, name: String) {
        self.stateDirectory = stateDirectory
        self.socketPath = socketPath
        self.name = name
    }

    public static func defaultSocketPath() -> String {
        LocalAPIPath.socketPath(environment: ProcessInfo.processInfo.environment, uid: getuid(), isClient: false)
    }

    /// The host name, cut to what fits in a summary.
    public static func defaultName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        gethostname(&buffer, buffer.count)
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return name.isEmpty ? "linux" : name.utf8Prefix(maxBytes: Summary.nameBytes)
    }
}
