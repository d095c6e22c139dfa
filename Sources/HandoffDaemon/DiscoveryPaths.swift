import HandoffBlueZ
import HandoffBluetooth
import HandoffCore
import HandoffMDNS
import HandoffTransport

/// Every discovery path handoffd knows, and how each is made from the configuration. Adding a
/// path is its module and one registration here: the daemon starts what `make` returns and from
/// then on asks the paths by what they can do (`PathAbilities`) and how they are (`PathHealth`),
/// never by which one they are.
enum DiscoveryPaths {
    /// What a path may need to be made.
    struct Context: Sendable {
        var configuration: DaemonConfiguration
        /// The transfer port: unicast announcements use the same number on UDP, mDNS publishes it.
        var transferPort: UInt16
        var log: Log
    }

    struct Registration: Sendable {
        var name: DiscoveryPathName
        /// The path this configuration asks for, or nil when it asks for none.
        var make: @Sendable (Context) -> (any DiscoveryPath)?
    }

    static let registered: [Registration] = [
        Registration(name: .multicast) { context in
            guard context.configuration.discovery.contains(.multicast) else { return nil }
            var settings = context.configuration.multicast
            settings.interface = context.configuration.interface
            return MulticastDiscovery(configuration: settings)
        },
        // Unicast goes to the peers mDNS finds (and to their last addresses): it comes with mDNS.
        Registration(name: .unicast) { context in
            context.configuration.discovery.contains(.mdns) ? UnicastAnnouncer(port: context.transferPort) : nil
        },
        // Avahi being absent is not fatal: the path waits for it and says so in its health.
        Registration(name: .mdns) { context in
            context.configuration.discovery.contains(.mdns)
                ? AvahiDiscovery(servicePort: context.transferPort, interface: context.configuration.interface) : nil
        },
        // Which Bluetooth backend runs (raw HCI or bluetoothd over D-Bus) matters only here.
        Registration(name: .bluetooth) { context in
            let configuration = context.configuration
            if let device = configuration.hci {
                var settings = BluetoothDiscovery.Configuration(device: device)
                settings.companyID = configuration.bluetoothCompanyID
                return BluetoothDiscovery(configuration: settings)
            }
            guard configuration.bluez else { return nil }
            var settings = BlueZPresence.Configuration(adapter: configuration.bluetoothAdapter)
            settings.companyID = configuration.bluetoothCompanyID
            let log = context.log
            settings.log = { message in log.debug(message) }
            return BlueZPresence(configuration: settings)
        },
    ]
}
