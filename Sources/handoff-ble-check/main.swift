import Foundation
import HandoffBluetooth
import HandoffCore
import HandoffCrypto

let spec = CommandSpec(
    name: "handoff-ble-check",
    abstract: "handoff-ble-check: check a Bluetooth controller for Handoff: advertise a test beacon and scan for a few seconds.",
    options: [
        .init("hci", value: "DEVICE", help: "hci0 (default) or unix:PATH."),
        .init("seconds", value: "N", help: "How long to advertise and scan (default 5)."),
        .init("json", help: "Print JSON."),
    ],
    discussion: """
    Needs CAP_NET_RAW and CAP_NET_ADMIN for a kernel device (run as root). It never resets the
    controller and switches advertising and scanning off again when it is done.
    Exit status: 0 when the controller took every command, 1 otherwise, 64 on misuse.
    """)

let arguments: ParsedArguments
do {
    arguments = try spec.parse(Array(CommandLine.arguments.dropFirst()))
} catch {
    FileHandle.standardError.write(Data("Error: \(error)\nUsage: \(spec.usage)\nSee 'handoff-ble-check --help'.\n".utf8))
    exit(UsageError.exitCode)
}
if arguments.wantsHelp {
    print(spec.help, terminator: "")
    exit(0)
}
let device = arguments.value("hci") ?? "hci0"
guard let seconds = Double(arguments.value("seconds") ?? "5"), seconds > 0, seconds <= 120 else {
    FileHandle.standardError.write(Data("Error: --seconds must be a number from 0 to 120.\n".utf8))
    exit(UsageError.exitCode)
}
do {
    let result = try BluetoothProbe.run(device: device, seconds: seconds, token: Random.bytes(Beacon.tokenBytes))
    if arguments.flag("json") {
        let heard: [JSONValue] = result.heard.map {
            ["address": .string($0.address), "rssi": .integer(Int64($0.rssi)), "reports": .integer(Int64($0.reports)),
             "handoffBeacon": .bool($0.handoffBeacon), "extended": .bool($0.extended)]
        }
        print(JSONValue.object(["device": .string(result.device), "advertisedAddress": .string(result.advertisedAddress),
                                "heard": .array(heard)]).prettyPrinted())
    } else {
        print("Controller \(result.device): took every command.")
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
} catch {
    FileHandle.standardError.write(Data("Error: \(error.message)\nFix: \(error.fix)\n".utf8))
    exit(1)
}
