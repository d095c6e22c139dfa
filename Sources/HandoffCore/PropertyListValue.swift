import FoundationEssentials
import Glibc

/// The only values an activity's userInfo may hold, as NSUserActivity allows:
/// string, integer, double, bool, data, date, array and dictionary. A URL
/// travels as a string.
public indirect enum PropertyListValue: Equatable, Sendable {
    case string(String)
    case integer(Int64)
    case double(Double)
    case bool(Bool)
    case data([UInt8])
    /// Seconds since 1970-01-01T00:00:00Z.
    case date(Double)
    case array([PropertyListValue])
    case dictionary([String: PropertyListValue])

    /// Deeper nesting is refused when validating and decoding so that hostile
    /// input cannot exhaust the stack.
    public static let maximumDepth = 32
    /// Dictionary keys travel with a 16-bit length; this is far below it.
    public static let maximumKeyBytes = 1024
    /// Values in one userInfo, containers included, counted while validating
    /// and while decoding (JSON or binary) before each value is stored. Each
    /// costs a hundred-odd bytes in memory whatever its encoded size (a bool is
    /// one byte on the wire), so this, not the byte limit, bounds memory: about
    /// 10 MB. Bulk content belongs in one string or data value.
    public static let maximumValues = 1 << 16

    static func tooManyValues(_ keyPath: String) -> HandoffError {
        .invalidActivity("\(keyPath) holds more than \(maximumValues) values, the limit.",
                         fix: "Send fewer values: put bulk content in one string or data value, or in a file whose location travels in userInfo.")
    }

    /// Checks what the encoding needs: depth, key length, finite numbers. The
    /// error names the key path. Run before `encode`, which assumes it passed.
    public func validate(keyPath: String = "userInfo") throws(HandoffError) {
        var values = 0
        try Self.validate(self, keyPath: keyPath, depth: 0, values: &values, root: keyPath)
    }

    private static func validate(_ value: PropertyListValue, keyPath: String, depth: Int, values: inout Int,
                                 root: String) throws(HandoffError) {
        values += 1
        guard values <= maximumValues else { throw tooManyValues(root) }
        guard depth < maximumDepth else {
            throw .invalidActivity("\(keyPath) is nested deeper than \(maximumDepth) levels.", fix: "Flatten the structure.")
        }
        switch value {
        case let .double(number), let .date(number):
            guard number.isFinite else {
                throw .invalidActivity("\(keyPath) is not a finite number.", fix: "Use a finite number.")
            }
        case let .array(items):
            for (index, item) in items.enumerated() {
                try validate(item, keyPath: "\(keyPath)[\(index)]", depth: depth + 1, values: &values, root: root)
            }
        case let .dictionary(fields):
            for (key, item) in fields {
                guard key.utf8.count <= maximumKeyBytes else {
                    throw .invalidActivity("A key in \(keyPath) is \(key.utf8.count) bytes, over the limit of \(maximumKeyBytes).",
                                           fix: "Use shorter keys; put long text in values.")
                }
                try validate(item, keyPath: "\(keyPath).\(key)", depth: depth + 1, values: &values, root: root)
            }
        default:
            break
        }
    }

    /// Keys in the order they are encoded: ascending by UTF-8 bytes, the order
    /// any implementation can reproduce (Swift's String order is Unicode-aware).
    static func encodingOrder(_ keys: Dictionary<String, PropertyListValue>.Keys) -> [String] {
        keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }
}

// MARK: - Binary encoding (Docs/PROTOCOL.md, "Property-list values")

extension PropertyListValue {
    enum Tag: UInt8 {
        case string = 0x01, integer = 0x02, double = 0x03, falseValue = 0x04, trueValue = 0x05
        case data = 0x06, date = 0x07, array = 0x08, dictionary = 0x09
    }

