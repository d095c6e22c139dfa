import FoundationEssentials
import Glibc
import HandoffCore
import HandoffTransport
import HandoffRuntime
import Synchronization

/// Bluetooth LE presence: advertises this host's beacon (rotating token,
/// rotating non-resolvable private address) and scans passively for others'.
/// Reconnects to the controller when it comes back. On a controller shared
/// with bluetoothd it never sends HCI Reset and, when it stops, switches off
/// the advertising and scanning it switched on (Docs/HARDWARE.md).
public final class BluetoothDiscovery: BluetoothPresence {
    public struct Configuration: Sendable {
        /// `hciN` or `unix:PATH`.
        public var device: String
        public var companyID: UInt16 = Beacon.defaultCompanyID

        public init(device: String) {
            self.device = device
        }

        /// A kernel device (hciN), which the kernel and bluetoothd manage too, rather than the lab's unix:PATH.
        public var kernelManaged: Bool { !device.hasPrefix("unix:") }

        /// A beacon nothing can connect to.
        public var advertisingType: AdvertisingParameters.AdvertisingType { .nonConnectableUndirected }
    }

    public let name = DiscoveryPathName.bluetooth
    private let configuration: Configuration
    private let status: Locked<BluetoothStatus>
    private let controller = Locked<BluetoothController?>(nil)
    private let beacon = Locked<Beacon?>(nil)
    /// One advertising or scanning sequence at a time.
    private let sequence = Locked(())
    private let stopped = Atomic<Bool>(false)
    private let beaconCommands = SerialWorker(name: "hci beacon")
    /// The controller refuses legacy commands for good (it follows the kernel's extended ones): retrying is pointless.
    private let legacyRefused = Atomic<Bool>(false)
    public static let leEventMask: UInt64 = 0x0000_0000_000F_FFFF
    public static let eventMask: UInt64 = 0x2000_1FFF_FFFF_FFFF // the specification's default plus LE Meta (bit 61)

    public init(configuration: Configuration) {
        self.configuration = configuration
        var initial = BluetoothStatus(backend: "hci", adapter: configuration.device)
        initial.scanning = "passive scan"
        status = Locked(initial)
    }

    public let abilities: PathAbilities = [.tellNear]

    public var health: PathHealth {
        status.withLock { PathHealth($0.available ? .working : .failed(.adapterUnavailable), $0.text) }
    }

    public func show(_ tokens: PeriodTokens?) { setBeacon(token: tokens?.beacon) }
    public var currentStatus: BluetoothStatus { status.withLock { $0 } }

    private func update(_ change: (inout BluetoothStatus) -> Void) { status.withLock { change(&$0) } }

    public func start(observer: @escaping @Sendable (DiscoveryObservation) -> Void) throws(HandoffError) {
        Threads.start("bluetooth") { [self] in supervise(observer: observer) }
    }

    /// Connects, sets the controller up, and waits; on loss, retries until stopped.
    private func supervise(observer: @escaping @Sendable (DiscoveryObservation) -> Void) {
        let companyID = configuration.companyID
        while !stopped.load(ordering: .acquiring) {
            let lost = Signals(value: 0)
            var opened: BluetoothController?
            do throws(HandoffError) {
                let transport = try HCITransports.open(configuration.device)
                let driver = BluetoothController(transport: transport)
                opened = driver
                driver.startReading(onReport: { [self] report in
                    guard let beacon = Beacon(advertisingData: report.data, companyID: companyID) else { return }
                    update { $0.beaconsHeard += 1 }
                    observer(.beacon(token: beacon.token, address: report.address.description, rssi: Int(report.rssi)))
                }, onLost: { [self] error in
                    update {
                        $0.text = "unavailable: \(error.message) Retrying."
                        $0.available = false
                    }
                    lost.signal()
                })
                try setUp(driver)
                controller.withLock { $0 = driver }
                if let current = beacon.withLock({ $0 }) { try advertise(current, on: driver) }
                update {
                    $0.available = true
                    $0.text = "advertising and scanning on \(configuration.device)"
                }
                lost.wait()
                controller.withLock { $0 = nil }
                driver.close()
            } catch {
                // A controller that refused set-up is let go of, not left open until the next try.
                controller.withLock { $0 = nil }
                opened?.close()
                let final = legacyRefused.load(ordering: .acquiring)
                update {
                    $0.text = "unavailable: \(error.message)" + (final ? "" : " Retrying every 2 s.")
                    $0.available = false
                }
                if final { return }
            }
            if !stopped.load(ordering: .acquiring) { Threads.sleep(seconds: 2) }
        }
    }

