/// Text helpers FoundationEssentials lacks (CharacterSet lives with ICU in full Foundation).
extension StringProtocol {
    /// Without leading and trailing horizontal whitespace (spaces, tabs; not newlines),
    /// as `trimmingSpaces()` does.
    public func trimmingSpaces() -> String {
        let isSpace: (Character) -> Bool = { $0.isWhitespace && !$0.isNewline }
        guard let first = firstIndex(where: { !isSpace($0) }) else { return "" }
        let last = lastIndex(where: { !isSpace($0) })!
        return String(self[first...last])
    }

    /// Without leading and trailing whitespace, newlines included.
    public func trimmingWhitespace() -> String {
        guard let first = firstIndex(where: { !$0.isWhitespace }) else { return "" }
        let last = lastIndex(where: { !$0.isWhitespace })!
        return String(self[first...last])
    }
}

extension String {
    /// Padded with spaces on the right to `width` characters (never cut), for columns.
    public func padded(to width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }

    /// `value` with `places` decimals, rounded half away from zero, as `%.Nf` prints it
    /// (String(format:) is full Foundation's).
    public static func decimal(_ value: Double, places: Int) -> String {
        guard value.isFinite else { return "\(value)" }
        var scale = 1.0
        for _ in 0..<places { scale *= 10 }
        let scaled = (abs(value) * scale).rounded()
        guard scaled < 9e18 else { return "\(value)" }
        let units = UInt64(scaled)
        let whole = units / UInt64(scale)
        let sign = value < 0 && units != 0 ? "-" : ""
        guard places > 0 else { return "\(sign)\(whole)" }
        let fraction = String(units % UInt64(scale))
        return "\(sign)\(whole)." + String(repeating: "0", count: places - fraction.count) + fraction
    }
}

/// Text for a notification body, which servers read as a small XML subset
/// (Desktop Notifications Specification, "Markup").
public enum NotificationMarkup {
    /// Escapes per Unicode scalar, never per grapheme: a combining mark after `>` or a prefix
    /// such as U+0600 before `<` would merge with it into a cluster that is not the bare character.
    public static func escape(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&apos;"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    /// Drops what a peer could garble the text with: controls, line and paragraph separators,
    /// the bidirectional overrides and every other format character (Cf).
    public static func clean(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.filter { scalar in
            switch scalar.properties.generalCategory {
            case .control, .lineSeparator, .paragraphSeparator, .format: false
            default: true
            }
        }))
    }
}
