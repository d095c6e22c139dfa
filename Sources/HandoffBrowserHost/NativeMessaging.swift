import HandoffAPI
import HandoffCore

/// Native messaging's framing (the WebExtensions and Chrome documentation): each
/// message is a 4-byte length in the machine's byte order, then that many bytes
/// of UTF-8 JSON. Pure: the host's I/O asks it what a header means and how to
/// frame a reply, so every limit is tested without a browser.
public enum NativeMessaging {
    /// A message from the extension. A tab is a URL (at most 2 KiB in an
    /// activity), a title and two numbers; 64 KiB leaves room and caps what a
    /// confused extension can make the host allocate.
    public static let maximumIncomingBytes = 64 * 1024
    /// A message to the browser: Chrome refuses more than 1 MiB from a host.
    public static let maximumOutgoingBytes = 1024 * 1024
    public static let headerBytes = 4

    /// What a length header asks for.
    public enum Header: Equatable, Sendable {
        /// Read this many bytes: the message.
        case message(Int)
        /// Too long: skip this many bytes without keeping them, then answer with the error.
        case oversized(Int, HandoffError)
    }

    /// Reads the length in native byte order and checks it before anything is allocated.
    public static func header(_ bytes: [UInt8]) -> Header {
        precondition(bytes.count == headerBytes)
        let length = Int(UInt32(nativeBytes: bytes))
        guard length <= maximumIncomingBytes else {
            return .oversized(length, HandoffError(
                .invalidRequest, "The extension sent a \(length)-byte message; the host takes at most \(maximumIncomingBytes) bytes.",
                fix: "Send one tab per message (its URL, title and scroll position); the message was ignored."))
        }
        return .message(length)
    }

    /// Frames `value` for the browser: its JSON with the length first, or an error over 1 MiB.
    public static func frame(_ value: JSONValue) throws(HandoffError) -> [UInt8] {
        var writer = JSONWriter()
        writer.write(value)
        let body = writer.bytes
        guard body.count <= maximumOutgoingBytes else {
            throw HandoffError(.payloadTooLarge, "A \(body.count)-byte message for the browser is over its limit of \(maximumOutgoingBytes) bytes.",
                               fix: "Continue an activity with a shorter title and URL.")
        }
        return lengthBytes(body.count) + body
    }

    /// The 4-byte header for `count`, in native byte order.
    public static func lengthBytes(_ count: Int) -> [UInt8] {
        withUnsafeBytes(of: UInt32(count)) { Array($0) }
    }
}

extension UInt32 {
    /// Native byte order, as the browser writes it.
    init(nativeBytes bytes: [UInt8]) {
        var value: UInt32 = 0
        withUnsafeMutableBytes(of: &value) { $0.copyBytes(from: bytes.prefix(4)) }
        self = value
    }
}
