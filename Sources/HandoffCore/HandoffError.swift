/// An error a person can act on: a stable code for scripts, a sentence saying
/// what happened, and the fix. Every layer converts its failures into this
/// before they reach the local API, the CLI or an app.
public struct HandoffError: Error, Equatable, Sendable, Codable, CustomStringConvertible {
    public var code: Code
    public var message: String
    public var fix: String

    public init(_ code: Code, _ message: String, fix: String) {
        self.code = code
        self.message = message
        self.fix = fix
    }

    public var description: String { "\(message) (\(code.rawValue)). Fix: \(fix)" }

    /// Stable codes. The first six are the transport conditions of the design
    /// brief; the rest are the other reasons a handoff or a request can fail.
    public enum Code: String, Codable, Sendable, CaseIterable {
        case trust, bluetooth, network, enabled, proximity, app
        case declined
        case payloadTooLarge = "payload-too-large"
        case payloadInvalid = "payload-invalid"
        case signatureMismatch = "signature-mismatch"
        case timedOut = "timed-out"
        case connectionLost = "connection-lost"
        case notCurrent = "not-current"
        case invalidActivity = "invalid-activity"
        case invalidRequest = "invalid-request"
        case notFound = "not-found"
        case ambiguous
        case identity
        case storage
        case daemonUnavailable = "daemon-unavailable"
        case `internal`
    }
}

extension HandoffError {
    public static func invalidActivity(_ message: String, fix: String) -> HandoffError {
        HandoffError(.invalidActivity, message, fix: fix)
    }

    public static func invalidRequest(_ message: String) -> HandoffError {
        HandoffError(.invalidRequest, message, fix: "Check the request against Docs/LOCAL-API.md.")
    }

    public static func payloadInvalid(_ detail: String) -> HandoffError {
        HandoffError(.payloadInvalid, "The received payload could not be decoded: \(detail).",
                     fix: "Ask the sender to publish the activity again; if it persists, the two hosts run incompatible versions.")
    }
}
