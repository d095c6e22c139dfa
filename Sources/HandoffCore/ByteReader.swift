/// A cursor over untrusted bytes. Every read names its byte order and throws
/// instead of running past the end, so no parser does index arithmetic itself.
public struct ByteReader {
    public let bytes: [UInt8]
    public private(set) var offset: Int

    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
        self.offset = 0
    }

    public var remaining: Int { bytes.count - offset }
    public var isAtEnd: Bool { offset == bytes.count }

    private func require(_ count: Int) throws(WireError) {
        guard count >= 0, remaining >= count else {
            throw .truncated(needed: count, available: remaining)
        }
    }

    public mutating func readUInt8() throws(WireError) -> UInt8 {
        try require(1)
        defer { offset += 1 }
        return bytes[offset]
    }

    public mutating func readUInt16BE() throws(WireError) -> UInt16 {
        UInt16(truncatingIfNeeded: try readBigEndian(2))
    }

    public mutating func readUInt32BE() throws(WireError) -> UInt32 {
        UInt32(truncatingIfNeeded: try readBigEndian(4))
    }

    public mutating func readUInt64BE() throws(WireError) -> UInt64 {
        try readBigEndian(8)
    }

    private mutating func readBigEndian(_ width: Int) throws(WireError) -> UInt64 {
        try require(width)
        var value: UInt64 = 0
        for index in offset..<(offset + width) {
            value = (value << 8) | UInt64(bytes[index])
        }
        offset += width
        return value
    }

    public mutating func readBytes(_ count: Int) throws(WireError) -> [UInt8] {
        try require(count)
        defer { offset += count }
        return Array(bytes[offset..<(offset + count)])
    }

    /// Reads `count` bytes as UTF-8, rejecting invalid sequences rather than repairing them.
    public mutating func readUTF8(_ count: Int) throws(WireError) -> String {
        let raw = try readBytes(count)
        guard let text = String(validating: raw, as: UTF8.self) else {
            throw .invalidText
        }
        return text
    }

    /// Peeks without consuming.
    public func peekUInt8() -> UInt8? {
        remaining >= 1 ? bytes[offset] : nil
    }

    public func expectEnd() throws(WireError) {
        guard isAtEnd else { throw .trailingBytes(remaining) }
    }
}

/// Builds wire bytes. Lengths are checked by the encoders against named limits
/// before anything is appended.
public struct ByteWriter {
    public private(set) var bytes: [UInt8] = []

    public init(capacity: Int = 0) {
        bytes.reserveCapacity(capacity)
    }

    public mutating func write(_ value: UInt8) { bytes.append(value) }
    public mutating func write(_ value: UInt16) { writeBigEndian(UInt64(value), width: 2) }
    public mutating func write(_ value: UInt32) { writeBigEndian(UInt64(value), width: 4) }
    public mutating func write(_ value: UInt64) { writeBigEndian(value, width: 8) }
    public mutating func write(_ raw: [UInt8]) { bytes.append(contentsOf: raw) }
    public mutating func write<S: Sequence>(contentsOf raw: S) where S.Element == UInt8 {
        bytes.append(contentsOf: raw)
    }

    private mutating func writeBigEndian(_ value: UInt64, width: Int) {
        for shift in stride(from: (width - 1) * 8, through: 0, by: -8) {
            bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
        }
    }
}

/// Why bytes from the network or disk were refused.
public enum WireError: Error, Equatable, Sendable, CustomStringConvertible {
    case truncated(needed: Int, available: Int)
    case trailingBytes(Int)
    case badMagic
    case unsupportedVersion(UInt8)
    case unknownKind(UInt8)
    case tooLong(field: String, length: Int, limit: Int)
    case invalidText
    case invalidValue(String)
    case nestingTooDeep(limit: Int)

    public var description: String {
        switch self {
        case let .truncated(needed, available): "truncated: needed \(needed) bytes, \(available) left"
        case let .trailingBytes(count): "\(count) unexpected bytes after the end"
        case .badMagic: "not a handoff message (bad magic)"
        case let .unsupportedVersion(version): "unsupported version \(version)"
        case let .unknownKind(kind): "unknown message kind \(kind)"
        case let .tooLong(field, length, limit): "\(field) is \(length) bytes, limit \(limit)"
        case .invalidText: "text is not valid UTF-8"
        case let .invalidValue(what): "invalid value: \(what)"
        case let .nestingTooDeep(limit): "values nested deeper than \(limit)"
        }
    }
}
