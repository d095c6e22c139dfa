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
        case "trust": try trust()
        case "untrust":
            let result = try client.request("untrust", ["peer": .string(arguments.positionals[0])])
            print("No longer trusted: \(result["untrusted"]?.stringValue ?? "?").")
        case "id": try identity()
        case "watch": try watch()
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
        var rows = [["PEER", "NAME", "TYPE", "TITLE", "AGE"]]
        for peer in peers {
            let offer = peer["offer"] ?? .null
            rows.append([
                peer["peer"]?.stringValue ?? "?", safe(peer["name"]?.stringValue ?? ""),
                offer == .null ? "-" : safe(offer["type"]?.stringValue ?? ""),
                offer == .null ? "(nothing offered)" : safe(offer["title"]?.stringValue ?? ""),
                offer == .null ? "-" : age(millis: offer["ageMillis"]?.integerValue ?? 0),
            ])
        }
        printTable(rows)
    }

    private func accept() throws(HandoffError) -> Int32 {
        let reference = arguments.positionals[0]
        let result: JSONValue
        do {
            result = try client.request("accept", ["peer": .string(reference)])
        } catch where error.code != .daemonUnavailable {
            if wantsJSON {
                print(JSONValue.object(["continued": false, "error": ["code": .string(error.code.rawValue),
                    "message": .string(error.message), "fix": .string(error.fix)]]).prettyPrinted())
            }
            printError("Failed (\(error.code.rawValue)): \(error.message)\nFix: \(error.fix)")
            return ExitCode.failure
        }
        let activity = result["activity"] ?? .null
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
        guard let type = arguments.value("type") else {
            throw HandoffError(.invalidActivity, "publish needs --type.", fix: "Add --type org.example.app.activity.")
        }
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
        if let text = arguments.value("expires") {
            guard let seconds = Double(text), seconds > 0, seconds.isFinite else {
                throw HandoffError(.invalidActivity, "--expires must be a positive number of seconds, not '\(text)'.", fix: "For example --expires 600.")
            }
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
            print("Offered \(type) (sequence \(receipt["sequence"]?.integerValue ?? 0), \(receipt["payloadBytes"]?.integerValue ?? 0) bytes) to trusted peers.")
        }
    }

    private func parseUserInfo(_ text: String, source: String) throws(HandoffError) -> JSONValue {
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
        print("Transfer:   port \(status["transferPort"]?.integerValue ?? 0)/tcp")
        for path in status["discovery"]?.arrayValue ?? [] {
            print("Discovery:  \(path["path"]?.stringValue ?? ""): \(path["state"]?.stringValue ?? "")")
        }
        print("Trusted:    \(status["trustedDevices"]?.integerValue ?? 0) device(s); \(status["peers"]?.integerValue ?? 0) in range")
        if let current = status["current"], current != .null {
            print("Offering:   \(current["type"]?.stringValue ?? "") (sequence \(current["sequence"]?.integerValue ?? 0))")
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

    private func trust() throws(HandoffError) {
        let device = arguments.positionals[0]
        var parameters: [String: JSONValue] = DeviceKey(hex: device) != nil ? ["key": .string(device)] : ["deviceId": .string(device)]
        if let name = arguments.value("name") { parameters["name"] = .string(name) }
        let result = try client.request("trust", parameters)
        print("Trusted \(result["deviceId"]?.stringValue ?? device).")
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

    private func watch() throws(HandoffError) {
        try client.subscribe()
        while let event = try client.nextEvent() {
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
        String(String.UnicodeScalarView(text.unicodeScalars.filter { $0.properties.generalCategory != .control }))
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