    private func setUp(_ driver: BluetoothController) throws(HandoffError) {
        try sequence.withLock { _ throws(HandoffError) in
            // A kernel-managed controller already has masks that deliver advertising
            // reports; ours would clear events the kernel needs (pairing, key refresh).
            if !configuration.kernelManaged {
                try driver.execute(.setEventMask(Self.eventMask))
                try driver.execute(.leSetEventMask(Self.leEventMask))
            }
            // Linux drives a controller with LE Extended Advertising (LE feature bit 12) with
            // extended commands from power-on (hci_sync.c), after which it must refuse ours:
            // say so before sending any, rather than disturb its scanning.
            if configuration.kernelManaged, try Self.hasExtendedAdvertising(driver) {
                legacyRefused.store(true, ordering: .releasing)
                throw Self.extendedCommandsInUse(configuration.device)
            }
            // A controller may still scan or advertise from an earlier run (controllers outlive
            // their clients): parameters can only change while both are off.
            try driver.executeIgnoringStatus(.leSetScanEnable(false, filterDuplicates: false))
            try driver.executeIgnoringStatus(.leSetAdvertisingEnable(false))
            let scanParameters = HCICommand.leSetScanParameters(ScanParameters())
            switch try driver.status(of: scanParameters) {
            case 0:
                break
            case BluetoothController.commandDisallowed where configuration.kernelManaged:
                // Core Vol 4, Part E, 3.1.1: after any extended LE command the controller
                // must refuse the legacy ones, and Linux sends extended ones from power-on.
                legacyRefused.store(true, ordering: .releasing)
                throw Self.extendedCommandsInUse(configuration.device)
            case let status:
                throw BluetoothController.refusal(scanParameters, status)
            }
            // Duplicates are wanted: every beacon refreshes freshness and RSSI. Refused
            // (0x0C) when bluetoothd already scans: reports arrive anyway.
            try driver.executeIgnoringStatus(.leSetScanEnable(true, filterDuplicates: false))
        }
    }

    private static func extendedCommandsInUse(_ device: String) -> HandoffError {
        HandoffError(.bluetooth, "The kernel uses extended commands on \(device): use the BlueZ backend (the controller refuses the legacy LE scanning and advertising commands of raw HCI with HCI status 0x0C, command disallowed).",
                     fix: "Use the BlueZ backend: start handoffd without --hci (it uses bluetoothd over D-Bus whenever bluetoothd runs).")
    }

    /// LE Read Local Supported Features: bit 12 is LE Extended Advertising (Core Vol 6, Part B, 4.6).
    private static func hasExtendedAdvertising(_ driver: BluetoothController) throws(HandoffError) -> Bool {
        guard case let .commandComplete(_, parameters) = try driver.execute(.leReadLocalSupportedFeatures),
              parameters.count >= 3 else { return false }
        return parameters[2] & 0x10 != 0 // status, then the 8-byte little-endian feature mask
    }

    /// Advertises `beacon` from a private address derived from its token.
    private func advertise(_ beacon: Beacon, on driver: BluetoothController) throws(HandoffError) {
        let data: [UInt8]
        do {
            data = try beacon.advertisingData()
        } catch {
            throw HandoffError(.internal, "The beacon does not fit an advertisement: \(error).", fix: "Report this as a bug.")
        }
        let address = BluetoothAddress.nonResolvablePrivate(from: beacon.token)
        try sequence.withLock { _ throws(HandoffError) in
            // The random address may change only while neither advertising nor
            // scanning (Core Vol 4, Part E, 7.8.4): pause the scan around it.
            try driver.executeIgnoringStatus(.leSetAdvertisingEnable(false))
            try driver.executeIgnoringStatus(.leSetScanEnable(false, filterDuplicates: false))
            try driver.execute(.leSetRandomAddress(address))
            try driver.execute(.leSetAdvertisingParameters(AdvertisingParameters(type: configuration.advertisingType)))
            try driver.execute(.leSetAdvertisingData(data))
            try driver.execute(.leSetAdvertisingEnable(true))
            try driver.executeIgnoringStatus(.leSetScanEnable(true, filterDuplicates: false))
        }
        update { $0.address = address.description }
    }

    /// A new token (a new rotation period, or the first): advertise it now if the
    /// controller is up. nil stops advertising (Handoff disabled).
    /// The commands wait for the controller's replies: on a thread of their own, in order, not
    /// on the daemon's (which runs on the event loop).
    public func setBeacon(token: [UInt8]?) {
        let next = token.map { Beacon(companyID: configuration.companyID, token: $0) }
        beacon.withLock { $0 = next }
        beaconCommands.async { [self] in applyBeacon(next) }
    }

    private func applyBeacon(_ next: Beacon?) {
        guard let driver = controller.withLock({ $0 }) else { return }
        do throws(HandoffError) {
            if let next {
                try advertise(next, on: driver)
            } else {
                try sequence.withLock { _ throws(HandoffError) in try driver.executeIgnoringStatus(.leSetAdvertisingEnable(false)) }
                update { $0.address = nil }
            }
        } catch {
            update { $0.text = "advertising failed: \(error.message)" }
        }
    }

    public func announce(_ datagrams: [OutgoingAnnouncement]) {}

    /// Switches off what this daemon switched on, and lets go of the controller.
    public func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        beaconCommands.close()
        if let driver = controller.withLock({ $0 }) {
            try? driver.executeIgnoringStatus(.leSetAdvertisingEnable(false))
            try? driver.executeIgnoringStatus(.leSetScanEnable(false, filterDuplicates: false))
            driver.close()
        }
        update {
            $0.text = "stopped"
            $0.available = false
        }
    }
}
