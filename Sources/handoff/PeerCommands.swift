import Glibc
import HandoffCommandLine
import HandoffCore

/// Every command's declaration: parsing and help both come from here.
enum Commands {
    static let json = CommandSpec.Option("json", help: "Print JSON (for scripts).")
    static let publisher = CommandSpec.Option("publisher", value: "NAME",
                                              help: "Whose activity: publish offers as handoff-peer unless named; each publisher holds one (Docs/LOCAL-API.md, 'Which activity is current').")

    static let all: [CommandSpec] = [
        CommandSpec(name: "list", abstract: "List peers in range, the activity each offers, and where accepting it continues it.", options: [json],
                    discussion: "CONTINUES IN is the app that would continue the offer, 'browser' for a web page no app here declares, or '- (printed)' when no app here can continue it ('accept' prints it)."),
        CommandSpec(name: "accept", abstract: "Continue a peer's activity here: in the app that declares its type, else its web page, else printed here.",
                    arguments: [.init("PEER", help: "Device id (or a unique prefix of 4+ characters) or device name, from 'list'.")],
                    options: [.init("app", help: "Continue it only in an app: fail with 'app' (fetching nothing) if no app here declares its type."), json],
                    discussion: """
                    The activity goes to the app here that declares its type (started if it is not running); with no such
                    app, its web page opens in the browser; with neither, this terminal is the app: the activity is printed
                    (as always, and with --json) and one line on stderr says that no app here declares the type.
                    Exits 0 when the activity was continued, 1 when it failed (the reason and its fix are printed).
                    """),
        CommandSpec(name: "decline", abstract: "Hide a peer's current offer until it offers something newer.",
                    arguments: [.init("PEER", help: "Device id, unique prefix or name.")]),
        CommandSpec(name: "publish", abstract: "Offer an activity to trusted peers (it becomes this host's current activity). Refused with 'enabled' while Handoff is off.",
                    options: [
                        .init("type", value: "TYPE", help: "Reverse-DNS activity type, e.g. org.example.reader.document (required)."),
                        .init("title", value: "TEXT", help: "Title peers show (up to 256 bytes)."),
                        .init("user-info", value: "JSON", help: "userInfo as a JSON object; data as {\"$data\":\"<base64>\"}, dates as {\"$date\":\"<ISO 8601>\"}."),
                        .init("user-info-file", value: "PATH", help: "Read the userInfo JSON from a file instead."),
                        .init("url", value: "URL", help: "webpageURL (http or https)."),
                        .init("content-id", value: "ID", help: "targetContentIdentifier, e.g. document:3F2A."),
                        .init("expires", value: "SECONDS", help: "Stop offering it after this many seconds."),
                        publisher,
                        json,
                    ],
                    discussion: "Warns on stderr when userInfo is above Apple's 3 KB guidance; refuses it above the hard limit (64 MiB)."),
        CommandSpec(name: "resign", abstract: "Stop offering what this host offers, for now; with --publisher, only that publisher's activity (the one offered before it comes back).",
                    options: [publisher]),
        CommandSpec(name: "invalidate", abstract: "End what this host offers; with --publisher, only that publisher's activity.", options: [publisher]),
        CommandSpec(name: "status", abstract: "Show this daemon's identity, discovery, peers and dropped-message counters.", options: [json]),
        CommandSpec(name: "pair", abstract: "Pair with another host: both show the same six-digit code; confirm it on both.",
                    arguments: [.init("PEER", optional: true, help: "The host to pair with (name or device id, as it announces while its pairing is open). Leave out on the host that waits.")],
                    options: [
                        .init("address", value: "HOST[:PORT]", help: "Connect to this address instead of looking for the host's pairing announcement."),
                        .init("list", help: "Only list the devices that have pairing open now."),
                        .init("open", help: "Open pairing while this runs, without a dialog in the terminal: devices that opened pairing too, and each device that asks, are shown by the notification agent (handoff-notify), with the code and Pair / Reject. Returns when a device paired, the time is up, or on Ctrl-C."),
                        .init("code", value: "CODE", help: "Confirm only if the code is this one (for scripts: read it on the other screen); the waiting host declines any other device and waits for the next."),
                        .init("yes", help: "Confirm the first device without asking (for scripts and tests)."),
                        .init("timeout", value: "SECONDS", help: "How long the waiting host keeps pairing open (default 120)."),
                        json,
                    ],
                    discussion: """
                    Run 'handoff-peer pair' on one host (it waits), then 'handoff-peer pair NAME' on the other.
                    Both print the same code; confirm on both. Only then does each trust the other.
                    Pairing is open only while the command that opened it runs, and closes when a device paired
                    or after 3 devices were declined or showed another code. Where handoff-notify runs and
                    pairing is open on both hosts, each notification offers to pair with the other, and each
                    code is also shown (and can be confirmed) in a notification.
                    """),
        CommandSpec(name: "devices", abstract: "List paired devices.", options: [json]),
        CommandSpec(name: "untrust", abstract: "Unpair a device, at once: it can no longer see or fetch this host's activities.",
                    arguments: [.init("PEER", help: "Device name, device id (or a unique prefix of 4+ characters) or public key, from 'devices'.")]),
        CommandSpec(name: "id", abstract: "Print this device's id (for people to compare) and public key.",
                    options: [.init("key", help: "Print only the public key."), json]),
        CommandSpec(name: "doctor", abstract: "Check the six conditions (trust, bluetooth, network, enabled, proximity, app) here and, given a peer, with it.",
                    arguments: [.init("PEER", optional: true, help: "A paired device (name or device id) to check the conditions with.")],
                    options: [json],
                    discussion: """
                    Names at most one cause (the verdict): the condition it belongs to fails (or warns), the others pass.
                    Exits 0 when no condition fails (warnings allowed), 1 otherwise. Docs/CONDITIONS.md explains each cause.
                    """),
        CommandSpec(name: "enable", abstract: "Switch Handoff on (it stays on across restarts)."),
        CommandSpec(name: "disable", abstract: "Switch Handoff off: this host offers and accepts nothing, and its peers are told why."),
        CommandSpec(name: "apps", abstract: "List the apps that continue activities here and the types each declares.", options: [json]),
        CommandSpec(name: "watch", abstract: "Stream events: peers appearing and leaving, offers, willContinue, continued, failed.",
                    options: [json],
                    discussion: "Runs until interrupted; when handoffd stops it says so on stderr and exits 69."),
    ]

