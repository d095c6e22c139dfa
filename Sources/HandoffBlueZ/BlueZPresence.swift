import CSystemd
import FoundationEssentials
import Glibc
import HandoffBluetooth
import HandoffCore
import HandoffDBus
import HandoffTransport
import HandoffRuntime
import Synchronization

/// Bluetooth LE presence through bluetoothd's D-Bus API: the default backend.
/// It registers this host's beacon as an org.bluez.LEAdvertisement1 of type
/// broadcast and scans with discovery (Transport le, DuplicateData on),
/// reading RSSI and ManufacturerData from the Device1 objects bluetoothd
/// creates. Where bluetoothd offers it (-E), it also registers an
/// advertisement monitor on our manufacturer data: with one registered the
/// kernel scans with the controller's duplicate filter off, so every
/// advertisement reaches us, not one per device per scan cycle. The kernel chooses legacy or extended commands and the
/// non-resolvable private address; nothing here needs a privilege.
///
/// The event loop's thread holds the bus connection and every field marked
/// "loop only" below: sd-bus is not thread-safe, and its callbacks run on that
/// thread inside sd_bus_process, called when the loop finds the bus's socket
/// ready or its timeout due. Other threads reach it only through `submit`
/// (the loop's inbox); hence `@unchecked Sendable`. Status has its own mutex so
/// reading it never waits on the bus.
public final class BlueZPresence: BluetoothPresence, @unchecked Sendable {
    public struct Configuration: Sendable {
        /// hciN; nil takes the lowest-numbered adapter.
        public var adapter: String?
        public var companyID: UInt16 = Beacon.defaultCompanyID
        /// What it asks bluetoothd and what comes back, for a debug log; never beacon tokens.
        public var log: (@Sendable (String) -> Void)?

        public init(adapter: String?) {
            self.adapter = adapter
        }
    }

    public let name = DiscoveryPathName.bluetooth
    private let configuration: Configuration
    private let status: Locked<BluetoothStatus>
    private let loop: EventLoop
    private let finished = Signals(value: 0)
    private let started = Atomic<Bool>(false)

    // Loop only.
    private var connection: BusConnection?
    /// The bus's socket and timeout on the loop (sd-bus owns and closes the descriptor).
    private var onLoop = BusOnLoop()
    private var stopped = false
    private var observer: (@Sendable (DiscoveryObservation) -> Void)?
    /// Bumped whenever the bus or bluetoothd starts afresh; replies from before are ignored.
    private var generation = 0
    private var bluetoothdPresent = false
    /// bluetoothd's unique bus name: signals from anyone else are ignored (anyone may emit a signal).
    private var bluezOwner: String?
    private var adapters: [String: BlueZ.Adapter] = [:]
    /// The adapter in use (its object path).
    private var current: String?
    private var token: [UInt8]?
    private var registration = AdvertisementRegistration()
    /// A reconcile is already due on the timer list (the registration's quiet period).
    private var reconcileScheduled = false
    private var discovery = Step.off
    private var monitor = Step.off
    private var devices: [String: Sighting] = [:]
    private var stopping = false
    private var lastError: String?

    /// Where a registration with bluetoothd stands.
    private enum Step: Equatable {
        case off, pending, on
    }

    private struct Sighting {
        var token: [UInt8]?
        var rssi: Int?
        var address: String?
        var reportedMillis: UInt64 = 0
    }

    /// At most this often per device to the daemon: plenty for freshness and RSSI
    /// smoothing, and bounded work however fast bluetoothd reports.
    static let reportIntervalMillis: UInt64 = 250

    public init(configuration: Configuration, loop: EventLoop = .shared) {
        self.configuration = configuration
        self.loop = loop
        var initial = BluetoothStatus(backend: "bluez", adapter: configuration.adapter)
        initial.scanning = "discovery"
        status = Locked(initial)
    }

    public let abilities: PathAbilities = [.tellNear]

    public var health: PathHealth {
        status.withLock { PathHealth($0.available ? .working : .failed(.adapterUnavailable), $0.text) }
    }

    public func show(_ tokens: PeriodTokens?) { setBeacon(token: tokens?.beacon) }
    public var currentStatus: BluetoothStatus { status.withLock { $0 } }