    public func encode(into writer: inout ByteWriter) {
        switch self {
        case let .string(text):
            writer.write(Tag.string.rawValue)
            writer.write(UInt32(text.utf8.count))
            writer.write(contentsOf: text.utf8)
        case let .integer(number):
            writer.write(Tag.integer.rawValue)
            writer.write(UInt64(bitPattern: number))
        case let .double(number):
            writer.write(Tag.double.rawValue)
            writer.write(number.bitPattern)
        case let .bool(flag):
            writer.write(flag ? Tag.trueValue.rawValue : Tag.falseValue.rawValue)
        case let .data(raw):
            writer.write(Tag.data.rawValue)
            writer.write(UInt32(raw.count))
            writer.write(raw)
        case let .date(seconds):
            writer.write(Tag.date.rawValue)
            writer.write(seconds.bitPattern)
        case let .array(items):
            writer.write(Tag.array.rawValue)
            writer.write(UInt32(items.count))
            for item in items { item.encode(into: &writer) }
        case let .dictionary(fields):
            writer.write(Tag.dictionary.rawValue)
            writer.write(UInt32(fields.count))
            // Sorted keys make the encoding, and so the digest, deterministic.
            for key in Self.encodingOrder(fields.keys) {
                writer.write(UInt16(key.utf8.count))
                writer.write(contentsOf: key.utf8)
                fields[key]!.encode(into: &writer)
            }
        }
    }

    public var encoded: [UInt8] {
        var writer = ByteWriter()
        encode(into: &writer)
        return writer.bytes
    }

    public init(from reader: inout ByteReader) throws(WireError) {
        var values = 0
        self = try Self.decode(from: &reader, depth: 0, values: &values)
    }

    static var tooManyWireValues: WireError { .invalidValue("more than \(maximumValues) values, the limit") }

    private static func decode(from reader: inout ByteReader, depth: Int, values: inout Int) throws(WireError) -> PropertyListValue {
        guard depth < maximumDepth else { throw .nestingTooDeep(limit: maximumDepth) }
        values += 1
        guard values <= maximumValues else { throw tooManyWireValues }
        let rawTag = try reader.readUInt8()
        guard let tag = Tag(rawValue: rawTag) else { throw .invalidValue("unknown value tag \(rawTag)") }
        switch tag {
        case .string:
            let length = Int(try reader.readUInt32BE())
            return .string(try reader.readUTF8(length))
        case .integer:
            return .integer(Int64(bitPattern: try reader.readUInt64BE()))
        case .double:
            let number = Double(bitPattern: try reader.readUInt64BE())
            guard number.isFinite else { throw .invalidValue("non-finite double") }
            return .double(number)
        case .falseValue:
            return .bool(false)
        case .trueValue:
            return .bool(true)
        case .data:
            let length = Int(try reader.readUInt32BE())
            return .data(try reader.readBytes(length))
        case .date:
            let seconds = Double(bitPattern: try reader.readUInt64BE())
            guard seconds.isFinite else { throw .invalidValue("non-finite date") }
            return .date(seconds)
        case .array:
            let count = Int(try reader.readUInt32BE())
            // Every element takes at least one byte: refuse counts the input cannot hold
            // before reserving anything.
            guard count <= reader.remaining else { throw .truncated(needed: count, available: reader.remaining) }
            guard count <= maximumValues - values else { throw tooManyWireValues }
            var items: [PropertyListValue] = []
            items.reserveCapacity(count)
            for _ in 0..<count { items.append(try decode(from: &reader, depth: depth + 1, values: &values)) }
            return .array(items)
        case .dictionary:
            let count = Int(try reader.readUInt32BE())
            guard count <= reader.remaining / 3 else {
                throw .truncated(needed: count * 3, available: reader.remaining)
            }
            guard count <= maximumValues - values else { throw tooManyWireValues }
            var fields: [String: PropertyListValue] = [:]
            var previousKey: [UInt8]?
            for _ in 0..<count {
                let keyLength = Int(try reader.readUInt16BE())
                guard keyLength <= maximumKeyBytes else {
                    throw .tooLong(field: "dictionary key", length: keyLength, limit: maximumKeyBytes)
                }
                let key = try reader.readUTF8(keyLength)
                let keyBytes = Array(key.utf8)
                // Strictly ascending bytes: one encoding per value, no duplicates.
                if let previousKey, !previousKey.lexicographicallyPrecedes(keyBytes) {
                    throw .invalidValue("dictionary keys out of order or repeated")
                }
                previousKey = keyBytes
                // Distinct bytes that Swift treats as one key ("é" written two ways) would lose a value.
                guard fields[key] == nil else { throw .invalidValue("dictionary keys equal after Unicode normalization") }
                fields[key] = try decode(from: &reader, depth: depth + 1, values: &values)
            }
            return .dictionary(fields)
        }
    }
}

