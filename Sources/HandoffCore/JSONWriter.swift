
/// Compact JSON straight into bytes, keys sorted (stable output), UTF-8 kept as
/// is. The local API writes every message with it: Foundation's JSONEncoder
/// costs tens of microseconds per small message and scales badly.
public struct JSONWriter {
    public private(set) var bytes: [UInt8] = []

    public init(capacity: Int = 256) {
        bytes.reserveCapacity(capacity)
    }

    /// One message line: `value` and a newline.
    public static func line(_ value: JSONValue) -> [UInt8] {
        var writer = JSONWriter()
        writer.write(value)
        writer.bytes.append(UInt8(ascii: "\n"))
        return writer.bytes
    }

    public mutating func write(_ value: JSONValue) {
        switch value {
        case .null: append("null")
        case let .bool(flag): append(flag ? "true" : "false")
        case let .integer(number): append(String(number))
        case let .double(number): writeDouble(number)
        case let .string(text): writeString(text)
        case let .array(items):
            bytes.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                write(item)
            }
            bytes.append(UInt8(ascii: "]"))
        case let .object(fields):
            bytes.append(UInt8(ascii: "{"))
            for (index, key) in fields.keys.sorted().enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                writeString(key)
                bytes.append(UInt8(ascii: ":"))
                write(fields[key]!)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    /// The same, indented two spaces a level with one member per line: for files people read
    /// (the state directory) and `--json` output.
    public mutating func writeIndented(_ value: JSONValue, level: Int = 0) {
        func newline(_ depth: Int) {
            bytes.append(UInt8(ascii: "\n"))
            bytes.append(contentsOf: repeatElement(UInt8(ascii: " "), count: 2 * depth))
        }
        switch value {
        case let .array(items) where !items.isEmpty:
            bytes.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                newline(level + 1)
                writeIndented(item, level: level + 1)
            }
            newline(level)
            bytes.append(UInt8(ascii: "]"))
        case let .object(fields) where !fields.isEmpty:
            bytes.append(UInt8(ascii: "{"))
            for (index, key) in fields.keys.sorted().enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                newline(level + 1)
                writeString(key)
                append(" : ")
                writeIndented(fields[key]!, level: level + 1)
            }
            newline(level)
            bytes.append(UInt8(ascii: "}"))
        default:
            write(value)
        }
    }

    /// Non-finite numbers have no JSON form; property lists refuse them before they get here.
    public mutating func writeDouble(_ number: Double) {
        guard number.isFinite else { return append("null") }
        // Integral values in the exactly representable range print without ".0", as JSONEncoder did.
        if number.rounded() == number, abs(number) < 1e15 { return append(String(Int64(number))) }
        append(number.description)
    }

    public mutating func writeString(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { Self.escape($0, into: &bytes) }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Text that is already JSON (punctuation, indentation).
    public mutating func append(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    public var count: Int { bytes.count }

    /// Hands the bytes written so far to `body` (to write them out) and starts empty again.
    public mutating func drain(_ body: (UnsafeRawBufferPointer) -> Void) {
        bytes.withUnsafeBytes(body)
        bytes.removeAll(keepingCapacity: true)
    }

    private static let base64Alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    /// Two base64 characters for each 12 bits, in memory order: half the lookups of one table per six bits.
    private static let base64Pairs: [UInt16] = (0..<4096).map {
        (UInt16(base64Alphabet[$0 >> 6]) | UInt16(base64Alphabet[$0 & 0x3F]) << 8).littleEndian
    }

    /// Standard base64 (RFC 4648, padded) of `input`, appended. Callers write long
    /// data a chunk (a multiple of 3 bytes) at a time.
    public mutating func appendBase64(_ input: UnsafeRawBufferPointer) {
        let whole = input.count / 3
        let length = (input.count + 2) / 3 * 4
        let start = bytes.count
        bytes.append(contentsOf: repeatElement(0, count: length))
        Self.base64Pairs.withUnsafeBufferPointer { pairs in
            bytes.withUnsafeMutableBytes { raw in
                let output = raw.baseAddress! + start
                var out = 0
                var index = 0
                for _ in 0..<whole {
                    let value = Int(input[index]) << 16 | Int(input[index + 1]) << 8 | Int(input[index + 2])
                    output.storeBytes(of: pairs[value >> 12], toByteOffset: out, as: UInt16.self)
                    output.storeBytes(of: pairs[value & 0xFFF], toByteOffset: out + 2, as: UInt16.self)
                    out += 4
                    index += 3
                }
                let rest = input.count - index
                guard rest > 0 else { return }
                let value = Int(input[index]) << 16 | (rest == 2 ? Int(input[index + 1]) << 8 : 0)
                let alphabet = Self.base64Alphabet
                output.storeBytes(of: alphabet[value >> 18], toByteOffset: out, as: UInt8.self)
                output.storeBytes(of: alphabet[(value >> 12) & 0x3F], toByteOffset: out + 1, as: UInt8.self)
                output.storeBytes(of: rest == 2 ? alphabet[(value >> 6) & 0x3F] : UInt8(ascii: "="), toByteOffset: out + 2, as: UInt8.self)
                output.storeBytes(of: UInt8(ascii: "="), toByteOffset: out + 3, as: UInt8.self)
            }
        }
    }

    public mutating func writeString(utf8 text: UnsafeRawBufferPointer) {
        bytes.append(UInt8(ascii: "\""))
        Self.escape(UnsafeBufferPointer(start: text.baseAddress?.assumingMemoryBound(to: UInt8.self), count: text.count), into: &bytes)
        bytes.append(UInt8(ascii: "\""))
    }

    private static let hex = Array("0123456789abcdef".utf8)

    /// RFC 8259 escapes: quote, backslash and control characters; everything else as is.
    static func escape(_ input: UnsafeBufferPointer<UInt8>, into output: inout [UInt8]) {
        var start = 0
        for index in 0..<input.count {
            let byte = input[index]
            guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
            output.append(contentsOf: UnsafeBufferPointer(rebasing: input[start..<index]))
            start = index + 1
            switch byte {
            case UInt8(ascii: "\""): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x0A: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            default:
                output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                           hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]])
            }
        }
        output.append(contentsOf: UnsafeBufferPointer(rebasing: input[start..<input.count]))
    }
}
