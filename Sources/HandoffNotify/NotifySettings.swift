import FoundationEssentials
import Glibc
import HandoffCore

/// The agent's settings, in `$XDG_CONFIG_HOME/handoff/notify.conf` (default
/// `~/.config/handoff/notify.conf`): `notifications = off` switches the
/// notifications off, `panel = off` the panel item. Lines are `key = value`;
/// `#` starts a comment. A file that says something else is reported, never
/// guessed at.
public struct NotifySettings: Equatable, Sendable {
    public var notifications = true
    public var panel = true

    public init(notifications: Bool = true, panel: Bool = true) {
        self.notifications = notifications
        self.panel = panel
    }

    public static func path(environment: [String: String]) -> String {
        if let config = environment["XDG_CONFIG_HOME"], config.hasPrefix("/") { return config + "/handoff/notify.conf" }
        return (environment["HOME"] ?? "") + "/.config/handoff/notify.conf"
    }

    /// The settings the file's text gives.
    public static func parse(_ text: String, path: String) throws(HandoffError) -> NotifySettings {
        var settings = NotifySettings()
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            guard !line.allSatisfy(\.isWhitespace) else { continue }
            let parts = line.split(separator: "=", maxSplits: 1).map { $0.trimmingSpaces() }
            guard parts.count == 2, parts[0] == "notifications" || parts[0] == "panel" else {
                throw HandoffError(.storage, "Line \(number + 1) of \(path) is not 'notifications = on|off' or 'panel = on|off'.",
                                   fix: "Write 'notifications = off' or 'panel = off' (or 'on') in \(path), or remove the file.")
            }
            let on: Bool
            switch parts[1].lowercased() {
            case "on", "true", "yes": on = true
            case "off", "false", "no": on = false
            default:
                throw HandoffError(.storage, "Line \(number + 1) of \(path) sets \(parts[0]) to '\(parts[1])'.",
                                   fix: "Use '\(parts[0]) = off' or '\(parts[0]) = on'.")
            }
            if parts[0] == "panel" { settings.panel = on } else { settings.notifications = on }
        }
        return settings
    }
}
