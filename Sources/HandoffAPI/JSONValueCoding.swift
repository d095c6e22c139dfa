import HandoffCore

/// Codable over the bounded `JSONValue`: every local API result and event is a Codable type,
/// written to and read from the value the bounded parser made (its limits stay the only
/// limits), never through Foundation's JSON coders. Optional fields that are nil are left out;
/// `null` reads as absent, as everywhere in the local API. A message that does not fit is a
/// `HandoffError` naming the message and the field (`Fields.failure`).
public enum JSONValueCoding {
    public static func encode(_ value: some Encodable) -> JSONValue {
        if let json = value as? JSONValue { return json }
        let encoder = ValueEncoder(codingPath: [])
        do {
            try value.encode(to: encoder)
        } catch {
            // Only a type's own encode(to:) can throw, and none here does.
            preconditionFailure("cannot encode \(type(of: value)): \(error)")
        }
        return encoder.storage.value
    }

    public static func decode<T: Decodable>(_ type: T.Type, from json: JSONValue, context: String,
                                            code: HandoffError.Code = .internal) throws(HandoffError) -> T {
        try decode(type, from: json, context: context, code: code, hiddenLevels: 0)
    }
}

extension JSONValueCoding {
    /// A tagged union (`Event`, `Request`, `HostMessage`) in its flat JSON form: the case's name
    /// under `tag` beside the case's fields. The enum's Codable is Swift's own (`{case: {fields}}`),
    /// so no case is written or read by hand; a case whose one value is unlabeled carries a struct
    /// whose fields are the case's (see `unlabeledValue`).
    public static func encode(_ value: some Encodable, tag: String) -> JSONValue {
        guard case let .object(outer) = encode(value), outer.count == 1, let (name, inner) = outer.first,
              case var .object(fields) = inner else {
            preconditionFailure("\(type(of: value)) is not an enum with Swift's own Codable")
        }
        fields[tag] = .string(name)
        return .object(fields)
    }

    /// Reads a tagged union's case named by `tag`; the caller has checked that the name is known.
    public static func decode<T: Decodable>(_ type: T.Type, from json: JSONValue, tag: String, context: String,
                                            code: HandoffError.Code = .internal) throws(HandoffError) -> T {
        guard case var .object(fields) = json, let name = fields.removeValue(forKey: tag)?.stringValue else {
            throw Fields.failure(code, "\(context) has no \"\(tag)\".")
        }
        // The case's own name is not a field of the message: errors name fields from the message's top.
        return try decode(type, from: [name: .object(fields)], context: context, code: code, hiddenLevels: 1)
    }

    static func decode<T: Decodable>(_ type: T.Type, from json: JSONValue, context: String, code: HandoffError.Code,
                                     hiddenLevels: Int) throws(HandoffError) -> T {
        do {
            return try T(from: ValueDecoder(value: json, codingPath: []))
        } catch let error as ValueDecodingError {
            let keys = error.keys.dropFirst(hiddenLevels)
            let path = keys.isEmpty ? context : "\(context).\(ValueDecodingError.dotted(keys))"
            throw Fields.failure(code, error.problem(at: path))
        } catch {
            throw Fields.failure(code, "\(context) cannot be read: \(error).")
        }
    }
}

/// The key Swift's synthesized Codable gives an enum case's unlabeled value. The one such value
/// of a case is written as the case's own fields, and read from them: `continued(ContinuedEvent)`
/// is `{"event": "continued", "acceptId": ...}`, not `{..., "_0": {...}}`.
private let unlabeledValue = "_0"

/// What went wrong, and where (dotted keys and [indices]).
struct ValueDecodingError: Error {
    var keys: [any CodingKey]
    var expected: String?

    init(_ codingPath: [any CodingKey], expected: String?) {
        keys = codingPath.filter { $0.stringValue != unlabeledValue || $0.intValue != nil }
        self.expected = expected
    }

