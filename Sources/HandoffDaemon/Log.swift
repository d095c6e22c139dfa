import FoundationEssentials
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
        let stamp = Date().formatted(.iso8601.time(includingFractionalSeconds: true))
        let line = "\(stamp) \(program) \(messageLevel.label): \(message())\n"
        Self.output.withLock { _ in writeStandardError(line) }
    }
}
