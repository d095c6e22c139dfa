import HandoffCore

/// Every command's declaration: parsing and help both come from here.
enum Commands {
    static let json = CommandSpec.Option("json", help: "Print JSON instead of a table.")

    static let all: [CommandSpec] = [
        CommandSpec(name: "list", abstract: "List peers in range and the activity each offers.", options: [json]),
        CommandSpec(name: "accept", abstract: "Continue a peer's activity here: fetch it, verify it and print it.",
                    arguments: [.init("PEER", help: "Device id (or a unique prefix of 4+ characters) or device name, from 'list'.")],
                    options: [json],
                    discussion: "Exits 0 when the activity was continued, 1 when it failed (the reason and its fix are printed)."),
        CommandSpec(name: "decline", abstract: "Hide a peer's current offer until it offers something newer.",
                    arguments: [.init("PEER", help: "Device id, unique prefix or name.")]),
        CommandSpec(name: "publish", abstract: "Offer an activity to trusted peers (it becomes this host's current activity).",
                    options: [
                        .init("type", value: "TYPE", help: "Reverse-DNS activity type, e.g. org.example.reader.document (required)."),
                        .init("title", value: "TEXT", help: "Title peers show (up to 256 bytes)."),
                        .init("user-info", value: "JSON", help: "userInfo as a JSON object; data as {\"$data\":\"<base64>\"}, dates as {\"$date\":\"<ISO 8601>\"}."),
                        .init("user-info-file", value: "PATH", help: "Read the userInfo JSON from a file instead."),
                        .init("url", value: "URL", help: "webpageURL (http or https)."),
                        .init("content-id", value: "ID", help: "targetContentIdentifier, e.g. document:3F2A."),
                        .init("expires", value: "SECONDS", help: "Stop offering it after this many seconds."),
                        json,
                    ],
                    discussion: "Warns on stderr when userInfo is above Apple's 3 KB guidance; refuses it above the hard limit (64 MiB)."),
        CommandSpec(name: "resign", abstract: "Stop offering the current activity for now."),
        CommandSpec(name: "invalidate", abstract: "End the current activity; it cannot be made current again."),
        CommandSpec(name: "status", abstract: "Show this daemon's identity, discovery, peers and dropped-message counters.", options: [json]),
        CommandSpec(name: "trust", abstract: "Trust a device: its summaries are listed and it may fetch this host's activities.",
                    arguments: [.init("DEVICE", help: "The device's public key (64 hex characters, from 'handoff-peer id --key' there) or its device id if it is announcing on this network.")],
                    options: [.init("name", value: "NAME", help: "A name to remember it by.")]),
        CommandSpec(name: "untrust", abstract: "Stop trusting a device, at once.",
                    arguments: [.init("DEVICE", help: "Device id or public key.")]),
        CommandSpec(name: "id", abstract: "Print this device's id (for people to compare) and public key.",
                    options: [.init("key", help: "Print only the public key (what 'trust' on another host takes)."), json]),
        CommandSpec(name: "watch", abstract: "Stream events: peers appearing and leaving, offers, willContinue, continued, failed.",
                    options: [json]),
    ]

    static let global = CommandSpec(
        name: "handoff-peer",
        abstract: "handoff-peer: continue on this Linux host what you were doing on another one.",
        options: [.init("socket", value: "PATH", help: "handoffd's local API socket (default $HANDOFF_SOCKET, then $XDG_RUNTIME_DIR/handoff/handoffd.sock).")])

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