// MARK: - JSON mapping used by the local API and the CLI

extension PropertyListValue {
    /// ISO 8601 in UTC, with milliseconds when the date has a fraction.
    static func isoString(_ seconds: Double) -> String {
        let style = Date.ISO8601FormatStyle(includingFractionalSeconds: seconds.rounded(.down) != seconds)
        return Date(timeIntervalSince1970: seconds).formatted(style)
    }

    /// Converts JSON into property-list values. JSON has no data or date, so
    /// those are written `{"$data": "<base64>"}` and `{"$date": "<ISO 8601>"}`.
    /// `null` and non-finite numbers are refused with the key path that holds them.
    public init(json: JSONValue, keyPath: String = "userInfo") throws(HandoffError) {
        var values = 0
        self = try Self.fromJSON(json, keyPath: keyPath, depth: 0, values: &values, root: keyPath)
    }

    private static func fromJSON(_ json: JSONValue, keyPath: String, depth: Int, values: inout Int,
                                 root: String) throws(HandoffError) -> PropertyListValue {
        values += 1
        guard values <= maximumValues else { throw tooManyValues(root) }
        guard depth < maximumDepth else {
            throw .invalidActivity("\(keyPath) is nested deeper than \(maximumDepth) levels.",
                                   fix: "Flatten the structure.")
        }
        switch json {
        case .null:
            throw .invalidActivity("\(keyPath) is null, which is not a property-list value.",
                                   fix: "Remove the key or give it a string, number, bool, data, date, array or dictionary.")
        case let .bool(flag): return .bool(flag)
        case let .integer(number): return .integer(number)
        case let .double(number):
            guard number.isFinite else {
                throw .invalidActivity("\(keyPath) is not a finite number.", fix: "Use a finite number.")
            }
            return .double(number)
        case let .string(text): return .string(text)
        case let .array(items):
            guard items.count <= maximumValues - values else { throw tooManyValues(root) }
            var converted: [PropertyListValue] = []
            converted.reserveCapacity(items.count)
            for (index, item) in items.enumerated() {
                converted.append(try fromJSON(item, keyPath: "\(keyPath)[\(index)]", depth: depth + 1, values: &values, root: root))
            }
            return .array(converted)
        case let .object(fields):
            if fields.count == 1, let (key, value) = fields.first, key.hasPrefix("$") {
                return try typedValue(key: key, value: value, keyPath: keyPath)
            }
            var converted: [String: PropertyListValue] = [:]
            for (key, value) in fields {
                converted[key] = try fromJSON(value, keyPath: "\(keyPath).\(key)", depth: depth + 1, values: &values, root: root)
            }
            return .dictionary(converted)
        }
    }

    private static func typedValue(key: String, value: JSONValue, keyPath: String) throws(HandoffError) -> PropertyListValue {
        switch key {
        case "$data":
            guard let text = value.stringValue, let raw = Data(base64Encoded: text) else {
                throw .invalidActivity("\(keyPath) holds $data that is not base64.", fix: "Encode the bytes as standard base64.")
            }
            return .data([UInt8](raw))
        case "$date":
            if let seconds = value.doubleValue, seconds.isFinite { return .date(seconds) }
            guard let text = value.stringValue,
                  let date = (try? Date(text, strategy: Date.ISO8601FormatStyle()))
                      ?? (try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))) else {
                throw .invalidActivity("\(keyPath) holds a $date that is not ISO 8601.",
                                       fix: "Write dates like 2026-11-30T12:00:00Z, or as seconds since 1970.")
            }
            return .date(date.timeIntervalSince1970)
        default:
            throw .invalidActivity("\(keyPath) uses the unknown typed key \(key).",
                                   fix: "Only $data and $date are understood; rename keys that start with $.")
        }
    }

    public var json: JSONValue {
        switch self {
        case let .string(text): .string(text)
        case let .integer(number): .integer(number)
        case let .double(number): .double(number)
        case let .bool(flag): .bool(flag)
        case let .data(raw): .object(["$data": .string(Data(raw).base64EncodedString())])
        case let .date(seconds):
            .object(["$date": .string(Self.isoString(seconds))])
        case let .array(items): .array(items.map(\.json))
        case let .dictionary(fields): .object(fields.mapValues(\.json))
        }
    }
}
