import FoundationEssentials
import Glibc
import HandoffCommandLine
import HandoffCore
import HandoffDaemon
import HandoffTransport
import HandoffRuntime

/// handoffd: the daemon, as a systemd user service runs it.
enum DaemonProgram {
    static func main(_ commandLine: [String]) -> Never {
        // Before any thread: SIGTERM and SIGINT are blocked in every thread (they inherit the
        // mask) and taken by the main thread with sigwait, never in async-signal context.
        var stopSignals = sigset_t()
        sigemptyset(&stopSignals)
        sigaddset(&stopSignals, SIGTERM)
        sigaddset(&stopSignals, SIGINT)
        pthread_sigmask(SIG_BLOCK, &stopSignals, nil)
        signal(SIGPIPE, SIG_IGN)
        // Before any Task or thread: Swift concurrency runs on our threads, not libdispatch's
        // (EventExecutor says why), and malloc keeps few arenas.
        Malloc.configureForDaemon()
        // Only another executor already installed can refuse it, and nothing installs one before this.
        let onOurExecutor = EventExecutor.install()
        precondition(onOurExecutor, "Swift concurrency's global executor hook is taken before handoffd's main")

        let spec = CommandSpec(
            name: "handoffd",
            abstract: "handoffd: the Handoff daemon. Announces this host, lists what trusted peers offer, serves and fetches activities.",
            options: [
                CommandSpec.versionOption,
                .init("state-dir", value: "DIR", help: "Identity and trust store (default $XDG_STATE_HOME/handoff, /var/lib/handoff as root)."),
                .init("socket", value: "PATH", help: "Local API socket (default $XDG_RUNTIME_DIR/handoff/handoffd.sock)."),
                .init("name", value: "NAME", help: "Device name shown to trusted peers (default: the host name)."),
                .init("interface", value: "IFNAME", help: "Announce and listen on this interface only (default: every multicast-capable one)."),
                .init("port", value: "N", help: "Transfer port, TCP (default 47181; 0 picks a free port)."),
                .init("discovery", value: "LIST", help: "Discovery paths, comma-separated: multicast, mdns (default both). mdns uses avahi-daemon and sends announcements straight to the peers it finds."),
                .init("bluetooth-adapter", value: "HCI", help: "Adapter bluetoothd should use for beacons and proximity (default: the lowest-numbered one). Bluetooth goes through bluetoothd's D-Bus API, needing no privilege, whenever bluetoothd runs."),
                .init("hci", value: "DEVICE", help: "Raw HCI instead of bluetoothd: unix:PATH (H4 over a Unix socket, the lab's emulator) or hciN (a controller bluetoothd does not manage; needs CAP_NET_RAW and CAP_NET_ADMIN); none opts out of Bluetooth, and proximity is then not enforced (also the default without bluetoothd)."),
                .init("rssi-threshold", value: "DBM", help: "A peer is near when its smoothed beacon RSSI is at least this (default -70)."),
                .init("proximity-ttl", value: "SECONDS", help: "A peer is near only if its beacon was heard this recently (default 10)."),
                .init("company-id", value: "HEX", help: "Company identifier in the beacon's manufacturer data (default FFFF, reserved for testing)."),
                .init("discovery-port", value: "N", help: "UDP port of multicast announcements (default 47180; all hosts must agree)."),
                .init("announce-interval", value: "SECONDS", help: "Keepalive to paired devices heard from, this often when nothing changes (default 30; changes go out at once)."),
                .init("peer-ttl", value: "SECONDS", help: "Peers drop this host after this long without an announcement (default 100; at least twice --announce-interval)."),
                .init("transfer-timeout", value: "SECONDS", help: "Give up on a peer that stops answering during a transfer after this long (default 10)."),
                .init("log-level", value: "LEVEL", help: "debug, info, warning or error (default info). Logs never contain titles or payloads."),
            ],
            discussion: """
            Stops cleanly on SIGTERM or SIGINT, telling peers it is leaving.
            Exit status: 0 after a clean stop, 1 when it cannot start (the message says why), 64 on misuse.
            """)

        /// handoffd cannot start: the message says why; exit status 1.
        @Sendable func fail(_ message: String) -> Never {
            writeStandardError("Error: \(message)\n")
            exit(1)
        }

        func number<T: FixedWidthInteger>(_ arguments: ParsedArguments, _ option: String, _ range: ClosedRange<T>) -> T? {
            guard let text = arguments.value(option) else { return nil }
            guard let value = T(text), range.contains(value) else {
                spec.exitWithUsage(UsageError.invalidValue(option: "--\(option)", reason: "'\(text)' is not a number from \(range.lowerBound) to \(range.upperBound).").description)
            }
            return value
        }

        let arguments = spec.argumentsOrExit(Array(commandLine.dropFirst()))

        var configuration = DaemonConfiguration(
            stateDirectory: arguments.value("state-dir") ?? StateDirectory.defaultPath(),
            socketPath: arguments.value("socket") ?? DaemonConfiguration.defaultSocketPath(),
            name: arguments.value("name") ?? DaemonConfiguration.defaultName())
        if configuration.name.isEmpty || configuration.name.utf8.count > Summary.nameBytes
            || Activity.containsUnsafeCharacters(configuration.name) {
            spec.exitWithUsage("--name must be 1 to \(Summary.nameBytes) bytes without control characters.")
        }
        configuration.interface = arguments.value("interface")
        if let port: UInt16 = number(arguments, "port", 0...65535) {
            configuration.transferPort = port
            configuration.transferPortGiven = true
        }
        if let port: UInt16 = number(arguments, "discovery-port", 1...65535) { configuration.multicast.port = port }
        if let seconds: UInt64 = number(arguments, "announce-interval", 1...3600) { configuration.announceIntervalMillis = seconds * 1000 }
        if let seconds: UInt16 = number(arguments, "peer-ttl", 2...3600) { configuration.peerTTLSeconds = seconds }
        // Peers must hear at least two announcements within the TTL, or they drop this host between them.
        if configuration.announceIntervalMillis * 2 > UInt64(configuration.peerTTLSeconds) * 1000 {
            spec.exitWithUsage(UsageError.invalidValue(option: "--announce-interval", reason: "must be at most half of --peer-ttl (\(configuration.peerTTLSeconds) s), or peers drop this host between announcements.").description)
        }
        if let seconds: Int = number(arguments, "transfer-timeout", 1...600) { configuration.transferTimeoutMillis = seconds * 1000 }
        func isAdapterName(_ name: String) -> Bool { name.hasPrefix("hci") && Int(name.dropFirst(3)) != nil }
        if let device = arguments.value("hci") {
            if device != "none" {
                guard device.hasPrefix("unix:") ? device.count > 5 : isAdapterName(device) else {
                    spec.exitWithUsage(UsageError.invalidValue(option: "--hci", reason: "'\(device)' is not hciN, unix:PATH or none.").description)
                }
                // A kernel controller over a raw HCI socket: say what is missing before trying.
                if isAdapterName(device), let missing = Capabilities.missingForRawHCI(), !missing.isEmpty {
                    fail("""
                        --hci \(device) drives the controller over a raw HCI socket, which needs CAP_NET_RAW and CAP_NET_ADMIN; \
                        this handoffd lacks \(missing.joined(separator: " and ")).
                        Fix: leave out --hci: the default Bluetooth backend goes through bluetoothd and needs no privilege. \
                        Raw HCI is for a controller bluetoothd does not manage: run handoffd as root for that (Docs/HARDWARE.md); \
                        the handoffd.service user unit cannot grant capabilities.
                        """)
                }
                configuration.hci = device
            }
            if arguments.value("bluetooth-adapter") != nil {
                spec.exitWithUsage(UsageError.invalidValue(option: "--bluetooth-adapter", reason: "goes with bluetoothd, not with --hci.").description)
            }
        } else if let adapter = arguments.value("bluetooth-adapter") {
            guard isAdapterName(adapter) else {
                spec.exitWithUsage(UsageError.invalidValue(option: "--bluetooth-adapter", reason: "'\(adapter)' is not hciN.").description)
            }
            // Asked for: waits for bluetoothd and the adapter if they are not there yet.
            configuration.bluez = true
            configuration.bluetoothAdapter = adapter
        } else {
            configuration.bluez = Daemon.bluetoothdAvailable()
        }
        if let threshold: Int = number(arguments, "rssi-threshold", -127...20) { configuration.proximity.thresholdDBM = threshold }
        if let seconds: UInt64 = number(arguments, "proximity-ttl", 1...3600) { configuration.proximity.freshnessMillis = seconds * 1000 }
        if let text = arguments.value("company-id") {
            guard let id = UInt16(text.hasPrefix("0x") ? String(text.dropFirst(2)) : text, radix: 16) else {
                spec.exitWithUsage(UsageError.invalidValue(option: "--company-id", reason: "'\(text)' is not a 16-bit hexadecimal number.").description)
            }
            configuration.bluetoothCompanyID = id
        }
        if let list = arguments.value("discovery") {
            var paths: Set<DiscoveryPathName> = []
            for name in list.split(separator: ",").map({ $0.trimmingSpaces() }) {
                // Only the documented values: unicast rides on mdns, and Bluetooth is chosen with --hci.
                guard let path = DiscoveryPathName(rawValue: name), [.multicast, .mdns].contains(path) else {
                    spec.exitWithUsage(UsageError.invalidValue(option: "--discovery", reason: "'\(name)' is not multicast or mdns (Bluetooth is chosen with --hci).").description)
                }
                paths.insert(path)
            }
            guard !paths.isEmpty else {
                spec.exitWithUsage(UsageError.invalidValue(option: "--discovery", reason: "give at least one of multicast, mdns.").description)
            }
            configuration.discovery = paths
        }
        if let level = arguments.value("log-level") {
            guard let parsed = Log.Level(name: level) else {
                spec.exitWithUsage(UsageError.invalidValue(option: "--log-level", reason: "'\(level)' is not debug, info, warning or error.").description)
            }
            configuration.logLevel = parsed
        }

        let daemon: Daemon
        do {
            daemon = try Daemon(configuration: configuration)
        } catch {
            fail("\(error.message)\nFix: \(error.fix)")
        }

        // The daemon's actor runs on the event loop's thread (tasks that belong to no actor on
        // EventExecutor's, started only when one is made); the main thread only takes the stop
        // signals, which every other thread blocks.
        daemon.startOnLoop { error in fail("\(error.message)\nFix: \(error.fix)") }
        while true {
            var number: Int32 = 0
            guard sigwait(&stopSignals, &number) == 0 else { continue }
            // However the shutdown goes, the process ends: a daemon that ignores
            // SIGTERM would be killed without its goodbye anyway. A thread of its own, so a
            // loop that is stuck cannot hold it.
            Threads.start("stop deadline") {
                Threads.sleep(seconds: 3)
                exit(0)
            }
            let remaining = daemon.shutdownWaiting()
            remaining.finish(withinMillis: 1000)
            exit(0)
        }
    }
}
