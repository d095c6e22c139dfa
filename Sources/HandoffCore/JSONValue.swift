import Foundation

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

extension JSONValue: Codable {
    public init(from decoder: Decoder) throws {
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
    /// Parses one JSON document. Errors are phrased for people, not decoders.
    public static func parse(_ text: String) throws(HandoffError) -> JSONValue {
        try parse(Data(text.utf8))
    }

    public static func parse(_ data: Data) throws(HandoffError) -> JSONValue {
        do {
            return try JSONDecoder().decode(JSONValue.self, from: data)
        } catch {
            throw HandoffError.invalidRequest("not valid JSON")
        }
    }

    /// Compact JSON on one line (no newline inside), keys sorted so output is stable.
    public func encodedLine() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding a JSONValue cannot fail except for non-finite doubles, which
        // property lists reject before they get here.
        let data = (try? encoder.encode(self)) ?? Data("null".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    public func prettyPrinted() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        let data = (try? encoder.encode(self)) ?? Data("null".utf8)
        return String(decoding: data, as: UTF8.self)
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
