import Foundation
import HandoffCore
import HandoffKit

/// Runs one command against the daemon and prints the outcome for people or, with --json, for scripts.
struct Runner {
    let client: HandoffClient
    let arguments: ParsedArguments
    var wantsJSON: Bool { arguments.flag("json") }

    init(socketPath: String?, arguments: ParsedArguments) throws(HandoffError) {
        client = try HandoffClient(socketPath: socketPath)
        self.arguments = arguments
    }

    func run(_ command: String) throws(HandoffError) -> Int32 {
        switch command {
        case "list": try list()
        case "accept": return try accept()
        case "decline":
            let result = try client.request("decline", ["peer": .string(arguments.positionals[0])])
            print("Declined the current offer of \(result["declined"]?.stringValue ?? "the peer").")
        case "publish": try publish()
        case "resign":
            let result = try client.request("resign")
            print(result["resigned"] == .bool(true) ? "Resigned: no longer offered." : "Nothing was being offered.")
        case "invalidate":
            let result = try client.request("invalidate")
            print(result["invalidated"] == .bool(true) ? "Invalidated." : "Nothing to invalidate.")
        case "status": try status()
        case "pair": return try pair()
        case "devices": try devices()
        case "untrust":
            let result = try client.request("untrust", ["peer": .string(arguments.positionals[0])])
            print("No longer trusted: \(result["untrusted"]?.stringValue ?? "?").")
        case "id": try identity()
        case "watch": return try watch()
        case "doctor": return try doctor()
        case "enable", "disable":
            _ = try client.request(command)
            print(command == "enable" ? "Handoff is on." : "Handoff is off: this host offers and accepts nothing until 'handoff-peer enable'.")
        case "apps": try apps()
        default: break
        }
        return 0
    }

    // MARK: - Commands

    private func list() throws(HandoffError) {
        let peers = try client.list()
        if wantsJSON {
            print(JSONValue.array(peers).prettyPrinted())
            return
        }
        guard !peers.isEmpty else {
            print("No peers in range. Peers appear here when they run handoffd on this network and trust each other.")
            return
        }
        var rows = [["PEER", "NAME", "TYPE", "TITLE", "AGE", "CONTINUES IN"]]
        for peer in peers {
            let offer = peer["offer"] ?? .null
            rows.append([
                peer["peer"]?.stringValue ?? "?", safe(peer["name"]?.stringValue ?? ""),
                offer == .null ? "-" : safe(offer["type"]?.stringValue ?? ""),
                offer == .null ? "(nothing offered)" : safe(offer["title"]?.stringValue ?? ""),
                offer == .null ? "-" : age(millis: offer["ageMillis"]?.integerValue ?? 0),
                offer == .null ? "-" : continuesIn(offer["deliverTo"]?.stringValue),
            ])
        }
        printTable(rows)
    }

    /// Where accepting an offer continues it, for `list`.
    private func continuesIn(_ target: String?) -> String {
        switch target {
        case nil, "terminal": "- (printed)"
        case let app?: safe(app)
        }
    }

    private func accept() throws(HandoffError) -> Int32 {
        let reference = arguments.positionals[0]
        let result: JSONValue
        do {
            result = try client.request("accept", ["peer": .string(reference), "requireApp": .bool(arguments.flag("app"))])
        } catch where error.code != .daemonUnavailable {
            if wantsJSON {
                print(JSONValue.object(["continued": false, "error": error.json]).prettyPrinted())
            }
            printError("Failed (\(error.code.rawValue)): \(error.message)\nFix: \(error.fix)")
            return ExitCode.failure
        }
        let activity = result["activity"] ?? .null
        // The terminal is the app of last resort: say so once, on stderr, so stdout keeps its format.
        if result["deliverTo"]?.stringValue == "terminal" {
            printError("No app here declares \(activity["type"]?.stringValue ?? "its type"): printed here (use --app to require one).")
        }
        if wantsJSON {
            print(activity.prettyPrinted())
            return 0
        }
        print("Continued from \(safe(result["name"]?.stringValue ?? "")) (\(result["peer"]?.stringValue ?? "")):")
        print("  type:      \(activity["type"]?.stringValue ?? "")")
        print("  title:     \(safe(activity["title"]?.stringValue ?? ""))")
        if let id = activity["targetContentIdentifier"]?.stringValue { print("  content:   \(safe(id))") }
        if let url = activity["webpageURL"]?.stringValue { print("  url:       \(safe(url))") }
        print("  userInfo:  " + (activity["userInfo"] ?? [:]).prettyPrinted().replacingOccurrences(of: "\n", with: "\n             "))
        return 0
    }