    /// True when bluetoothd is on the system bus now: then BlueZ is the backend to
    /// use. Not D-Bus activation: a bus that could start bluetoothd (its service file
    /// is installed) says nothing about a Bluetooth adapter. Blocks for at most a second.
    public static func isBluetoothdOnSystemBus() -> Bool {
        guard let bus = try? BusConnection.openSystem() else { return false }
        let owned = try? bus.callBlocking(bus.methodCall("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameHasOwner") {
            (body: inout MessageWriter) throws(BusError) in try body.string(BlueZ.service)
        }, timeoutMillis: 1000)
        return owned?.first?.bool == true
    }

    public func start(observer: @escaping @Sendable (DiscoveryObservation) -> Void) throws(HandoffError) {
        guard !started.exchange(true, ordering: .acquiringAndReleasing) else { return }
        submit { presence in
            presence.observer = observer
            presence.connect()
        }
    }

    public func announce(_ datagrams: [OutgoingAnnouncement]) {}

    public func setBeacon(token: [UInt8]?) {
        submit { presence in presence.beaconChanged(token) }
    }

    /// Withdraws the beacon and stops discovery, then closes the connection; waits up to 3 s.
    public func stop() {
        guard started.load(ordering: .acquiring) else { return }
        submit { presence in presence.shutDown() }
        _ = finished.wait(millis: 3_000)
    }

    private func submit(_ work: @escaping @Sendable (BlueZPresence) -> Void) {
        loop.execute { [self] in
            guard !stopping else { return }
            work(self)
            pump()
        }
    }

    private func note(_ message: @autoclosure () -> String) {
        configuration.log?(message())
    }

    private func setStatus(_ change: (inout BluetoothStatus) -> Void) {
        status.withLock { change(&$0) }
    }

    // MARK: - The bus on the loop

    /// Lets sd-bus dispatch what arrived, then asks the loop to call again when the bus needs it.
    /// Called after everything that may have used the bus.
    private func pump() {
        guard let connection, !stopped else { return }
        let more: Bool
        do throws(BusError) {
            more = try BusOnLoop.dispatch(connection) { self.connection === connection }
        } catch {
            connectionLost(error)
            return
        }
        // A callback may have replaced or dropped the connection; that path armed its own.
        guard self.connection === connection, !stopped else { return }
        if more { loop.execute { [self] in pump() } }
        _ = onLoop.rearm(connection, on: loop) { [self] in pump() }
    }

    /// Drops the connection: the loop stops watching its socket before sd-bus closes it.
    private func dropConnection() {
        onLoop.release(on: loop)
        connection = nil
    }

    /// Runs `work` on the loop after `millis`, unless stopped by then.
    private func after(millis: UInt64, _ work: @escaping @Sendable (BlueZPresence) -> Void) {
        loop.after(millis: millis) { [self] in
            guard !stopping else { return }
            work(self)
            pump()
        }
    }

    // MARK: - Connection and bluetoothd's lifetime

    private func connect() {
        dropConnection()
        generation += 1
        do throws(BusError) {
            let bus = try BusConnection.openSystem()
            try exportAdvertisement(on: bus)
            try exportMonitor(on: bus)
            try bus.addMatch("type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='\(BlueZ.service)'") {
                [unowned self] _, _, _, values in
                guard values.count == 3, let newOwner = values[2].string else { return }
                bluetoothdChanged(owner: newOwner.isEmpty ? nil : newOwner)
            }
            // No sender='org.bluez' here: sd-bus dispatches a match locally by comparing the
            // rule's sender with the message's, which is bluetoothd's unique name. Checked below.
            try bus.addMatch("type='signal',interface='org.freedesktop.DBus.ObjectManager',path='/'") {
                [unowned self] _, member, sender, values in
                guard sender == bluezOwner else { return }
                objectsChanged(member: member, values: values)
            }
            try bus.addMatch("type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',path_namespace='/org/bluez'") {
                [unowned self] path, _, sender, values in
                guard sender == bluezOwner else { return }
                propertiesChanged(path: path, values: values)
            }
            connection = bus
            loadObjects()
        } catch {
            connection = nil
            setStatus {
                $0.available = false
                $0.text = "unavailable: cannot use the system bus (\(error)); retrying every 5 s"
            }
            after(millis: 5000) { $0.connect() }
        }
    }

