import FoundationEssentials
import Glibc

/// A JSON document as a value. The local API and the CLI speak JSON; keeping it
/// as an enum (rather than `Any`) keeps integers, doubles and booleans apart.
public indirect enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case integer(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public subscript(key: String) -> JSONValue? {
        if case let .object(fields) = self { return fields[key] }
        return nil
    }

    public var stringValue: String? {
        if case let .string(text) = self { return text }
        return nil
    }

    public var integerValue: Int64? {
        switch self {
        case let .integer(number): number
        case let .double(number) where number.rounded() == number && abs(number) < 9e15: Int64(number)
        default: nil
        }
    }

    public var doubleValue: Double? {
        switch self {
        case let .integer(number): Double(number)
        case let .double(number): number
        default: nil
        }
    }

    public var boolValue: Bool? {
        if case let .bool(flag) = self { return flag }
        return nil
    }

    public var arrayValue: [JSONValue]? {
        if case let .array(items) = self { return items }
        return nil
    }

    public var objectValue: [String: JSONValue]? {
        if case let .object(fields) = self { return fields }
        return nil
    }
}

// Decoded from a value the bounded parser already made (HandoffAPI's JSONValueCoding,
// which hands it over whole), never from text: `parse` is what bounds depth and size.
extension JSONValue: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let flag = try? container.decode(Bool.self) {
            self = .bool(flag)
        } else if let number = try? container.decode(Int64.self) {
            self = .integer(number)
        } else if let number = try? container.decode(Double.self) {
            self = .double(number)
        } else if let text = try? container.decode(String.self) {
            self = .string(text)
        } else if let items = try? container.decode([JSONValue].self) {
            self = .array(items)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }


    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case let .bool(flag): try container.encode(flag)
        case let .integer(number): try container.encode(number)
        case let .double(number): try container.encode(number)
        case let .string(text): try container.encode(text)
        case let .array(items): try container.encode(items)
        case let .object(fields): try container.encode(fields)
        }
    }
}

extension JSONValue {
    /// Deeper documents are refused while parsing, so a line of brackets costs
    /// microseconds and the recursion stays shallow. Room for a userInfo at its
    /// own depth limit (PropertyListValue.maximumDepth) inside a request.
    public static let maximumDepth = 64
    /// Values in one document (every scalar, array and object counts one),
    /// counted while parsing, before each is stored: a hostile line cannot make
    /// the parser hold more than about 30 MB of values. Room for a userInfo at
    /// its own limit (PropertyListValue.maximumValues, twice for `$data`/`$date`).
    public static let maximumValues = 1 << 18

    /// Parses one JSON document (RFC 8259, UTF-8, no duplicate keys) within
    /// `maximumDepth` and `maximumValues`. Errors are phrased for people.
    public static func parse(_ text: String) throws(HandoffError) -> JSONValue {
        try parse(Data(text.utf8))
    }

    public static func parse(_ data: Data) throws(HandoffError) -> JSONValue {
        let result = data.withUnsafeBytes { raw -> Result<JSONValue, JSONParser.Failure> in
            var parser = JSONParser(input: raw.bindMemory(to: UInt8.self))
            do throws(JSONParser.Failure) {
                return .success(try parser.document())
            } catch {
                return .failure(error)
            }
        }
        switch result {
        case let .success(value):
            return value
        case .failure(.syntax):
            throw HandoffError.invalidRequest("not valid JSON")
        case .failure(.duplicateKey):
            throw HandoffError.invalidRequest("not valid JSON: an object repeats a key")
        case .failure(.numberOutOfRange):
            throw HandoffError.invalidRequest("not valid JSON: a number no double holds (such as 1e400)")
        case .failure(.tooDeep):
            throw HandoffError(.invalidRequest, "The JSON is nested deeper than \(maximumDepth) levels, the limit.",
                               fix: "Flatten the structure (Docs/LOCAL-API.md, 'Limits').")
        case .failure(.tooManyValues):
            throw HandoffError(.invalidRequest, "The JSON holds more than \(maximumValues) values, the limit.",
                               fix: "Send fewer values; put bulk content in a string or $data (Docs/LOCAL-API.md, 'Limits').")
        }
    }

