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