    private func publish() throws(HandoffError) {
        let type = arguments.value("type") ?? ""
        var fields: [String: JSONValue] = ["type": .string(type), "title": .string(arguments.value("title") ?? "")]
        if let text = arguments.value("user-info") {
            fields["userInfo"] = try parseUserInfo(text, source: "--user-info")
        } else if let path = arguments.value("user-info-file") {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw HandoffError(.invalidActivity, "Cannot read \(path).", fix: "Check the path given to --user-info-file.")
            }
            fields["userInfo"] = try parseUserInfo(String(decoding: data, as: UTF8.self), source: path)
        }
        if let url = arguments.value("url") { fields["webpageURL"] = .string(url) }
        if let id = arguments.value("content-id") { fields["targetContentIdentifier"] = .string(id) }
        if let seconds = arguments.value("expires").flatMap(Double.init) {
            fields["expiresAtMillis"] = .integer(Int64(Date().timeIntervalSince1970 * 1000 + seconds * 1000))
        }
        let activity = try Activity(json: .object(fields))
        let receipt = try client.publish(activity)
        for warning in receipt["warnings"]?.arrayValue ?? [] {
            printError("Warning: \(warning.stringValue ?? "")")
        }
        if wantsJSON {
            print(receipt.prettyPrinted())
        } else {
            print("Offered \(type) (sequence \(receipt["sequence"]?.integerValue ?? 0), \(receipt["payloadBytes"]?.integerValue ?? 0) bytes) to paired devices.")
        }
    }

    private func parseUserInfo(_ text: String, source: String) throws(HandoffError) -> JSONValue {
        // JSON has no infinity; a number too large for a double would otherwise fail the whole text without saying where.
        if let path = JSONNumbers.firstNonFinite(in: text, root: "userInfo") {
            throw HandoffError(.invalidActivity, "\(path) in \(source) is a number too large for a double (it would be infinite).",
                               fix: "Use a finite number (at most about 1.8e308), or a string.")
        }
        do {
            return try JSONValue.parse(text)
        } catch {
            throw HandoffError(.invalidActivity, "\(source) is not valid JSON.", fix: "Give a JSON object, e.g. '{\"page\": 3}'.")
        }
    }

    private func status() throws(HandoffError) {
        let status = try client.request("status")
        if wantsJSON {
            print(status.prettyPrinted())
            return
        }
        print("Device:     \(safe(status["name"]?.stringValue ?? "")) (\(status["deviceId"]?.stringValue ?? ""))")
        print("Handoff:    \(status["enabled"] == .bool(false) ? "off ('handoff-peer enable' turns it on)" : "on")")
        print("Transfer:   port \(status["transferPort"]?.integerValue ?? 0)/tcp")
        for path in status["discovery"]?.arrayValue ?? [] {
            print("Discovery:  \(path["path"]?.stringValue ?? ""): \(path["state"]?.stringValue ?? "")")
        }
        print("Bluetooth:  \(safe(status["bluetooth"]?["state"]?.stringValue ?? "?"))")
        print("Paired:     \(status["trustedDevices"]?.integerValue ?? 0) device(s); \(status["peers"]?.integerValue ?? 0) in range")
        if let current = status["current"], current != .null, status["offering"] == .bool(true) {
            print("Offering:   \(current["type"]?.stringValue ?? "") (sequence \(current["sequence"]?.integerValue ?? 0))")
        } else if let current = status["current"], current != .null {
            print("Offering:   nothing: Handoff is off (\(current["type"]?.stringValue ?? "") is kept and offered again once enabled)")
        } else {
            print("Offering:   nothing")
        }
        let drops = status["drops"]?.objectValue ?? [:]
        let counts = drops.keys.sorted().map { "\($0) \(drops[$0]?.integerValue ?? 0)" }.joined(separator: ", ")
        print("Dropped:    \(counts)")
        if let transfers = status["transfers"] {
            print("Transfers:  served \(transfers["served"]?.integerValue ?? 0), refused \(transfers["refused"]?.integerValue ?? 0)")
        }
    }

    private func pair() throws(HandoffError) -> Int32 {
        if arguments.flag("list") {
            let devices = try client.request("pairable")["devices"]?.arrayValue ?? []
            if wantsJSON {
                print(JSONValue.array(devices).prettyPrinted())
            } else if devices.isEmpty {
                print("No device has pairing open. Run 'handoff-peer pair' on the other host.")
            } else {
                printTable([["PEER", "NAME", "ADDRESS"]] + devices.map {
                    [$0["peer"]?.stringValue ?? "?", safe($0["name"]?.stringValue ?? ""), $0["host"]?.stringValue ?? ""]
                })
            }
            return 0
        }
        // Range checked by Commands.validate.
        let timeout = arguments.value("timeout").flatMap { Int64($0) } ?? 120
        let offer: JSONValue
        if let peer = arguments.positionals.first ?? arguments.value("address").map({ _ in "" }) {
            var parameters: [String: JSONValue] = [:]
            if !peer.isEmpty { parameters["peer"] = .string(peer) }
            if let address = arguments.value("address") { parameters["address"] = .string(address) }
            offer = try client.request("pair", parameters)
        } else {
            if !wantsJSON { print("Pairing is open for \(timeout) s. On the other host run: handoff-peer pair \(try ownName())") }
            fflush(nil)
            offer = try client.request("pairListen", ["timeoutSeconds": .integer(timeout)])
        }
        let code = offer["code"]?.stringValue ?? ""
        let name = safe(offer["name"]?.stringValue ?? "")
        let shown = String(code.prefix(3)) + " " + String(code.dropFirst(3))
        if !wantsJSON {
            print("Pairing with \(name) (\(offer["peer"]?.stringValue ?? "")).")
            print("Both screens must show the same code:  \(shown)")
        }
        let accept: Bool
        if arguments.flag("yes") {
            accept = true
        } else if let expected = arguments.value("code") {
            accept = expected.filter(\.isNumber) == code
            if !accept { printError("The code is \(shown), not \(expected): declining.") }
        } else {
            print("Do both screens show \(shown)? [y/N] ", terminator: "")
            fflush(nil)
            accept = ["y", "yes"].contains((readLine() ?? "").trimmingCharacters(in: .whitespaces).lowercased())
        }
        let result: JSONValue
        do {
            result = try client.request("pairConfirm", ["session": offer["session"] ?? .null, "accept": .bool(accept)])
        } catch where error.code != .daemonUnavailable {
            if wantsJSON {
                print(JSONValue.object(["paired": false, "code": .string(code), "error": error.json]).prettyPrinted())
            }
            printError("Not paired (\(error.code.rawValue)): \(error.message)\nFix: \(error.fix)")
            return ExitCode.failure
        }
        if wantsJSON {
            print(JSONValue.object(["paired": true, "code": .string(code), "peer": result["peer"] ?? .null,
                                    "name": result["name"] ?? .null]).prettyPrinted())
        } else {
            print("Paired with \(name) (\(result["peer"]?.stringValue ?? "")).")
        }
        return 0
    }

    private func doctor() throws(HandoffError) -> Int32 {
        var parameters: [String: JSONValue] = [:]
        if let peer = arguments.positionals.first { parameters["peer"] = .string(peer) }
        let report = try client.request("doctor", parameters)
        let ok = report["ok"] == .bool(true)
        if wantsJSON {
            print(report.prettyPrinted())
            return ok ? 0 : ExitCode.failure
        }
        let subject = report["peer"]?.stringValue.map { "\(safe(report["host"]?.stringValue ?? "")) and \(safe($0))" }
            ?? safe(report["host"]?.stringValue ?? "this host")
        print("Handoff conditions for \(subject):")
        var fixes: [String] = []
        for condition in report["conditions"]?.arrayValue ?? [] {
            let code = condition["code"]?.stringValue ?? "?"
            let status = condition["status"]?.stringValue ?? "?"
            print("  \(code.padding(toLength: 10, withPad: " ", startingAt: 0))\(status.padding(toLength: 5, withPad: " ", startingAt: 0))  \(safe(condition["evidence"]?.stringValue ?? ""))")
            if status == "fail" || status == "warn", let fix = condition["fix"]?.stringValue, !fix.isEmpty {
                fixes.append("  \(code): \(fix)")
            }
        }
        if let verdict = report["verdict"], verdict != .null {
            let code = verdict["code"]?.stringValue ?? "?"
            let condition = ConditionDecision.transportCodes.map(\.rawValue).contains(code)
            if !condition {
                // Not a transport condition (an offer declined or withdrawn): all six hold, and this is why nothing continues.
                print("\nBut (\(code)): \(safe(verdict["message"]?.stringValue ?? ""))")
                fixes.append("  \(code): \(verdict["fix"]?.stringValue ?? "")")
            }
        }
        if !fixes.isEmpty { print("\nFix:\n" + fixes.joined(separator: "\n")) }
        return ok ? 0 : ExitCode.failure
    }

    private func apps() throws(HandoffError) {
        let apps = try client.request("declarations")["apps"]?.arrayValue ?? []
        if wantsJSON {
            print(JSONValue.array(apps).prettyPrinted())
            return
        }
        guard !apps.isEmpty else {
            print("No app declares an activity type. Apps declare them with X-Handoff-ActivityTypes in their .desktop file (Docs/APPS.md).")
            return
        }
        printTable([["APP", "RUNNING", "TYPES"]] + apps.map {
            [safe($0["app"]?.stringValue ?? ""), $0["running"] == .bool(true) ? "yes" : "no",
             ($0["types"]?.arrayValue ?? []).compactMap(\.stringValue).joined(separator: " ")]
        })
    }

    private func ownName() throws(HandoffError) -> String {
        try client.request("id")["name"]?.stringValue ?? "this-host"
    }

    private func devices() throws(HandoffError) {
        let devices = try client.request("devices")["devices"]?.arrayValue ?? []
        if wantsJSON {
            print(JSONValue.array(devices).prettyPrinted())
            return
        }
        guard !devices.isEmpty else {
            print("No paired devices. Pair with 'handoff-peer pair' (see 'handoff-peer pair --help').")
            return
        }
        var rows = [["PEER", "NAME", "IN RANGE", "PAIRED"]]
        for device in devices {
            let paired = Date(timeIntervalSince1970: Double(device["pairedAtMillis"]?.integerValue ?? 0) / 1000)
            let again = device["needsPairingAgain"] == .bool(true)
            rows.append([device["peer"]?.stringValue ?? "?", safe(device["name"]?.stringValue ?? ""),
                         device["inRange"] == .bool(true) ? "yes" : "no",
                         paired.formatted(date: .abbreviated, time: .shortened) + (again ? " (pair again)" : "")])
        }
        printTable(rows)
        if devices.contains(where: { $0["needsPairingAgain"] == .bool(true) }) {
            print("Devices marked (pair again) were paired with an older handoff: run 'handoff-peer pair' with each once more.")
        }
    }

    private func identity() throws(HandoffError) {
        let result = try client.request("id")
        if arguments.flag("key") {
            print(result["publicKey"]?.stringValue ?? "")
        } else if wantsJSON {
            print(result.prettyPrinted())
        } else {
            print("Device id:  \(result["deviceId"]?.stringValue ?? "")")
            print("Name:       \(safe(result["name"]?.stringValue ?? ""))")
            print("Public key: \(result["publicKey"]?.stringValue ?? "")")
        }
    }

    /// Ends only when handoffd goes away, which it says, exiting 69 like any command that cannot reach handoffd.
    private func watch() throws(HandoffError) -> Int32 {
        try client.subscribe()
        while true {
            let next: JSONValue?
            do {
                next = try client.nextEvent()
            } catch {
                next = nil
            }
            guard let event = next else {
                printError("handoffd went away (it stopped, or its socket closed): no more events.\nFix: Start handoffd again ('systemctl --user start handoffd'), then run 'handoff-peer watch' again.")
                return ExitCode.unavailable
            }
            if wantsJSON {
                print(event.encodedLine())
            } else {
                let name = event["event"]?.stringValue ?? "?"
                let peer = event["peer"]?.stringValue ?? ""
                let type = safe(event["type"]?.stringValue ?? event["offer"]?["type"]?.stringValue ?? "")
                print([Date().formatted(.iso8601.time(includingFractionalSeconds: false)), name, peer, type].filter { !$0.isEmpty }.joined(separator: "  "))
            }
            fflush(nil)
        }
    }

    // MARK: - Formatting

    /// Strips control characters a peer could use to rewrite the terminal.
    private func safe(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.filter { !Activity.containsUnsafeCharacters(String($0)) }))
    }

    private func age(millis: Int64) -> String {
        let seconds = max(0, millis / 1000)
        if seconds < 60 { return "\(seconds)s" }
        if seconds < 3600 { return "\(seconds / 60)m" }
        return "\(seconds / 3600)h"
    }

    private func printTable(_ rows: [[String]]) {
        let widths = (0..<rows[0].count).map { column in min(48, rows.map { $0[column].count }.max() ?? 0) }
        for row in rows {
            let cells = row.enumerated().map { index, cell in
                let clipped = cell.count > widths[index] ? String(cell.prefix(widths[index] - 1)) + "…" : cell
                return index == row.count - 1 ? clipped : clipped.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }
            print(cells.joined(separator: "  "))
        }
    }
}