    private func connectionLost(_ error: BusError) {
        dropConnection()
        forgetBluetoothd()
        setStatus {
            $0.available = false
            $0.text = "unavailable: the system bus connection was lost (\(error)); reconnecting"
        }
        after(millis: 2000) { $0.connect() }
    }

    private func bluetoothdChanged(owner: String?) {
        forgetBluetoothd()
        generation += 1
        if let owner {
            bluezOwner = owner
            loadObjects()
        } else {
            updateStatus()
        }
    }

    /// bluetoothd went away (or is back as a new process): what it held for us is gone with it.
    private func forgetBluetoothd() {
        bluetoothdPresent = false
        bluezOwner = nil
        adapters.removeAll()
        devices.removeAll()
        current = nil
        registration.forget()
        discovery = .off
        monitor = .off
    }

    /// Learns who bluetoothd is, then reads its adapters; also how its presence is first learnt.
    private func loadObjects() {
        let issued = generation
        call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetNameOwner", { (body: inout MessageWriter) throws(BusError) in
            try body.string(BlueZ.service)
        }) { [unowned self] result in
            guard issued == generation else { return }
            note("bluez: bluetoothd is \((try? result.get())?.first?.string ?? "not on the bus")")
            guard case let .success(values) = result, let owner = values.first?.string else {
                // Not running: NameOwnerChanged announces it when it starts.
                bluetoothdPresent = false
                return updateStatus()
            }
            bluezOwner = owner
            loadAdapters()
        }
    }

    private func loadAdapters() {
        let issued = generation
        call(BlueZ.service, "/", "org.freedesktop.DBus.ObjectManager", "GetManagedObjects") { [unowned self] result in
            guard issued == generation else { return }
            switch result {
            case let .success(values):
                bluetoothdPresent = true
                for (key, value) in values.first?.entries ?? [] {
                    guard let path = key.string, let interfaces = value.stringDictionary else { continue }
                    addInterfaces(path: path, interfaces: interfaces, live: false)
                }
                note("bluez: adapters \(adapters.values.map { "\($0.name) powered=\($0.powered) advertise=\($0.canAdvertise) monitor=\($0.canMonitor)" })")
                reconcile()
            case .failure:
                // Not running: NameOwnerChanged announces it when it starts.
                bluetoothdPresent = false
                updateStatus()
            }
        }
    }

    private func call(_ destination: String, _ path: String, _ interface: String, _ member: String,
                      _ body: (inout MessageWriter) throws(BusError) -> Void = { _ throws(BusError) in },
                      reply: @escaping (Result<[BusValue], BusError>) -> Void) {
        guard let connection else { return }
        do throws(BusError) {
            let message = try connection.methodCall(destination, path, interface, member, body)
            // Never start bluetoothd by calling it: NameOwnerChanged says when it is there.
            sd_bus_message_set_auto_start(message.message, 0)
            try connection.callAsync(message, reply: reply)
        } catch {
            reply(.failure(error))
        }
    }

    // MARK: - Objects and properties

    private func objectsChanged(member: String, values: [BusValue]) {
        guard let path = values.first?.string else { return }
        if member == "InterfacesAdded", values.count == 2, let interfaces = values[1].stringDictionary {
            addInterfaces(path: path, interfaces: interfaces, live: true)
            if adapters[path] != nil { reconcile() }
        } else if member == "InterfacesRemoved", values.count == 2, case let .array(names) = values[1] {
            if names.contains(.string(BlueZ.adapterInterface)) {
                adapters.removeValue(forKey: path)
                reconcile()
            } else if var adapter = adapters[path] {
                // bluetoothd withdraws the managers while an adapter powers down.
                if names.contains(.string(BlueZ.advertisingManagerInterface)) { adapter.canAdvertise = false }
                if names.contains(.string(BlueZ.monitorManagerInterface)) { adapter.canMonitor = false }
                adapters[path] = adapter
                reconcile()
            }
            if names.contains(.string(BlueZ.deviceInterface)) { devices.removeValue(forKey: path) }
        }
    }

    /// `live`: the object just appeared (InterfacesAdded), so its properties are a
    /// sighting; GetManagedObjects lists devices bluetoothd remembers from earlier, which are not.
    private func addInterfaces(path: String, interfaces: [String: BusValue], live: Bool) {
        if let name = BlueZ.adapterName(path: path), interfaces[BlueZ.adapterInterface] != nil || adapters[path] != nil {
            // bluetoothd adds an adapter's interfaces in steps: Adapter1 first, the
            // advertising and monitor managers once the adapter is set up.
            var adapter = adapters[path] ?? BlueZ.Adapter(path: path, name: name)
            if let properties = interfaces[BlueZ.adapterInterface]?.stringDictionary { adapter.apply(properties) }
            if interfaces[BlueZ.advertisingManagerInterface] != nil { adapter.canAdvertise = true }
            if interfaces[BlueZ.monitorManagerInterface] != nil { adapter.canMonitor = true }
            adapters[path] = adapter
        }
        if live, let properties = interfaces[BlueZ.deviceInterface]?.stringDictionary {
            deviceChanged(path: path, properties: properties)
        }
    }

    private func propertiesChanged(path: String, values: [BusValue]) {
        guard values.count >= 2, let interface = values[0].string, let changed = values[1].stringDictionary else { return }
        switch interface {
        case BlueZ.deviceInterface:
            deviceChanged(path: path, properties: changed)
        case BlueZ.adapterInterface:
            guard var adapter = adapters[path] else { return }
            let before = adapter
            adapter.apply(changed)
            adapters[path] = adapter
            if path == current && (adapter.powered != before.powered || adapter.discoverable != before.discoverable) {
                registration.adapterChanged(at: monotonicMillis())
            }
            reconcile()
        default:
            break
        }
    }

    /// A device's properties changed: with DuplicateData on, bluetoothd re-sends
    /// ManufacturerData on every advertisement it receives, and RSSI when it moves.
    private func deviceChanged(path: String, properties: [String: BusValue]) {
        guard let current, BlueZ.adapterPath(ofDevice: path) == current else { return }
        let update = BlueZ.DeviceUpdate(properties, companyID: configuration.companyID)
        if devices[path] == nil && devices.count >= BlueZ.maximumDevices { devices.remove(at: devices.startIndex) }
        var sighting = devices[path] ?? Sighting()
        let previous = sighting
        if update.manufacturerDataSeen { sighting.token = update.token }
        if let rssi = update.rssi { sighting.rssi = rssi }
        if let address = update.address { sighting.address = address }
        let now = monotonicMillis()
        let due = now >= sighting.reportedMillis + Self.reportIntervalMillis
            || sighting.token != previous.token || sighting.rssi != previous.rssi
        // Only a report that carries the beacon is a sighting of it: an address that once
        // carried our token (the public one while the adapter was made discoverable, in
        // the VM lab) may go on advertising something else, and RSSI alone would keep
        // the token fresh. With DuplicateData, bluetoothd re-sends ManufacturerData on each.
        guard update.manufacturerDataSeen, due, let token = sighting.token, let rssi = sighting.rssi else {
            devices[path] = sighting
            return
        }
        sighting.reportedMillis = now
        devices[path] = sighting
        setStatus { $0.beaconsHeard += 1 }
        observer?(.beacon(token: token, address: sighting.address ?? path, rssi: rssi))
    }

    // MARK: - Advertising and discovery

    private func beaconChanged(_ next: [UInt8]?) {
        guard next != token else { return }
        // Withdrawn (nil), or a new token: unregistered and registered again (reconcile),
        // so the kernel adds the set afresh with a new non-resolvable private address
        // before the new data (btmon in the VM lab): token and address change together.
        // Not PropertiesChanged: that makes bluetoothd refresh, and a failed refresh
        // aborts it before 5.74 (AdvertisementRegistration).
        token = next
        reconcile()
    }

    /// The one place that decides what to ask bluetoothd for, from what is known now.
    private func reconcile() {
        guard connection != nil, bluetoothdPresent else { return updateStatus() }
        let chosen = BlueZ.choose(adapters, wanted: configuration.adapter)
        if chosen?.path != current {
            // Another adapter (or none): what was registered on the old one went with it or is left to bluetoothd.
            current = chosen?.path
            registration.forget()
            discovery = .off
            monitor = .off
            devices.removeAll()
        }
        guard let adapter = chosen, adapter.powered else {
            discovery = .off
            monitor = .off
            reconcileAdvertisement(adapter: chosen)
            return updateStatus()
        }
        if monitor == .off && adapter.canMonitor { registerMonitor(on: adapter.path) }
        if discovery == .off { startDiscovery(on: adapter.path) }
        reconcileAdvertisement(adapter: adapter)
        updateStatus()
    }

    /// Registers, unregisters or waits, as AdvertisementRegistration decides. Off the air
    /// while the adapter is discoverable: Discoverable makes the adapter connectable, and
    /// the kernel then sets an advertising set up as connectable from the public address
    /// (hci_setup_ext_adv_instance_sync).
    private func reconcileAdvertisement(adapter: BlueZ.Adapter?) {
        guard let adapter else { return }
        let wanted = adapter.powered && adapter.canAdvertise && !adapter.discoverable ? token : nil
        switch registration.next(wanted: wanted, at: monotonicMillis()) {
        case .none:
            break
        case .register:
            registerAdvertisement(on: adapter.path)
        case .unregister:
            unregisterAdvertisement()
        case let .wait(millis):
            guard !reconcileScheduled else { break }
            reconcileScheduled = true
            after(millis: millis) { presence in
                presence.reconcileScheduled = false
                presence.reconcile()
            }
        }
    }

    private func startDiscovery(on path: String) {
        discovery = .pending
        let issued = generation
        call(BlueZ.service, path, BlueZ.adapterInterface, "SetDiscoveryFilter", { (body: inout MessageWriter) throws(BusError) in
            try body.container("a", "{sv}") { (options: inout MessageWriter) throws(BusError) in
                try options.option("Transport", "s") { (value: inout MessageWriter) throws(BusError) in try value.string("le") }
                // Every advertisement, not only the first from each device: freshness and RSSI need them all.
                try options.option("DuplicateData", "b") { (value: inout MessageWriter) throws(BusError) in try value.bool(true) }
            }
        }) { [unowned self] result in
            guard issued == generation, current == path else { return }
            if case let .failure(error) = result { return discoveryFailed(error, path: path) }
            note("bluez: discovery filter set on \(path)")
            call(BlueZ.service, path, BlueZ.adapterInterface, "StartDiscovery") { [unowned self] result in
                guard issued == generation, current == path else { return }
                note("bluez: StartDiscovery on \(path): \(result)")
                switch result {
                case .success:
                    discovery = .on
                    lastError = nil
                case let .failure(error) where error.name == "org.bluez.Error.InProgress":
                    discovery = .on // ours already runs
                case let .failure(error):
                    return discoveryFailed(error, path: path)
                }
                updateStatus()
            }
        }
    }

    private func discoveryFailed(_ error: BusError, path: String) {
        discovery = .off
        lastError = "discovery: \(error)"
        updateStatus()
        // NotReady: the adapter is powering; anything else: try again shortly.
        after(millis: 2000) { presence in if presence.current == path { presence.reconcile() } }
    }

    private func registerAdvertisement(on path: String) {
        let issued = generation
        call(BlueZ.service, path, BlueZ.advertisingManagerInterface, "RegisterAdvertisement", { (body: inout MessageWriter) throws(BusError) in
            try body.objectPath(BlueZ.advertisementPath)
            try body.container("a", "{sv}") { _ throws(BusError) in }
        }) { [unowned self] result in
            guard issued == generation, current == path else { return }
            note("bluez: RegisterAdvertisement on \(path): \(result)")
            switch result {
            case .success:
                registration.registerAnswered(.registered, at: monotonicMillis())
                lastError = nil
            case let .failure(error) where error.name == "org.bluez.Error.AlreadyExists":
                registration.registerAnswered(.alreadyExists, at: monotonicMillis())
            case let .failure(error):
                registration.registerAnswered(.failed, at: monotonicMillis())
                lastError = "advertising: \(error)"
            }
            reconcile()
        }
    }

    private func unregisterAdvertisement() {
        guard let current else { return }
        let issued = generation
        call(BlueZ.service, current, BlueZ.advertisingManagerInterface, "UnregisterAdvertisement", { (body: inout MessageWriter) throws(BusError) in
            try body.objectPath(BlueZ.advertisementPath)
        }) { [unowned self] result in
            note("bluez: UnregisterAdvertisement on \(current): \(result)")
            guard issued == generation, self.current == current else { return }
            registration.unregisterAnswered()
            reconcile()
        }
    }

    /// The advertisement object bluetoothd reads (GetAll) when it is registered, and calls Release on.
    private func exportAdvertisement(on bus: BusConnection) throws(BusError) {
        let companyID = configuration.companyID
        let callbacks = BusCallbacks(onMessage: { [unowned self] message in
            // Release: bluetoothd dropped it (adapter gone, bluetoothd stopping, a timeout).
            note("bluez: advertisement released")
            registration.released(at: monotonicMillis())
            reconcile()
            return handoff_bus_reply_empty(message)
        }, onProperty: { [unowned self] property, reply in
            var writer = MessageWriter(message: reply)
            do throws(BusError) {
                switch property {
                case "Type":
                    try writer.string("broadcast")
                case "ManufacturerData":
                    let payload = (registration.token ?? token).map { Beacon(companyID: companyID, token: $0).manufacturerPayload } ?? []
                    try writer.container("a", "{qv}") { (map: inout MessageWriter) throws(BusError) in
                        guard !payload.isEmpty else { return }
                        try map.container("e", "qv") { (entry: inout MessageWriter) throws(BusError) in
                            try entry.uint16(companyID)
                            try entry.container("v", "ay") { (value: inout MessageWriter) throws(BusError) in try value.bytes(payload) }
                        }
                    }
                case "MinInterval", "MaxInterval":
                    try writer.uint32(Self.intervalMillis)
                default:
                    return -ENOENT
                }
            } catch {
                return -error.errno
            }
            return 1
        })
        try bus.export(path: BlueZ.advertisementPath, interface: BlueZ.advertisementInterface,
                       vtable: handoff_advertisement_vtable(messageTrampoline, propertyTrampoline), callbacks: callbacks)
    }

    private func registerMonitor(on path: String) {
        monitor = .pending
        let issued = generation
        call(BlueZ.service, path, BlueZ.monitorManagerInterface, "RegisterMonitor", { (body: inout MessageWriter) throws(BusError) in
            try body.objectPath(BlueZ.monitorRoot)
        }) { [unowned self] result in
            guard issued == generation, current == path, monitor == .pending else { return }
            note("bluez: RegisterMonitor on \(path): \(result)")
            switch result {
            case .success:
                monitor = .on
            case let .failure(error) where error.name == "org.bluez.Error.AlreadyExists":
                monitor = .on
            case let .failure(error):
                // Discovery alone still works, with fewer reports: say so rather than retry for ever.
                monitor = .off
                lastError = "advertisement monitor: \(error)"
            }
            updateStatus()
        }
    }

    /// The monitor bluetoothd reads (through GetManagedObjects on its root) when it is registered.
    private func exportMonitor(on bus: BusConnection) throws(BusError) {
        let pattern = BlueZ.monitorPattern(companyID: configuration.companyID)
        let callbacks = BusCallbacks(onMessage: { [unowned self] message in
            let member = sd_bus_message_get_member(message).map { String(cString: $0) } ?? ""
            switch member {
            case "Release":
                note("bluez: monitor released")
                monitor = .off
                updateStatus()
            default:
                // Activate, DeviceFound, DeviceLost: sightings come from Device1's properties,
                // which the monitor makes bluetoothd update on every advertisement.
                break
            }
            return handoff_bus_reply_empty(message)
        }, onProperty: { property, reply in
            var writer = MessageWriter(message: reply)
            do throws(BusError) {
                switch property {
                case "Type":
                    try writer.string("or_patterns")
                case "Patterns":
                    try writer.container("a", "(yyay)") { (list: inout MessageWriter) throws(BusError) in
                        try list.container("r", "yyay") { (entry: inout MessageWriter) throws(BusError) in
                            try entry.byte(pattern.start)
                            try entry.byte(pattern.type)
                            try entry.bytes(pattern.content)
                        }
                    }
                default:
                    return -ENOENT
                }
            } catch {
                return -error.errno
            }
            return 1
        })
        try bus.addObjectManager(path: BlueZ.monitorRoot)
        try bus.export(path: BlueZ.monitorPath, interface: BlueZ.monitorInterface,
                       vtable: handoff_monitor_vtable(messageTrampoline, propertyTrampoline), callbacks: callbacks)
    }

    /// 100 ms: heard several times a second, without crowding the air.
    static let intervalMillis: UInt32 = 100

    private func updateStatus() {
        let adapter = current.flatMap { adapters[$0] }
        let wanted = configuration.adapter
        let text: String
        var available = false
        if connection == nil {
            text = status.withLock { $0.text }
        } else if !bluetoothdPresent {
            text = "unavailable: bluetoothd is not running (org.bluez is not on the system bus); waiting for it"
        } else if let adapter {
            if !adapter.powered {
                text = "unavailable: adapter \(adapter.name) is powered off; waiting for it ('bluetoothctl power on', 'rfkill unblock bluetooth')"
            } else if adapter.discoverable && token != nil {
                text = "unavailable: beacon withdrawn while adapter \(adapter.name) is discoverable (the kernel would send it from the adapter's public address); "
                    + (discovery == .on ? "still scanning" : "starting discovery") + "; it comes back when discoverable ends ('bluetoothctl discoverable off')"
            } else if !adapter.canAdvertise {
                text = "unavailable: adapter \(adapter.name) cannot advertise (no LE advertising manager)"
            } else {
                let advertising = token == nil ? "not advertising (Handoff is off)" : registration.isAdvertising ? "advertising" : "registering the advertisement"
                let scanning = discovery != .on ? "starting discovery"
                    : monitor == .on ? "scanning (discovery with an advertisement monitor: every advertisement is reported)"
                    : "scanning (discovery only: about one report per device per 10 s scan cycle; bluetoothd -E adds the advertisement monitor)"
                available = discovery == .on && (token == nil || registration.isAdvertising)
                text = "\(advertising) and \(scanning) on \(adapter.name) through bluetoothd" + (lastError.map { "; last error: \($0)" } ?? "")
            }
        } else {
            text = "unavailable: " + (wanted.map { "no adapter \($0) in bluetoothd" } ?? "bluetoothd has no adapter") + "; waiting for one"
        }
        let scanning = monitor == .on ? "discovery and advertisement monitor" : "discovery"
        setStatus {
            $0.text = text
            $0.available = available
            $0.adapter = adapter?.name ?? wanted
            $0.scanning = scanning
        }
    }

    /// Withdraws the beacon and stops discovery, without blocking the loop: waits out the
    /// registration's quiet period on a deadline, sends both calls, and drops the connection
    /// when both replied or after a second (bluetoothd also drops both when it closes).
    private func shutDown() {
        guard !stopping else { return }
        stopping = true
        guard connection != nil, current != nil else { return finishStopping() }
        // Not while bluetoothd may still be refreshing it (AdvertisementRegistration).
        let quiet = registration.state != .off ? registration.quietMillis(at: monotonicMillis()) : 0
        loop.after(millis: quiet) { [self] in sendGoodbyes() }
    }

    private func sendGoodbyes() {
        guard let connection, let current, !stopped else { return finishStopping() }
        var calls: [OutgoingMessage] = []
        if registration.state != .off, let call = try? connection.methodCall(BlueZ.service, current, BlueZ.advertisingManagerInterface, "UnregisterAdvertisement", {
            (body: inout MessageWriter) throws(BusError) in try body.objectPath(BlueZ.advertisementPath)
        }) { calls.append(call) }
        if discovery != .off, let call = try? connection.methodCall(BlueZ.service, current, BlueZ.adapterInterface, "StopDiscovery") {
            calls.append(call)
        }
        var waiting = 0
        for call in calls where (try? connection.callAsync(call, timeoutMillis: 1000, reply: { [self] _ in
            waiting -= 1
            if waiting == 0 { finishStopping() }
        })) != nil { waiting += 1 }
        guard waiting > 0 else { return finishStopping() }
        pump()
        loop.after(millis: 1000) { [self] in finishStopping() }
    }

    private func finishStopping() {
        guard !stopped else { return }
        stopped = true
        dropConnection()
        setStatus {
            $0.text = "stopped"
            $0.available = false
        }
        finished.signal()
    }
}