    static let global = CommandSpec(
        name: "handoff-peer",
        abstract: "handoff-peer: continue on this Linux host what you were doing on another one.",
        options: [.init("socket", value: "PATH", help: "handoffd's local API socket (default $HANDOFF_SOCKET, then $XDG_RUNTIME_DIR/handoff/handoffd.sock, then /run/handoff/handoffd.sock for root, else /tmp/handoff-UID/handoffd.sock)."),
                  CommandSpec.versionOption])

    static var overview: String {
        var text = "\(global.abstract)\n\nUsage: handoff-peer [--socket PATH] COMMAND [options]\n\nCommands:\n"
        for command in all { text += CommandSpec.row(command.name, command.abstract) }
        text += "\nOptions:\n"
        for option in global.options { text += CommandSpec.row("--\(option.name)" + (option.valueName.map { " \($0)" } ?? ""), option.help) }
        text += """

        See 'handoff-peer COMMAND --help' for a command's options.
        Exit status: 0 success, 1 the operation failed (the message says why and how to fix it),
        64 misuse of the command line, 69 handoffd is not reachable.

        """
        return text
    }
}

extension Commands {
    /// Option values checked before anything is sent: a value out of range is misuse (exit 64), as an unknown option is.
    static func validate(_ command: String, _ arguments: ParsedArguments) throws(UsageError) {
        switch command {
        case "publish":
            guard arguments.value("type") != nil else { throw .missingValue(option: "--type", valueName: "TYPE") }
            if let text = arguments.value("expires") {
                guard let seconds = Double(text), seconds > 0, seconds.isFinite, seconds <= 10 * 365 * 86400 else {
                    throw .invalidValue(option: "--expires", reason: "'\(text)' is not a positive number of seconds (at most ten years), e.g. --expires 600.")
                }
            }
        case "pair":
            if let text = arguments.value("timeout") {
                guard let seconds = Int(text), (1...3600).contains(seconds) else {
                    throw .invalidValue(option: "--timeout", reason: "'\(text)' is not a number of seconds from 1 to 3600.")
                }
            }
            if let text = arguments.value("address"), !isNumericAddress(text) {
                throw .invalidValue(option: "--address", reason: "'\(text)' is not an address: give HOST or HOST:PORT with a numeric host, e.g. 169.254.10.2, 169.254.10.2:47181 or [fe80::1%eth0]:47181.")
            }
        default:
            break
        }
    }

    /// IPv4 or IPv6 (with an optional %zone), optionally with a port 1-65535: "[v6]:port", "v4:port"; a bare v6 has no port.
    static func isNumericAddress(_ text: String) -> Bool {
        var host = Substring(text)
        var port: Substring?
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return false }
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { return false }
                port = rest.dropFirst()
            }
            guard host.contains(":") else { return false }
        } else if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") {
            host = text[..<colon]
            port = text[text.index(after: colon)...]
        }
        if let port {
            guard !port.isEmpty, port.allSatisfy({ $0.isASCII && $0.isNumber }), let number = UInt16(port), number > 0 else { return false }
        }
        let address = String(host.split(separator: "%", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
        var buffer = [UInt8](repeating: 0, count: 16)
        return inet_pton(AF_INET, address, &buffer) == 1 || inet_pton(AF_INET6, address, &buffer) == 1
    }
}
