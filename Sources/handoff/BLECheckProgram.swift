import FoundationEssentials
import Glibc
import HandoffBluetooth
import HandoffBlueZ
import HandoffCommandLine
import HandoffCore
import HandoffCrypto
import HandoffTransport
import HandoffRuntime

/// handoff-ble-check: checks Bluetooth for Handoff on real hardware.
enum BLECheckProgram {
    static func main(_ commandLine: [String]) -> Never {
        let spec = CommandSpec(
            name: "handoff-ble-check",
            abstract: "handoff-ble-check: check Bluetooth for Handoff: what bluetoothd offers, then advertise a test beacon and scan for a few seconds.",
            options: [
                CommandSpec.versionOption,
                .init("adapter", value: "HCI", help: "The adapter to check through bluetoothd (default: the lowest-numbered one, as handoffd takes)."),
                .init("hci", value: "DEVICE", help: "Check raw HCI instead: hciN (a controller bluetoothd does not manage; needs CAP_NET_RAW and CAP_NET_ADMIN) or unix:PATH (the lab's emulator)."),
                .init("seconds", value: "N", help: "How long to advertise and scan (default 5)."),
                .init("json", help: "Print JSON."),
            ],
            discussion: """
            By default it checks the backend handoffd uses, bluetoothd's D-Bus API, and needs no privilege:
            bluetoothd on the system bus, the adapter and its power, LEAdvertisingManager1 and its free
            advertising instances, AdvertisementMonitorManager1 (bluetoothd -E), then a test beacon and a scan.
            With --hci it drives a controller over raw HCI; it never resets the controller and switches
            advertising and scanning off again when it is done.
            Exit status: 0 when everything works, 1 otherwise, 64 on misuse.
            """)


        func fail(_ message: String, fix: String) -> Never {
            writeStandardError("Error: \(message)\nFix: \(fix)\n")
            exit(1)
        }

        let arguments = spec.argumentsOrExit(Array(commandLine.dropFirst()))
        guard let seconds = Double(arguments.value("seconds") ?? "5"), seconds > 0, seconds <= 120 else {
            spec.exitWithUsage("--seconds must be a number from 0 to 120.")
        }
        let json = arguments.flag("json")
        func isAdapterName(_ name: String) -> Bool { name.hasPrefix("hci") && Int(name.dropFirst(3)) != nil }

        // --- raw HCI --------------------------------------------------------------------

        if let device = arguments.value("hci") {
            guard arguments.value("adapter") == nil else { spec.exitWithUsage("--adapter goes with bluetoothd, not with --hci.") }
            guard device.hasPrefix("unix:") ? device.count > 5 : isAdapterName(device) else {
                spec.exitWithUsage("--hci: '\(device)' is not hciN or unix:PATH.")
            }
            if isAdapterName(device), let missing = Capabilities.missingForRawHCI(), !missing.isEmpty {
                fail("Raw HCI on \(device) needs CAP_NET_RAW and CAP_NET_ADMIN; this process lacks \(missing.joined(separator: " and ")).",
                     fix: "Run it as root (sudo), or leave out --hci to check the bluetoothd backend handoffd uses, which needs no privilege.")
            }
            do {
                let result = try BluetoothProbe.run(device: device, seconds: seconds, token: Random.bytes(Beacon.tokenBytes))
                if json {
                    let heard: [JSONValue] = result.heard.map {
                        ["address": .string($0.address), "rssi": .integer(Int64($0.rssi)), "reports": .integer(Int64($0.reports)),
                         "handoffBeacon": .bool($0.handoffBeacon), "extended": .bool($0.extended)]
                    }
                    print(JSONValue.object(["backend": "hci", "device": .string(result.device), "advertisedAddress": .string(result.advertisedAddress),
                                            "heard": .array(heard)]).prettyPrinted())
                } else {
                    print("Controller \(result.device) (raw HCI): took every command.")
                    print("Advertised a test beacon from \(result.advertisedAddress) for \(seconds) s.")
                    if result.heard.isEmpty {
                        print("Heard nothing. On a real laptop there are usually other devices around; check that the adapter is powered and not blocked (rfkill).")
                    } else {
                        print("Heard \(result.heard.count) advertiser(s):")
                        for entry in result.heard {
                            print("  \(entry.address)  \(entry.rssi) dBm  \(entry.reports) report(s)\(entry.handoffBeacon ? "  handoff beacon" : "")\(entry.extended ? "  (extended)" : "")")
                        }
                    }
                }
                exit(0)
            } catch {
                fail(error.message, fix: error.fix)
            }
        }

        // --- bluetoothd (the default backend) ---------------------------------------------

        if let adapter = arguments.value("adapter"), !isAdapterName(adapter) {
            spec.exitWithUsage("--adapter: '\(adapter)' is not hciN.")
        }
        guard BlueZPresence.isBluetoothdOnSystemBus() else {
            fail("bluetoothd (org.bluez) is not on the system bus.",
                 fix: "Start it: sudo systemctl enable --now bluetooth (Debian package bluez). Without it handoffd hands off over the network without proximity.")
        }

        /// bluetoothd's object tree through busctl (systemd's D-Bus tool): any user may read it.
        func inventory() -> BlueZInventory? {
            guard let busctl = ["/usr/bin/busctl", "/bin/busctl"].first(where: FileManager.default.isExecutableFile) else { return nil }
            guard let (status, output) = try? ChildProcess.run(busctl, arguments: ["--system", "--json=short", "call", "org.bluez", "/",
                                                                                  "org.freedesktop.DBus.ObjectManager", "GetManagedObjects"]),
                  status == 0 else { return nil }
            return BlueZInventory.parse(busctlJSON: Data(output))
        }

        var problems: [(problem: String, fix: String)] = []
        let found = inventory()
        var chosen = arguments.value("adapter")
        var adapterJSON: JSONValue = .null
        if let found {
            if found.adapters.isEmpty {
                fail("bluetoothd runs but has no adapter.",
                     fix: "Check 'rfkill list bluetooth' and 'bluetoothctl list'; a laptop without one hands off over the network without proximity.")
            }
            let adapter: BlueZInventory.Adapter
            if let name = chosen {
                guard let named = found.adapters.first(where: { $0.name == name }) else {
                    fail("bluetoothd has no adapter \(name) (it has \(found.adapters.map(\.name).joined(separator: ", "))).",
                         fix: "Pass one of those to --adapter.")
                }
                adapter = named
            } else {
                adapter = found.adapters[0]
                chosen = adapter.name
            }
            problems += BlueZInventory.problems(of: adapter)
            adapterJSON = ["name": .string(adapter.name), "powered": .bool(adapter.powered), "discoverable": .bool(adapter.discoverable),
                           "advertisingManager": .bool(adapter.advertising),
                           "supportedInstances": adapter.supportedInstances.map { .integer(Int64($0)) } ?? .null,
                           "activeInstances": adapter.activeInstances.map { .integer(Int64($0)) } ?? .null,
                           "extendedAdvertising": .bool(!adapter.secondaryChannels.isEmpty),
                           "advertisementMonitor": .bool(adapter.monitor), "monitorTypes": .array(adapter.monitorTypes.map { .string($0) })]
            if !json {
                print("bluetoothd: on the system bus; adapters: \(found.adapters.map { "\($0.name) (\($0.powered ? "on" : "off"))" }.joined(separator: ", "))")
                print("Adapter \(adapter.name): \(adapter.powered ? "powered" : "powered off")\(adapter.discoverable ? ", discoverable" : "")")
                if adapter.advertising {
                    let instances = adapter.supportedInstances.map { "\($0) free" } ?? "free count unknown"
                    let extended = adapter.secondaryChannels.isEmpty ? "legacy advertising" : "extended advertising (\(adapter.secondaryChannels.joined(separator: ", ")))"
                    print("  LEAdvertisingManager1: yes, \(instances), \(adapter.activeInstances ?? 0) in use; \(extended)")
                } else {
                    print("  LEAdvertisingManager1: no")
                }
                print(adapter.monitor
                      ? "  AdvertisementMonitorManager1: yes (\(adapter.monitorTypes.joined(separator: ", "))): handoffd registers a monitor, every beacon is reported"
                      : "  AdvertisementMonitorManager1: no (bluetoothd without -E): discovery only, a beacon may be reported only every ~10 s; see Docs/HARDWARE.md")
                if adapter.discoverable {
                    print("  Note: while the adapter is discoverable the kernel may advertise from the public address (Docs/HARDWARE.md, privacy caveat).")
                }
            }
        } else if !json {
            print("bluetoothd: on the system bus (busctl is not here to list its adapters; checking with a test beacon only)")
        }

        // A test beacon and a scan, exactly as handoffd does them.
        final class Heard: Sendable {
            private let reports = Locked<[String: (rssi: Int, count: Int)]>([:])
            func add(address: String, rssi: Int) {
                reports.withLock { $0[address] = (rssi, ($0[address]?.count ?? 0) + 1) }
            }
            var all: [(address: String, rssi: Int, count: Int)] {
                reports.withLock { $0.map { ($0.key, $0.value.rssi, $0.value.count) } }.sorted { $0.address < $1.address }
            }
        }
        let heard = Heard()
        let presence = BlueZPresence(configuration: .init(adapter: chosen))
        do {
            try presence.start { observation in
                if case let .beacon(_, address, rssi) = observation { heard.add(address: address, rssi: rssi) }
            }
        } catch {
            fail(error.message, fix: error.fix)
        }
        presence.setBeacon(token: Random.bytes(Beacon.tokenBytes))
        Threads.sleep(seconds: seconds)
        let status = presence.currentStatus
        presence.stop()
        if !status.available {
            problems.append(("Advertising or scanning did not start: \(status.text).", "See Docs/HARDWARE.md; collect a btmon trace for a bug report."))
        }
        if json {
            print(JSONValue.object([
                "backend": "bluez", "adapter": adapterJSON, "available": .bool(status.available), "state": .string(status.text),
                "scanning": status.scanning.map { .string($0) } ?? .null,
                "beacons": .array(heard.all.map { ["address": .string($0.address), "rssi": .integer(Int64($0.rssi)), "reports": .integer(Int64($0.count))] }),
                "problems": .array(problems.map { ["problem": .string($0.problem), "fix": .string($0.fix)] }),
            ]).prettyPrinted())
        } else {
            print("Test beacon and scan for \(seconds) s: \(status.text)")
            let beacons = heard.all
            print(beacons.isEmpty
                  ? "Heard no other Handoff beacon (another laptop running handoffd nearby would show here)."
                  : "Heard \(beacons.count) Handoff beacon(s): " + beacons.map { "\($0.address) \($0.rssi) dBm (\($0.count) report(s))" }.joined(separator: ", "))
            for entry in problems {
                print("Problem: \(entry.problem)\n  Fix: \(entry.fix)")
            }
            if problems.isEmpty { print("OK: handoffd can use this adapter through bluetoothd, with no privilege.") }
        }
        exit(problems.isEmpty ? 0 : 1)
    }
}
