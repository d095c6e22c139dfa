import HandoffCore

/// Reads one message's fields by name and type. A missing or mistyped field
/// throws with the message's name and the field's, so every request, reply and
/// event is decoded the same way. Requests fail with `invalid-request`; a reply
/// or event this client cannot read is `internal` (a version mismatch).
public struct Fields: Sendable {
    public let values: [String: JSONValue]
    let context: String
    let code: HandoffError.Code

    public init(_ value: JSONValue, context: String, code: HandoffError.Code = .invalidRequest) throws(HandoffError) {
        guard let values = value.objectValue else { throw Self.failure(code, "\(context) is not a JSON object.") }
        self.init(values, context: context, code: code)
    }

    init(_ values: [String: JSONValue], context: String, code: HandoffError.Code) {
        self.values = values
        self.context = context
        self.code = code
    }

    public subscript(key: String) -> JSONValue? {
        guard let value = values[key], value != .null else { return nil }
        return value
    }

    static func failure(_ code: HandoffError.Code, _ message: String) -> HandoffError {
        code == .invalidRequest
            ? HandoffError(code, message, fix: "See Docs/LOCAL-API.md for each op's parameters.")
            : HandoffError(code, "handoffd sent a message this client cannot read: \(message)",
                           fix: "Make sure the client and handoffd are the same version.")
    }

    func missing(_ key: String, _ kind: String) -> HandoffError {
        Self.failure(code, "\(context) needs \"\(key)\" (\(kind)).")
    }

    public func string(_ key: String, _ kind: String = "a string") throws(HandoffError) -> String {
        guard let text = try optionalString(key, kind) else { throw missing(key, kind) }
        return text
    }

    public func optionalString(_ key: String, _ kind: String = "a string") throws(HandoffError) -> String? {
        guard let value = self[key] else { return nil }
        guard let text = value.stringValue else { throw missing(key, kind) }
        return text
    }

    public func integer(_ key: String, _ kind: String = "an integer") throws(HandoffError) -> Int64 {
        guard let number = try optionalInteger(key, kind) else { throw missing(key, kind) }
        return number
    }

    public func optionalInteger(_ key: String, _ kind: String = "an integer") throws(HandoffError) -> Int64? {
        guard let value = self[key] else { return nil }
        guard let number = value.integerValue else { throw missing(key, kind) }
        return number
    }

    public func double(_ key: String) throws(HandoffError) -> Double {
        guard let number = self[key]?.doubleValue else { throw missing(key, "a number") }
        return number
    }

    public func bool(_ key: String, default fallback: Bool? = nil) throws(HandoffError) -> Bool {
        guard let value = self[key] else {
            guard let fallback else { throw missing(key, "true or false") }
            return fallback
        }
        guard let flag = value.boolValue else { throw missing(key, "true or false") }
        return flag
    }

    public func strings(_ key: String, _ kind: String = "a list of strings") throws(HandoffError) -> [String] {
        guard let items = self[key]?.arrayValue else { throw missing(key, kind) }
        var texts: [String] = []
        for item in items {
            guard let text = item.stringValue else { throw missing(key, kind) }
            texts.append(text)
        }
        return texts
    }

    public func object(_ key: String, _ kind: String) throws(HandoffError) -> Fields {
        guard let value = self[key]?.objectValue else { throw missing(key, kind) }
        return Fields(value, context: "\(context).\(key)", code: code)
    }

    public func error(_ key: String) throws(HandoffError) -> HandoffError {
        let fields = try object(key, "an error: {code, message, fix}")
        guard let code = HandoffError.Code(rawValue: try fields.string("code")) else {
            throw Self.failure(self.code, "\(context).\(key) has an unknown error code.")
        }
        return HandoffError(code, try fields.string("message"), fix: try fields.string("fix"))
    }
}

/// A message part with one JSON form, read and written by the same Codable type through
/// `JSONValueCoding` (no hand-written reader and writer pairs).
public protocol JSONCodable: Codable, Equatable, Sendable {}

extension JSONCodable {
    public var json: JSONValue { JSONValueCoding.encode(self) }

    public init(json: JSONValue, context: String, code: HandoffError.Code = .internal) throws(HandoffError) {
        self = try JSONValueCoding.decode(Self.self, from: json, context: context, code: code)
    }

    /// From a message already read as fields (an event's), with its context and error code.
    public init(fields: Fields) throws(HandoffError) {
        try self.init(json: .object(fields.values), context: fields.context, code: fields.code)
    }
}

extension [String: JSONValue] {
    /// Adds `value` under `key` only when it is present: optional fields are left out, not null.
    mutating func put(_ key: String, _ value: JSONValue?) {
        if let value { self[key] = value }
    }
}