    /// Compact JSON on one line (no newline inside), keys sorted so output is stable.
    public func encodedLine() -> String {
        var writer = JSONWriter()
        writer.write(self)
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    /// Indented, keys sorted: for files and output people read.
    public func prettyPrinted() -> String {
        var writer = JSONWriter()
        writer.writeIndented(self)
        return String(decoding: writer.bytes, as: UTF8.self)
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
    public init(nilLiteral: ()) { self = .null }
}

extension HandoffError {
    /// `{"code", "message", "fix"}`, as the local API and `--json` output carry errors.
    public var json: JSONValue {
        ["code": .string(code.rawValue), "message": .string(message), "fix": .string(fix)]
    }
}

/// A recursive-descent JSON parser over UTF-8 bytes. Work is linear in the
/// input: every byte is looked at a bounded number of times, nesting and the
/// number of values are capped before anything is stored.
struct JSONParser {
    enum Failure: Error { case syntax, duplicateKey, numberOutOfRange, tooDeep, tooManyValues }

    let input: UnsafeBufferPointer<UInt8>
    var index = 0
    var values = 0

    init(input: UnsafeBufferPointer<UInt8>) {
        self.input = input
    }

    mutating func document() throws(Failure) -> JSONValue {
        let value = try parseValue(depth: 0)
        skipWhitespace()
        guard index == input.count else { throw .syntax }
        return value
    }

    private mutating func skipWhitespace() {
        while index < input.count {
            switch input[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func expect(_ byte: UInt8) throws(Failure) {
        guard index < input.count, input[index] == byte else { throw .syntax }
        index += 1
    }

    /// `depth` is the number of arrays and objects around this value.
    private mutating func parseValue(depth: Int) throws(Failure) -> JSONValue {
        skipWhitespace()
        guard index < input.count else { throw .syntax }
        values += 1
        guard values <= JSONValue.maximumValues else { throw .tooManyValues }
        switch input[index] {
        case UInt8(ascii: "{"):
            guard depth < JSONValue.maximumDepth else { throw .tooDeep }
            return try parseObject(depth: depth + 1)
        case UInt8(ascii: "["):
            guard depth < JSONValue.maximumDepth else { throw .tooDeep }
            return try parseArray(depth: depth + 1)
        case UInt8(ascii: "\""):
            return .string(try parseString())
        case UInt8(ascii: "t"):
            try literal("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try literal("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try literal("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return try parseNumber()
        default:
            throw .syntax
        }
    }

    private mutating func literal(_ word: StaticString) throws(Failure) {
        let count = word.utf8CodeUnitCount
        guard input.count - index >= count else { throw .syntax }
        for offset in 0..<count where input[index + offset] != word.utf8Start[offset] { throw .syntax }
        index += count
    }

    private mutating func parseArray(depth: Int) throws(Failure) -> JSONValue {
        index += 1
        var items: [JSONValue] = []
        skipWhitespace()
        if index < input.count, input[index] == UInt8(ascii: "]") {
            index += 1
            return .array(items)
        }
        while true {
            items.append(try parseValue(depth: depth))
            skipWhitespace()
            guard index < input.count else { throw .syntax }
            if input[index] == UInt8(ascii: "]") {
                index += 1
                return .array(items)
            }
            try expect(UInt8(ascii: ","))
        }
    }

    private mutating func parseObject(depth: Int) throws(Failure) -> JSONValue {
        index += 1
        var fields: [String: JSONValue] = [:]
        skipWhitespace()
        if index < input.count, input[index] == UInt8(ascii: "}") {
            index += 1
            return .object(fields)
        }
        while true {
            skipWhitespace()
            guard index < input.count, input[index] == UInt8(ascii: "\"") else { throw .syntax }
            let key = try parseString()
            skipWhitespace()
            try expect(UInt8(ascii: ":"))
            let value = try parseValue(depth: depth)
            // Parsers that keep the first or the last of two equal keys disagree
            // about what a request says; refuse it instead. Swift compares keys
            // by canonical equivalence, so "é" written two ways is one key too.
            guard fields.updateValue(value, forKey: key) == nil else { throw .duplicateKey }
            skipWhitespace()
            guard index < input.count else { throw .syntax }
            if input[index] == UInt8(ascii: "}") {
                index += 1
                return .object(fields)
            }
            try expect(UInt8(ascii: ","))
        }
    }

    /// At the opening quote. Raw bytes must be valid UTF-8 without control
    /// characters; escapes, including surrogate pairs, must be well formed.
    private mutating func parseString() throws(Failure) -> String {
        index += 1
        let start = index
        // Fast path: no escapes, the bytes are the string.
        while index < input.count {
            let byte = input[index]
            if byte == UInt8(ascii: "\"") {
                let raw = UnsafeBufferPointer(rebasing: input[start..<index])
                index += 1
                guard let text = String(validating: raw, as: UTF8.self) else { throw .syntax }
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            guard byte >= 0x20 else { throw .syntax }
            index += 1
        }
        var bytes = Array(input[start..<index])
        while index < input.count {
            let byte = input[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                guard let text = String(validating: bytes, as: UTF8.self) else { throw .syntax }
                return text
            case UInt8(ascii: "\\"):
                guard index < input.count else { throw .syntax }
                let escape = input[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): bytes.append(escape)
                case UInt8(ascii: "b"): bytes.append(0x08)
                case UInt8(ascii: "f"): bytes.append(0x0C)
                case UInt8(ascii: "n"): bytes.append(0x0A)
                case UInt8(ascii: "r"): bytes.append(0x0D)
                case UInt8(ascii: "t"): bytes.append(0x09)
                case UInt8(ascii: "u"): bytes.append(contentsOf: try unicodeEscape())
                default: throw .syntax
                }
            default:
                guard byte >= 0x20 else { throw .syntax }
                bytes.append(byte)
            }
        }
        throw .syntax
    }

    /// After `\u`: four hex digits, and a second `\uXXXX` for a surrogate pair.
    private mutating func unicodeEscape() throws(Failure) -> [UInt8] {
        let first = try hexQuad()
        var scalarValue = UInt32(first)
        if (0xD800..<0xDC00).contains(first) {
            try expect(UInt8(ascii: "\\"))
            try expect(UInt8(ascii: "u"))
            let second = try hexQuad()
            guard (0xDC00..<0xE000).contains(second) else { throw .syntax }
            scalarValue = 0x10000 + ((UInt32(first) - 0xD800) << 10) + (UInt32(second) - 0xDC00)
        }
        guard let scalar = Unicode.Scalar(scalarValue) else { throw .syntax }
        return Array(String(Character(scalar)).utf8)
    }

    private mutating func hexQuad() throws(Failure) -> UInt16 {
        guard input.count - index >= 4 else { throw .syntax }
        var value: UInt16 = 0
        for _ in 0..<4 {
            let byte = input[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw .syntax
            }
            value = value << 4 | UInt16(digit)
            index += 1
        }
        return value
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`. Without fraction or
    /// exponent and within Int64 it is an integer, otherwise a finite double.
    private mutating func parseNumber() throws(Failure) -> JSONValue {
        let start = index
        if input[index] == UInt8(ascii: "-") { index += 1 }
        guard index < input.count else { throw .syntax }
        if input[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            guard digits() > 0 else { throw .syntax }
        }
        var isInteger = true
        if index < input.count, input[index] == UInt8(ascii: ".") {
            index += 1
            isInteger = false
            guard digits() > 0 else { throw .syntax }
        }
        if index < input.count, input[index] == UInt8(ascii: "e") || input[index] == UInt8(ascii: "E") {
            index += 1
            isInteger = false
            if index < input.count, input[index] == UInt8(ascii: "+") || input[index] == UInt8(ascii: "-") { index += 1 }
            guard digits() > 0 else { throw .syntax }
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: input[start..<index]), as: UTF8.self)
        if isInteger, let number = Int64(text) { return .integer(number) }
        guard let number = Double(text) else { throw .syntax }
        guard number.isFinite else { throw .numberOutOfRange }
        return .double(number)
    }

    private mutating func digits() -> Int {
        let start = index
        while index < input.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(input[index]) { index += 1 }
        return index - start
    }
}
