import FoundationEssentials
import Glibc
import HandoffCore

/// The agent's one setting, in `$XDG_CONFIG_HOME/handoff/notify.conf`
/// (default `~/.config/handoff/notify.conf`): `notifications = off` switches
/// the notifications off. Lines are `key = value`; `#` starts a comment. A file
/// that says something else is reported, never guessed at.
public enum NotifySettings {
    public static func path(environment: [String: String]) -> String {
        if let config = environment["XDG_CONFIG_HOME"], config.hasPrefix("/") { return config + "/handoff/notify.conf" }
        return (environment["HOME"] ?? "") + "/.config/handoff/notify.conf"
    }

    /// Whether notifications are on, from the file's text.
    public static func notificationsEnabled(in text: String, path: String) throws(HandoffError) -> Bool {
        var enabled = true
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            guard !line.allSatisfy(\.isWhitespace) else { continue }
            let parts = line.split(separator: "=", maxSplits: 1).map { $0.trimmingSpaces() }
            guard parts.count == 2, parts[0] == "notifications" else {
                throw HandoffError(.storage, "Line \(number + 1) of \(path) is not 'notifications = on' or 'notifications = off'.",
                                   fix: "Write 'notifications = off' (or 'on') in \(path), or remove the file.")
            }
            switch parts[1].lowercased() {
            case "on", "true", "yes": enabled = true
            case "off", "false", "no": enabled = false
            default:
                throw HandoffError(.storage, "Line \(number + 1) of \(path) sets notifications to '\(parts[1])'.",
                                   fix: "Use 'notifications = off' or 'notifications = on'.")
            }
        }
        return enabled
    }
}