    static func dotted(_ keys: ArraySlice<any CodingKey>) -> String {
        keys.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".").replacing(".[", with: "[")
    }

    func problem(at place: String) -> String {
        expected.map { "\(place) needs \($0)." } ?? "\(place) is missing."
    }
}

// MARK: - Encoding

/// The value being built: a reference, so nested containers write into their parent.
private final class EncodedBox {
    enum Kind {
        case single(JSONValue)
        case object([String: EncodedBox])
        case array([EncodedBox])
    }

    var kind: Kind = .single(.null)

    var value: JSONValue {
        switch kind {
        case let .single(value): value
        case let .object(fields): .object(fields.mapValues(\.value))
        case let .array(items): .array(items.map(\.value))
        }
    }
}

private struct ValueEncoder: Encoder {
    var storage = EncodedBox()
    var codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(codingPath: [any CodingKey], storage: EncodedBox = EncodedBox()) {
        self.codingPath = codingPath
        self.storage = storage
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if case .object = storage.kind {} else { storage.kind = .object([:]) }
        return KeyedEncodingContainer(KeyedEncoder<Key>(box: storage, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if case .array = storage.kind {} else { storage.kind = .array([]) }
        return UnkeyedEncoder(box: storage, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleEncoder(box: storage, codingPath: codingPath)
    }
}

/// Scalars as the local API writes them: integers as integers (UInt64 clamped to Int64), floating point as doubles.
private func scalar(_ value: some Encodable) -> JSONValue? {
    switch value {
    case let value as JSONValue: value
    case let value as Bool: .bool(value)
    case let value as String: .string(value)
    case let value as Double: .double(value)
    case let value as Float: .double(Double(value))
    case let value as Int: .integer(Int64(value))
    case let value as Int64: .integer(value)
    case let value as Int32: .integer(Int64(value))
    case let value as UInt64: .integer(Int64(clamping: value))
    case let value as UInt32: .integer(Int64(value))
    case let value as UInt16: .integer(Int64(value))
    case let value as UInt8: .integer(Int64(value))
    case let value as UInt: .integer(Int64(clamping: value))
    default: nil
    }
}

private func encoded(_ value: some Encodable, codingPath: [any CodingKey]) throws -> EncodedBox {
    let box = EncodedBox()
    if let json = scalar(value) {
        box.kind = .single(json)
    } else {
        try value.encode(to: ValueEncoder(codingPath: codingPath, storage: box))
    }
    return box
}

private struct KeyedEncoder<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let box: EncodedBox
    var codingPath: [any CodingKey]

    private func put(_ key: Key, _ child: EncodedBox) {
        guard case var .object(fields) = box.kind else { return }
        fields[key.stringValue] = child
        box.kind = .object(fields)
    }

    mutating func encodeNil(forKey key: Key) throws {
        let child = EncodedBox()
        put(key, child)
    }

    mutating func encode(_ value: some Encodable, forKey key: Key) throws {
        let child = try encoded(value, codingPath: codingPath + [key])
        if key.stringValue == unlabeledValue, key.intValue == nil, case let .object(fields) = child.kind,
           case var .object(own) = box.kind {
            own.merge(fields) { _, value in value }
            box.kind = .object(own)
            return
        }
        put(key, child)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        let child = EncodedBox()
        child.kind = .object([:])
        put(key, child)
        return KeyedEncodingContainer(KeyedEncoder<NestedKey>(box: child, codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let child = EncodedBox()
        child.kind = .array([])
        put(key, child)
        return UnkeyedEncoder(box: child, codingPath: codingPath + [key])
    }

    mutating func superEncoder() -> any Encoder { superEncoder(forKey: Key(stringValue: "super")!) }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        let child = EncodedBox()
        put(key, child)
        return ValueEncoder(codingPath: codingPath + [key], storage: child)
    }
}

private struct IndexKey: CodingKey {
    var intValue: Int?
    var stringValue: String { "\(intValue ?? 0)" }
    init(_ index: Int) { intValue = index }
    init?(stringValue: String) { nil }
    init?(intValue: Int) { self.intValue = intValue }
}

private struct UnkeyedEncoder: UnkeyedEncodingContainer {
    let box: EncodedBox
    var codingPath: [any CodingKey]
    var count: Int {
        if case let .array(items) = box.kind { return items.count }
        return 0
    }

    private func append(_ child: EncodedBox) {
        guard case var .array(items) = box.kind else { return }
        items.append(child)
        box.kind = .array(items)
    }

    mutating func encodeNil() throws { append(EncodedBox()) }

    mutating func encode(_ value: some Encodable) throws {
        append(try encoded(value, codingPath: codingPath + [IndexKey(count)]))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let child = EncodedBox()
        child.kind = .object([:])
        let path = codingPath + [IndexKey(count)]
        append(child)
        return KeyedEncodingContainer(KeyedEncoder<NestedKey>(box: child, codingPath: path))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let child = EncodedBox()
        child.kind = .array([])
        let path = codingPath + [IndexKey(count)]
        append(child)
        return UnkeyedEncoder(box: child, codingPath: path)
    }

    mutating func superEncoder() -> any Encoder {
        let child = EncodedBox()
        let path = codingPath + [IndexKey(count)]
        append(child)
        return ValueEncoder(codingPath: path, storage: child)
    }
}

private struct SingleEncoder: SingleValueEncodingContainer {
    let box: EncodedBox
    var codingPath: [any CodingKey]

    mutating func encodeNil() throws { box.kind = .single(.null) }

    mutating func encode(_ value: some Encodable) throws {
        box.kind = try encoded(value, codingPath: codingPath).kind
    }
}

// MARK: - Decoding

private struct ValueDecoder: Decoder {
    let value: JSONValue
    var codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard let fields = value.objectValue else { throw ValueDecodingError(codingPath, expected: "an object") }
        return KeyedDecodingContainer(KeyedDecoder<Key>(fields: fields, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard let items = value.arrayValue else { throw ValueDecodingError(codingPath, expected: "a list") }
        return UnkeyedDecoder(items: items, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleDecoder(value: value, codingPath: codingPath)
    }
}

/// A scalar of type `T` from `value`, or nil when `T` is not a scalar type.
private func decodeScalar<T>(_ type: T.Type, from value: JSONValue, codingPath: [any CodingKey]) throws -> T? {
    func need(_ kind: String) -> ValueDecodingError { ValueDecodingError(codingPath, expected: kind) }
    func integer() throws -> Int64 {
        guard let number = value.integerValue else { throw need("an integer") }
        return number
    }
    switch type {
    case is JSONValue.Type: return value as? T
    case is Bool.Type:
        guard let flag = value.boolValue else { throw need("true or false") }
        return flag as? T
    case is String.Type:
        guard let text = value.stringValue else { throw need("a string") }
        return text as? T
    case is Double.Type:
        guard let number = value.doubleValue else { throw need("a number") }
        return number as? T
    case is Int64.Type: return try integer() as? T
    case is Int.Type:
        guard let number = Int(exactly: try integer()) else { throw need("an integer in range") }
        return number as? T
    case is Int32.Type:
        guard let number = Int32(exactly: try integer()) else { throw need("an integer in range") }
        return number as? T
    case is UInt64.Type:
        guard let number = UInt64(exactly: try integer()) else { throw need("a non-negative integer") }
        return number as? T
    case is UInt32.Type:
        guard let number = UInt32(exactly: try integer()) else { throw need("an integer in range") }
        return number as? T
    case is UInt16.Type:
        guard let number = UInt16(exactly: try integer()) else { throw need("an integer in range") }
        return number as? T
    default: return nil
    }
}

private func decodeValue<T: Decodable>(_ type: T.Type, from value: JSONValue, codingPath: [any CodingKey]) throws -> T {
    if let scalar = try decodeScalar(type, from: value, codingPath: codingPath) { return scalar }
    return try T(from: ValueDecoder(value: value, codingPath: codingPath))
}

private struct KeyedDecoder<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let fields: [String: JSONValue]
    var codingPath: [any CodingKey]

    var allKeys: [Key] { fields.keys.compactMap(Key.init(stringValue:)) }

    /// null is absent, as everywhere in the local API.
    func contains(_ key: Key) -> Bool { fields[key.stringValue].map { $0 != .null } ?? false }

    private func present(_ key: Key) throws -> JSONValue {
        guard let value = fields[key.stringValue], value != .null else {
            throw ValueDecodingError(codingPath + [key], expected: nil)
        }
        return value
    }

    func decodeNil(forKey key: Key) throws -> Bool { !contains(key) }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        if key.stringValue == unlabeledValue, key.intValue == nil, fields[unlabeledValue] == nil {
            return try decodeValue(type, from: .object(fields), codingPath: codingPath + [key])
        }
        // A field that holds any JSON (proximity), or is written as null when empty, reads so when absent.
        if !contains(key) {
            if let null = JSONValue.null as? T { return null }
            if let field = type as? any AbsentAsNull.Type, let empty = field.empty as? T { return empty }
        }
        return try decodeValue(type, from: try present(key), codingPath: codingPath + [key])
    }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        guard contains(key) else { return nil }
        return try decode(type, forKey: key)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try ValueDecoder(value: try present(key), codingPath: codingPath + [key]).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try ValueDecoder(value: try present(key), codingPath: codingPath + [key]).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder { try superDecoder(forKey: Key(stringValue: "super")!) }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        ValueDecoder(value: fields[key.stringValue] ?? .null, codingPath: codingPath + [key])
    }
}

private struct UnkeyedDecoder: UnkeyedDecodingContainer {
    let items: [JSONValue]
    var codingPath: [any CodingKey]
    var currentIndex = 0
    var count: Int? { items.count }
    var isAtEnd: Bool { currentIndex >= items.count }

    init(items: [JSONValue], codingPath: [any CodingKey]) {
        self.items = items
        self.codingPath = codingPath
    }

    private mutating func next() throws -> (JSONValue, [any CodingKey]) {
        let path = codingPath + [IndexKey(currentIndex)]
        guard !isAtEnd else { throw ValueDecodingError(path, expected: nil) }
        defer { currentIndex += 1 }
        return (items[currentIndex], path)
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, items[currentIndex] == .null else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let (value, path) = try next()
        return try decodeValue(type, from: value, codingPath: path)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        let (value, path) = try next()
        return try ValueDecoder(value: value, codingPath: path).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let (value, path) = try next()
        return try ValueDecoder(value: value, codingPath: path).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder {
        let (value, path) = try next()
        return ValueDecoder(value: value, codingPath: path)
    }
}

private struct SingleDecoder: SingleValueDecodingContainer {
    let value: JSONValue
    var codingPath: [any CodingKey]

    func decodeNil() -> Bool { value == .null }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try decodeValue(type, from: value, codingPath: codingPath)
    }
}

/// A field of the local API that is written as `null` when it has no value, never left out:
/// scripts compare it (`list`'s offer, `status`'s current, `doctor`'s verdict). Absent reads as nil.
@propertyWrapper
public struct NullWhenEmpty<Value: Codable & Equatable & Sendable>: Codable, Equatable, Sendable, AbsentAsNull {
    public var wrappedValue: Value?

    public init(wrappedValue: Value?) { self.wrappedValue = wrappedValue }

    static var empty: Self { Self(wrappedValue: nil) }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        wrappedValue = container.decodeNil() ? nil : try container.decode(Value.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue { try container.encode(wrappedValue) } else { try container.encodeNil() }
    }
}

protocol AbsentAsNull {
    static var empty: Self { get }
}
