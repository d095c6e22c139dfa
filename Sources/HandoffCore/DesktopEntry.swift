import FoundationEssentials
import Glibc

/// The `[Desktop Entry]` group of a freedesktop.org `.desktop` file, read
/// only as far as Handoff needs: an app declares the activity types it
/// continues with `X-Handoff-ActivityTypes=type1;type2;` (Docs/APPS.md), and
/// how to start it with `Exec=`.
public struct DesktopEntry: Equatable, Sendable {
    public static let activityTypesKey = "X-Handoff-ActivityTypes"
    /// .desktop files are small; anything larger is not one.
    public static let maximumBytes = 64 * 1024

    public var fields: [String: String]

    public init(parsing text: String) throws(WireError) {
        guard text.utf8.count <= Self.maximumBytes else {
            throw .tooLong(field: "desktop file", length: text.utf8.count, limit: Self.maximumBytes)
        }
        var fields: [String: String] = [:]
        var inMainGroup = false
        for rawLine in text.split(whereSeparator: \.isNewline) {
            let line = rawLine.trimmingSpaces()
            if line.isEmpty || line.hasPrefix("#") { continue }
            if line.hasPrefix("[") {
                inMainGroup = line == "[Desktop Entry]"
                continue
            }
            guard inMainGroup, let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmingSpaces()
            // Localised keys (Name[de]=...) are not ours; the first occurrence of a key wins.
            guard !key.contains("["), fields[key] == nil else { continue }
            fields[key] = line[line.index(after: equals)...].trimmingSpaces()
        }
        self.fields = fields
    }

    /// The declared activity types that are valid reverse-DNS names; others are ignored.
    public var activityTypes: [String] {
        guard let list = fields[Self.activityTypesKey] else { return [] }
        return list.split(separator: ";").map { $0.trimmingSpaces() }
            .filter { (try? Activity.validateType($0)) != nil }
    }

    public var name: String? { fields["Name"] }
    public var exec: String? { fields["Exec"] }
    /// `Hidden=true` means the entry was deleted by the user (Desktop Entry Specification).
    public var isHidden: Bool { fields["Hidden"] == "true" }

    /// A `;`-separated list value (`MimeType=`, `Categories=`), empty items dropped.
    public func list(_ key: String) -> [String] {
        (fields[key] ?? "").split(separator: ";").map { $0.trimmingSpaces() }.filter { !$0.isEmpty }
    }

    /// The words of an `Exec=` value with quoting honoured and field codes (%u, %f, ...)
    /// kept as words (Desktop Entry Specification, "The Exec key").
    public static func execWords(_ exec: String) -> [String] {
        var words: [String] = []
        var current = ""
        var quoted = false
        var escaped = false
        var started = false
        for character in exec {
            if escaped {
                current.append(character)
                escaped = false
            } else if character == "\\" && quoted {
                escaped = true
            } else if character == "\"" {
                quoted.toggle()
                started = true
            } else if character == " " && !quoted {
                if started { words.append(current) }
                current = ""
                started = false
            } else {
                current.append(character)
                started = true
            }
        }
        if started { words.append(current) }
        return words
    }
}
