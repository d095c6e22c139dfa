import FoundationEssentials
import Glibc
import HandoffCore
import HandoffTransport
import HandoffRuntime

/// A fetched payload: the sealed buffer that holds it and its fixed fields,
/// checked against the signed summary. The userInfo is checked, not decoded.
struct FetchedPayload: Sendable {
    let buffer: PayloadBuffer
    let header: ActivityHeader
}

/// One payload on its way in, across every connection that carries part of it:
/// the buffer (sized from the first authenticated frame header, after checking
/// it against the signed summary) and how much of it is authenticated. The
/// bytes are not hashed again here: the sender vouched for the summary's digest
/// when it took the request (Docs/PROTOCOL.md, "Why the receiver does not hash
/// the payload"). Used by the fetch thread only.
final class PayloadReception {
    let summary: Summary
    private(set) var buffer: PayloadBuffer?
    /// Payload bytes received and authenticated, from the start: where a resume begins.
    private(set) var authenticated = 0
    /// Bytes of records a connection lost midway, which a resume fetches again.
    private(set) var refetchedBytes = 0

    init(summary: Summary) {
        self.summary = summary
    }

    var isStarted: Bool { buffer != nil }

    /// The region a payload frame fills: the whole buffer for a fresh fetch, the
    /// missing tail for a resumed one. Refuses a frame that does not match.
    func region(for start: PayloadStart) throws(HandoffError) -> PayloadRegion {
        let expected = Int(summary.payloadSize)
        guard let buffer else {
            guard start.offset == 0 else { throw Self.mismatch("a resumed payload answered a fresh fetch") }
            guard start.length == expected else {
                throw HandoffError(.payloadInvalid, "The payload is \(start.length) bytes, the summary said \(expected).",
                                   fix: "Accept again; if it repeats, the sender is misbehaving.")
            }
            guard expected <= ActivityLimits.payloadBytes else {
                throw HandoffError(.payloadTooLarge, "The payload is \(expected) bytes, over the limit of \(ActivityLimits.payloadBytes).",
                                   fix: "Ask the sender to shrink the activity's userInfo.")
            }
            let created: PayloadBuffer
            do {
                // Pages are made as records are written into it, not all before the first one (issue 21:
                // zeroing 64 MiB up front was 17 % of the receiver's CPU, spent before any byte was
                // decrypted), and written, not faulted in through a mapping (half the kernel's work).
                created = try PayloadBuffer.unmapped(count: expected)
            } catch {
                throw HandoffError(.internal, "Cannot hold a payload of \(expected) bytes: \(error).",
                                   fix: "Free some memory on this host, then accept again.")
            }
            self.buffer = created
            return PayloadRegion(buffer: created, offset: 0, count: expected)
        }
        guard start.offset == authenticated, start.offset + start.length == buffer.count else {
            throw Self.mismatch("the resumed payload starts at byte \(start.offset) with \(start.length) bytes; \(authenticated) of \(buffer.count) are here")
        }
        return PayloadRegion(buffer: buffer, offset: start.offset, count: start.length)
    }

    private static func mismatch(_ detail: String) -> HandoffError {
        HandoffError(.payloadInvalid, "The sender's answer does not continue this transfer: \(detail).",
                     fix: "Accept again; if it repeats, the sender is misbehaving.")
    }

    /// `count` bytes from the start are now authenticated.
    func advance(to count: Int) {
        authenticated = count
    }

    func discard(_ bytes: Int) { refetchedBytes += bytes }

    /// Everything arrived: the buffer is sealed and its fields scanned and checked against the summary.
    func finish() throws(HandoffError) -> FetchedPayload {
        guard let buffer, authenticated == buffer.count else {
            throw HandoffError(.payloadInvalid, "The payload ended early.", fix: "Accept again.")
        }
        do {
            try buffer.seal()
        } catch {
            throw HandoffError(.internal, "Cannot seal the received payload: \(error).", fix: "Report this as a bug.")
        }
        let header = try Activity.scanPayload(buffer.bytes)
        guard header.type == summary.activityType, header.title == summary.title, header.sequence == summary.sequence else {
            throw HandoffError(.payloadInvalid, "The payload describes a different activity than its summary.",
                               fix: "Accept again; if it repeats, the sender is misbehaving.")
        }
        return FetchedPayload(buffer: buffer, header: header)
    }
}

/// Which progress updates a transfer reports: only transfers over 1 MiB, at
/// most one per 100 ms, and always the one that completes it.
struct ProgressThrottle {
    static let minimumTotal = 1 << 20
    static let intervalNanos: UInt64 = 100_000_000
    let total: Int
    private var lastReportNanos: UInt64?
    private var reportedEnd = false

    init(total: Int) { self.total = total }

    mutating func shouldReport(bytes: Int, nowNanos: UInt64) -> Bool {
        guard total > Self.minimumTotal, !reportedEnd else { return false }
        if bytes >= total {
            reportedEnd = true
            return true
        }
        if let last = lastReportNanos, nowNanos &- last < Self.intervalNanos { return false }
        lastReportNanos = nowNanos
        return true
    }
}

/// Progress of one connection's share of a transfer, with its rate since that connection began.
final class ProgressMeter {
    private var throttle: ProgressThrottle
    private let from: Int
    private let startedNanos = monotonicNanos()
    private let report: @Sendable (_ bytes: Int, _ total: Int, _ bytesPerSecond: Int) -> Void

    init(total: Int, from: Int, report: @escaping @Sendable (Int, Int, Int) -> Void) {
        throttle = ProgressThrottle(total: total)
        self.from = from
        self.report = report
    }

    func update(_ bytes: Int) {
        let now = monotonicNanos()
        guard throttle.shouldReport(bytes: bytes, nowNanos: now) else { return }
        let elapsed = max(now &- startedNanos, 1)
        report(bytes, throttle.total, Int(Double(bytes - from) * 1e9 / Double(elapsed)))
    }
}

/// When a cut transfer waits for its peer and when it gives up: each cut opens
/// a window of `windowMillis`, never past the offer's expiry; attempts within
/// it fail without a new cut until a connection moves the transfer on.
struct ResumeWindow {
    enum Step: Equatable {
        /// Try again before `untilMillis`; `newCut` when this failure starts a wait (announce it).
        case wait(untilMillis: UInt64, newCut: Bool)
        case giveUp
    }

    let windowMillis: UInt64
    let expiresAtMillis: UInt64
    private var untilMillis: UInt64?
    private var authenticatedAtCut = 0

    init(windowMillis: UInt64, expiresAtMillis: UInt64) {
        self.windowMillis = windowMillis
        self.expiresAtMillis = expiresAtMillis
    }

    /// A connection failed with `authenticated` payload bytes held.
    mutating func failed(nowMillis: UInt64, authenticated: Int) -> Step {
        var newCut = false
        if untilMillis == nil || authenticated > authenticatedAtCut {
            untilMillis = min(nowMillis + windowMillis, expiresAtMillis)
            authenticatedAtCut = authenticated
            newCut = true
        }
        guard let until = untilMillis, nowMillis < until else { return .giveUp }
        return .wait(untilMillis: until, newCut: newCut)
    }
}
