import HandoffCore

/// Every command's declaration: parsing and help both come from here.
enum Commands {
    static let json = CommandSpec.Option("json", help: "Print JSON (for scripts).")

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
        CommandSpec(name: "pair", abstract: "Pair with another host: both show the same six-digit code; confirm it on both.",
                    arguments: [.init("PEER", optional: true, help: "The host to pair with (name or device id, as it announces while its pairing is open). Leave out on the host that waits.")],
                    options: [
                        .init("address", value: "HOST[:PORT]", help: "Connect to this address instead of looking for the host's pairing announcement."),
                        .init("list", help: "Only list the devices that have pairing open now."),
                        .init("code", value: "CODE", help: "Confirm only if the code is this one (for scripts: read it on the other screen)."),
                        .init("yes", help: "Confirm without asking (for scripts and tests)."),
                        .init("timeout", value: "SECONDS", help: "How long the waiting host keeps pairing open (default 120)."),
                        json,
                    ],
                    discussion: """
                    Run 'handoff-peer pair' on one host (it waits), then 'handoff-peer pair NAME' on the other.
                    Both print the same code; confirm on both. Only then does each trust the other.
                    """),
        CommandSpec(name: "devices", abstract: "List paired devices.", options: [json]),
        CommandSpec(name: "untrust", abstract: "Unpair a device, at once: it can no longer see or fetch this host's activities.",
                    arguments: [.init("DEVICE", help: "Device id or public key.")]),
        CommandSpec(name: "id", abstract: "Print this device's id (for people to compare) and public key.",
                    options: [.init("key", help: "Print only the public key."), json]),
        CommandSpec(name: "doctor", abstract: "Check the six conditions (trust, bluetooth, network, enabled, proximity, app) here and, given a peer, with it.",
                    arguments: [.init("PEER", optional: true, help: "A paired device (name or device id) to check the conditions with.")],
                    options: [json],
                    discussion: "Exits 0 when no condition fails (warnings allowed), 1 otherwise. Docs/CONDITIONS.md explains each condition."),
        CommandSpec(name: "enable", abstract: "Switch Handoff on (it stays on across restarts)."),
        CommandSpec(name: "disable", abstract: "Switch Handoff off: this host offers and accepts nothing, and its peers are told why."),
        CommandSpec(name: "apps", abstract: "List the apps that continue activities here and the types each declares.", options: [json]),
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
