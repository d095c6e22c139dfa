import Foundation
import Glibc
import HandoffAPI
import HandoffCore

/// Writes an activity as pretty JSON to a descriptor as it goes: values are
/// encoded straight from the decoded property list, `$data` as base64 a chunk at
/// a time, and the text leaves in 1 MiB writes, so a 64 MiB userInfo never
/// becomes one giant String (or JSONValue) on the way out.
struct ActivityOutput {
    static let flushBytes = 1 << 20
    /// A multiple of 3, so chunks of base64 join without padding in between.
    static let base64ChunkBytes = 3 * 256 * 1024
    let fd: Int32
    private var writer = JSONWriter(capacity: ActivityOutput.flushBytes + 64 * 1024)
    private(set) var failed = false

    init(fd: Int32 = STDOUT_FILENO) {
        self.fd = fd
    }

    /// The activity as `{type, title, userInfo, ...}`, keys sorted, then a newline.
    mutating func write(_ activity: Activity) {
        var fields: [(String, PropertyListValue?)] = [
            ("sequence", .integer(Int64(clamping: activity.sequence))), ("title", .string(activity.title)), ("type", .string(activity.type)),
            ("userInfo", .dictionary(activity.userInfo)),
        ]
        if let id = activity.targetContentIdentifier { fields.append(("targetContentIdentifier", .string(id))) }
        if let url = activity.webpageURL { fields.append(("webpageURL", .string(url))) }
        if let expires = activity.expiresAtMillis { fields.append(("expiresAtMillis", .integer(Int64(clamping: expires)))) }
        if activity.supportsContinuationStreams { fields.append(("supportsContinuationStreams", .bool(true))) }
        fields.sort { $0.0 < $1.0 }
        writeObject(fields.compactMap { key, value in value.map { (key, $0) } }, indent: 0)
        writer.append("\n")
        flush()
    }

    /// The userInfo alone, indented by `indent` spaces after its first line (the human form).
    mutating func write(userInfo: [String: PropertyListValue], indent: Int) {
        write(.dictionary(userInfo), indent: indent)
        writer.append("\n")
        flush()
    }

    mutating func write(text: String) {
        writer.append(text)
        flushIfFull()
    }

    mutating func flush() {
        writer.drain { raw in
            var sent = 0
            while sent < raw.count, !failed {
                let count = Glibc.write(fd, raw.baseAddress! + sent, raw.count - sent)
                if count < 0 {
                    if errno == EINTR { continue }
                    failed = true
                } else {
                    sent += count
                }
            }
        }
    }

    private mutating func flushIfFull() {
        if writer.count >= Self.flushBytes { flush() }
    }

    private mutating func newline(_ indent: Int) {
        writer.append("\n")
        writer.append(String(repeating: " ", count: indent))
    }

    private mutating func writeObject(_ fields: [(String, PropertyListValue)], indent: Int) {
        guard !fields.isEmpty else { return writer.append("{}") }
        writer.append("{")
        for (index, (key, value)) in fields.enumerated() {
            if index > 0 { writer.append(",") }
            newline(indent + 2)
            writer.writeString(key)
            writer.append(": ")
            write(value, indent: indent + 2)
        }
        newline(indent)
        writer.append("}")
    }

    private mutating func write(_ value: PropertyListValue, indent: Int) {
        switch value {
        case let .string(text): writer.writeString(text)
        case let .integer(number): writer.append(String(number))
        case let .double(number): writer.writeDouble(number)
        case let .bool(flag): writer.append(flag ? "true" : "false")
        case .date: writer.write(value.json)
        case let .data(bytes):
            writer.append("{")
            newline(indent + 2)
            writer.append("\"$data\": \"")
            bytes.withUnsafeBytes { raw in
                var offset = 0
                while offset < raw.count {
                    let end = min(raw.count, offset + Self.base64ChunkBytes)
                    writer.appendBase64(UnsafeRawBufferPointer(rebasing: raw[offset..<end]))
                    offset = end
                    flushIfFull()
                }
            }
            writer.append("\"")
            newline(indent)
            writer.append("}")
        case let .array(items):
            guard !items.isEmpty else { return writer.append("[]") }
            writer.append("[")
            for (index, item) in items.enumerated() {
                if index > 0 { writer.append(",") }
                newline(indent + 2)
                write(item, indent: indent + 2)
            }
            newline(indent)
            writer.append("]")
        case let .dictionary(fields):
            writeObject(fields.keys.sorted().map { ($0, fields[$0]!) }, indent: indent)
        }
        flushIfFull()
    }
}

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
        String(format: "%.1f", Double(bytes) / 1_048_576)
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

func printStderr(_ text: String) {
    var text = text
    text.withUTF8 { _ = Glibc.write(STDERR_FILENO, $0.baseAddress, $0.count) }
}

extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
