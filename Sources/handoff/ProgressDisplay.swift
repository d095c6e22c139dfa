import FoundationEssentials
import Glibc
import HandoffAPI
import HandoffCore

/// The progress of an accept on a terminal (stderr): a bar that redraws in place,
/// and a line of its own when the transfer waits for the sender or resumes.
struct ProgressDisplay {
    private(set) var acceptID: Int64?
    private var drawn = false

    /// Takes the events of the first accept announced after the request went out.
    mutating func handle(_ event: Event) {
        switch event {
        case let .willContinue(id, _, _, _) where acceptID == nil:
            acceptID = id
        case let .progress(progress) where progress.acceptID == acceptID:
            draw(Self.bar(bytes: progress.bytes, total: progress.total, bytesPerSecond: progress.bytesPerSecond))
        case let .transferWaiting(waiting) where waiting.acceptID == acceptID:
            let seconds = max(0, (waiting.untilMillis - Int64(wallClockMillisNow())) / 1000)
            line("waiting for \(Self.safe(waiting.name)) (\(Self.safe(waiting.reason))); giving up in \(seconds) s ...")
        case let .transferResumed(id, _, fromByte) where id == acceptID:
            line("resumed at \(Self.mebibytes(fromByte)) MiB")
        default:
            break
        }
    }

    /// Clears the bar before the outcome is printed.
    mutating func finish() {
        if drawn { printStderr("\r\u{1B}[K") }
        drawn = false
    }

    private mutating func draw(_ text: String) {
        printStderr("\r\u{1B}[K" + text)
        drawn = true
    }

    private mutating func line(_ text: String) {
        finish()
        printStderr(text + "\n")
    }

    /// `[########            ]  42%  27.0/64.0 MiB  812.3 MB/s`
    static func bar(bytes: Int64, total: Int64, bytesPerSecond: Double, width: Int = 24) -> String {
        let fraction = total > 0 ? min(1, max(0, Double(bytes) / Double(total))) : 0
        let filled = Int((fraction * Double(width)).rounded(.down))
        let percent = String(Int((fraction * 100).rounded(.down))).leftPadded(to: 3)
        let rate = (bytesPerSecond / 1e6 * 10).rounded() / 10
        return "[" + String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled) + "] \(percent)%  "
            + "\(mebibytes(bytes))/\(mebibytes(total)) MiB  \(rate) MB/s"
    }

    static func mebibytes(_ bytes: Int64) -> String {
        String.decimal(Double(bytes) / 1_048_576, places: 1)
    }

    static func safe(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.filter { !Activity.containsUnsafeCharacters(String($0)) }))
    }

    private func wallClockMillisNow() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return UInt64(now.tv_sec) * 1000 + UInt64(now.tv_nsec) / 1_000_000
    }
}

/// handoff-peer's stdout for a payload's JSON: 1 MiB writes.
func standardOutputSink(_ raw: UnsafeRawBufferPointer) {
    var sent = 0
    while sent < raw.count {
        let count = Glibc.write(STDOUT_FILENO, raw.baseAddress! + sent, raw.count - sent)
        if count < 0 {
            if errno == EINTR { continue }
            return
        }
        sent += count
    }
}

func printStderr(_ text: String) {
    var text = text
    text.withUTF8 { _ = Glibc.write(STDERR_FILENO, $0.baseAddress, $0.count) }
}

extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
