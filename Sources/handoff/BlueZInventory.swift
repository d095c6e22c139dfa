import FoundationEssentials
import HandoffCore
import Glibc

/// What bluetoothd offers, from its object tree: each adapter, whether it is
/// powered, and the two managers the BlueZ backend uses. Read by
/// handoff-ble-check from `busctl --json=short call org.bluez /
/// org.freedesktop.DBus.ObjectManager GetManagedObjects` (busctl's JSON: a
/// variant is {"type", "data"}), which any user may run.
public struct BlueZInventory: Sendable, Equatable {
    public struct Adapter: Sendable, Equatable {
        /// hci0, hci1, ...
        public var name: String
        public var powered: Bool
        public var discoverable: Bool
        /// org.bluez.LEAdvertisingManager1 is there (bluetoothd can advertise on it).
        public var advertising: Bool
        /// How many advertisements the controller takes at once; 0 or absent: none.
        public var supportedInstances: Int?
        public var activeInstances: Int?
        /// 1M, 2M, Coded: the controller does extended advertising.
        public var secondaryChannels: [String]
        /// org.bluez.AdvertisementMonitorManager1 is there (bluetoothd -E).
        public var monitor: Bool
        public var monitorTypes: [String]

        public init(name: String, powered: Bool = false, discoverable: Bool = false, advertising: Bool = false,
                    supportedInstances: Int? = nil, activeInstances: Int? = nil, secondaryChannels: [String] = [],
                    monitor: Bool = false, monitorTypes: [String] = []) {
            self.name = name
            self.powered = powered
            self.discoverable = discoverable
            self.advertising = advertising
            self.supportedInstances = supportedInstances
            self.activeInstances = activeInstances
            self.secondaryChannels = secondaryChannels
            self.monitor = monitor
            self.monitorTypes = monitorTypes
        }
    }

    /// Sorted by name.
    public var adapters: [Adapter]

    /// Parses busctl's JSON reply; nil if it is not a GetManagedObjects reply.
    public static func parse(busctlJSON data: Data) -> BlueZInventory? {
        guard let reply = (try? JSONValue.parse(data))?.objectValue,
              reply["type"]?.stringValue == "a{oa{sa{sv}}}",
              let objects = reply["data"]?.arrayValue?.first?.objectValue else { return nil }
        var adapters: [Adapter] = []
        for (path, value) in objects {
            guard let interfaces = value.objectValue, let properties = interfaces["org.bluez.Adapter1"]?.objectValue,
                  path.hasPrefix("/org/bluez/") else { continue }
            func variant(_ interface: [String: JSONValue]?, _ name: String) -> JSONValue? {
                interface?[name]?.objectValue?["data"]
            }
            func strings(_ value: JSONValue?) -> [String] {
                value?.arrayValue?.compactMap(\.stringValue) ?? []
            }
            let advertising = interfaces["org.bluez.LEAdvertisingManager1"]?.objectValue
            let monitor = interfaces["org.bluez.AdvertisementMonitorManager1"]?.objectValue
            adapters.append(Adapter(
                name: String(path.dropFirst("/org/bluez/".count)),
                powered: variant(properties, "Powered")?.boolValue ?? false,
                discoverable: variant(properties, "Discoverable")?.boolValue ?? false,
                advertising: advertising != nil,
                supportedInstances: variant(advertising, "SupportedInstances")?.integerValue.map { Int($0) },
                activeInstances: variant(advertising, "ActiveInstances")?.integerValue.map { Int($0) },
                secondaryChannels: strings(variant(advertising, "SupportedSecondaryChannels")),
                monitor: monitor != nil,
                monitorTypes: strings(variant(monitor, "SupportedMonitorTypes"))))
        }
        // hci2 before hci10: shorter names first, as a person reads the numbers.
        return BlueZInventory(adapters: adapters.sorted { ($0.name.count, $0.name) < ($1.name.count, $1.name) })
    }

    public init(adapters: [Adapter]) {
        self.adapters = adapters
    }

    /// What stands between this adapter and a working BlueZ backend, with the fix; empty when nothing does.
    public static func problems(of adapter: Adapter) -> [(problem: String, fix: String)] {
        var found: [(String, String)] = []
        if !adapter.powered {
            found.append(("\(adapter.name) is powered off.", "bluetoothctl power on (and 'rfkill unblock bluetooth' if it is blocked)."))
        }
        if !adapter.advertising {
            found.append(("bluetoothd offers no LEAdvertisingManager1 on \(adapter.name): no beacon can be sent.",
                          "Use a Bluetooth LE adapter; check 'bluetoothctl show' for LE support."))
        } else if adapter.powered, adapter.supportedInstances == 0 {
            found.append(("\(adapter.name) takes no more advertisements (SupportedInstances 0).",
                          "Another program holds every advertising slot; stop it, or restart bluetoothd."))
        }
        return found
    }
}
