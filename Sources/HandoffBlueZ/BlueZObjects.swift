import HandoffCore
import HandoffDBus

/// What handoffd needs from bluetoothd's object tree (BlueZ's
/// doc/org.bluez.Adapter.rst and doc/org.bluez.Device.rst), read from the
/// property dictionaries of GetManagedObjects, InterfacesAdded and
/// PropertiesChanged. Pure: the bus code hands in values, these decide.
public enum BlueZ {
    public static let service = "org.bluez"
    public static let adapterInterface = "org.bluez.Adapter1"
    public static let deviceInterface = "org.bluez.Device1"
    public static let advertisingManagerInterface = "org.bluez.LEAdvertisingManager1"
    public static let advertisementInterface = "org.bluez.LEAdvertisement1"
    public static let monitorManagerInterface = "org.bluez.AdvertisementMonitorManager1"
    public static let monitorInterface = "org.bluez.AdvertisementMonitor1"
    /// Where handoffd exports its advertisement object.
    public static let advertisementPath = "/org/handoff/beacon"
    /// The application root handed to RegisterMonitor, and the one monitor below it.
    public static let monitorRoot = "/org/handoff/monitor"
    public static let monitorPath = "/org/handoff/monitor/beacon"

    /// The monitor's or-pattern: manufacturer data (AD type 0xFF) starting with
    /// our company identifier (little-endian, as on the air) and beacon version.
    public static func monitorPattern(companyID: UInt16) -> (start: UInt8, type: UInt8, content: [UInt8]) {
        (0, 0xFF, [UInt8(companyID & 0xFF), UInt8(companyID >> 8), Beacon.version])
    }
    /// At most this many devices are remembered at once (a crowded room, not memory exhaustion).
    public static let maximumDevices = 1024

    /// "hci0" for "/org/bluez/hci0"; nil for anything that is not an adapter's path.
    public static func adapterName(path: String) -> String? {
        let prefix = "/org/bluez/"
        guard path.hasPrefix(prefix) else { return nil }
        let name = path.dropFirst(prefix.count)
        guard name.hasPrefix("hci"), let _ = Int(name.dropFirst(3)) else { return nil }
        return String(name)
    }

    /// The adapter a device object belongs to: "/org/bluez/hci0/dev_..." -> "/org/bluez/hci0".
    public static func adapterPath(ofDevice path: String) -> String? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: true)
        guard parts.count == 4, parts[0] == "org", parts[1] == "bluez", parts[3].hasPrefix("dev_") else { return nil }
        return "/" + parts[0...2].joined(separator: "/")
    }

    public struct Adapter: Sendable, Equatable {
        public var path: String
        public var name: String
        public var address: String?
        public var powered = false
        public var discoverable = false
        public var discovering = false
        /// It offers LEAdvertisingManager1 (LE capable and advertising supported).
        public var canAdvertise = false
        /// It offers AdvertisementMonitorManager1 (bluetoothd runs with -E, experimental features).
        public var canMonitor = false

        public init(path: String, name: String) {
            self.path = path
            self.name = name
        }

        /// Applies changed Adapter1 properties; unknown ones are ignored.
        public mutating func apply(_ properties: [String: BusValue]) {
            if let value = properties["Address"]?.string { address = value }
            if let value = properties["Powered"]?.bool { powered = value }
            if let value = properties["Discoverable"]?.bool { discoverable = value }
            if let value = properties["Discovering"]?.bool { discovering = value }
        }
    }

    /// The adapter to use: the one asked for by name, else the lowest-numbered
    /// one (hci0 before hci1, as `bluetoothctl` picks its default).
    public static func choose(_ adapters: [String: Adapter], wanted: String?) -> Adapter? {
        if let wanted { return adapters.values.first { $0.name == wanted } }
        return adapters.values.min { (Int($0.name.dropFirst(3)) ?? .max) < (Int($1.name.dropFirst(3)) ?? .max) }
    }

    /// What a Device1 property set says about a Handoff beacon.
    public struct DeviceUpdate: Sendable, Equatable {
        /// The token, when ManufacturerData is among the properties and holds a Handoff beacon under `companyID`.
        public var token: [UInt8]?
        /// ManufacturerData was present (with or without a beacon): bluetoothd
        /// re-announces it on every report when DuplicateData is on, so it marks a fresh sighting.
        public var manufacturerDataSeen = false
        public var rssi: Int?
        public var address: String?

        public init(_ properties: [String: BusValue], companyID: UInt16) {
            address = properties["Address"]?.string
            // RSSI is a signed 16-bit integer on the bus; anything else is ignored rather than guessed at.
            if let value = properties["RSSI"]?.integer, (-127...20).contains(value) { rssi = value }
            if let data = properties["ManufacturerData"]?.entries {
                manufacturerDataSeen = true
                for (key, value) in data {
                    guard key.integer == Int(companyID), let bytes = value.bytes,
                          let beacon = Beacon(manufacturerPayload: bytes, companyID: companyID) else { continue }
                    token = beacon.token
                }
            }
        }
    }
}
