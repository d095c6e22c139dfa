import Glibc
import HandoffTransport
import HandoffRuntime

/// Logs to stderr, one line per event. Callers pass types, device ids and
/// reasons, never titles or payload values.
public struct Log: Sendable {
    public enum Level: Int, Sendable, Comparable, CaseIterable {
        case debug, info, warning, error

        public init?(name: String) {
            switch name.lowercased() {
            case "debug": self = .debug
            case "info": self = .info
            case "warning", "warn": self = .warning
            case "error": self = .error
            default: return nil
            }
        }

        var label: String { ["debug", "info", "warning", "error"][rawValue] }

        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    public let level: Level
    /// The program the lines are from.
    public let program: String
    private static let output = Locked(())

    public init(level: Level, program: String = "handoffd") {
        self.level = level
        self.program = program
    }

    public func debug(_ message: @autoclosure () -> String) { write(.debug, message) }
    public func info(_ message: @autoclosure () -> String) { write(.info, message) }
    public func warning(_ message: @autoclosure () -> String) { write(.warning, message) }
    public func error(_ message: @autoclosure () -> String) { write(.error, message) }

    private func write(_ messageLevel: Level, _ message: () -> String) {
        guard messageLevel >= level else { return }
        let line = "\(Self.timestamp()) \(program) \(messageLevel.label): \(message())\n"
        Self.output.withLock { _ in writeStandardError(line) }
    }

    /// The time of day in UTC, `HH:MM:SS.mmm`, as ISO 8601 writes it. Formatted by hand: the
    /// ISO 8601 format style cost about 25 µs a line, several times per accept on each side.
    static func timestamp(wallMillis: UInt64 = wallClockMillis()) -> String {
        let ofDay = wallMillis % 86_400_000
        var text = ""
        text.reserveCapacity(12)
        for (value, width, separator) in [(ofDay / 3_600_000, 2, ":"), (ofDay / 60_000 % 60, 2, ":"), (ofDay / 1000 % 60, 2, "."),
                                          (ofDay % 1000, 3, "")] {
            let digits = String(value)
            text += String(repeating: "0", count: width - digits.count) + digits + separator
        }
        return text
    }
}
