import FoundationEssentials
import Glibc

/// What an app offers to continue elsewhere, with NSUserActivity's fields.
public struct Activity: Equatable, Sendable {
    /// Reverse-DNS, e.g. `org.example.reader.document`.
    public var type: String
    public var title: String
    public var userInfo: [String: PropertyListValue]
    public var targetContentIdentifier: String?
    /// http or https only, as Apple allows for webpageURL.
    public var webpageURL: String?
    /// Milliseconds since 1970; nil means the activity lasts until resigned.
    public var expiresAtMillis: UInt64?
    /// Bumped by the daemon on every publish; receivers refuse anything not newer.
    public var sequence: UInt64
    /// The continuing app may open a byte stream back to this app (Docs/APPS.md, "Continuation streams").
    public var supportsContinuationStreams: Bool

    public init(type: String, title: String, userInfo: [String: PropertyListValue] = [:],
                targetContentIdentifier: String? = nil, webpageURL: String? = nil,
                expiresAtMillis: UInt64? = nil, sequence: UInt64 = 0, supportsContinuationStreams: Bool = false) {
        self.type = type
        self.title = title
        self.userInfo = userInfo
        self.targetContentIdentifier = targetContentIdentifier
        self.webpageURL = webpageURL
        self.expiresAtMillis = expiresAtMillis
        self.sequence = sequence
        self.supportsContinuationStreams = supportsContinuationStreams
    }
}

/// Hard limits, enforced at publish time and again when decoding. Docs/PROTOCOL.md lists them.
public enum ActivityLimits {
    public static let typeBytes = 128
    public static let titleBytes = 256
    public static let contentIdentifierBytes = 256
    public static let webpageURLBytes = 2048
    /// Encoded userInfo. Far above Apple's guidance because the payload travels
    /// over a direct socket after accept, never in an advertisement.
    public static let userInfoBytes = 64 * 1024 * 1024
    /// Apple's guidance for userInfo; above it the CLI warns.
    public static let recommendedUserInfoBytes = 3 * 1024
    /// The whole encoded payload: userInfo plus the fixed fields.
    public static let payloadBytes = userInfoBytes + 8 * 1024
}

extension Activity {
    /// Checks every field; the error names the field and says how to fix it.
    public func validate() throws(HandoffError) {
        try validateFields()
        try PropertyListValue.dictionary(userInfo).validate()
        try Self.checkUserInfoSize(encodedUserInfoSize)
    }

    static func checkUserInfoSize(_ size: Int) throws(HandoffError) {
        guard size <= ActivityLimits.userInfoBytes else {
            throw .init(.payloadTooLarge,
                        "userInfo encodes to \(size) bytes, over the hard limit of \(ActivityLimits.userInfoBytes).",
                        fix: "Put large content in a file or URL and send its location in userInfo.")
        }
    }

    func validateFields() throws(HandoffError) {
        try Self.validateType(type)
        try Self.checkText(title, field: "title", limit: ActivityLimits.titleBytes)
        if let targetContentIdentifier {
            try Self.checkText(targetContentIdentifier, field: "targetContentIdentifier",
                               limit: ActivityLimits.contentIdentifierBytes)
        }
        if let webpageURL { try Self.validateWebpageURL(webpageURL) }
    }

    public var encodedUserInfoSize: Int { PropertyListValue.dictionary(userInfo).encoded.count }

    public static func validateType(_ type: String) throws(HandoffError) {
        let fix = "Use a reverse-DNS name such as org.example.reader.document (letters, digits, '-' and '_', at least two labels)."
        guard !type.isEmpty, type.utf8.count <= ActivityLimits.typeBytes else {
            throw .invalidActivity("The activity type must be 1 to \(ActivityLimits.typeBytes) bytes.", fix: fix)
        }
        let labels = type.split(separator: ".", omittingEmptySubsequences: false)
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")
        guard labels.count >= 2,
              labels.allSatisfy({ !$0.isEmpty && $0.count <= 63 && $0.allSatisfy(allowed.contains) }),
              labels[0].first!.isLetter
        else {
            throw .invalidActivity("The activity type '\(type)' is not reverse-DNS.", fix: fix)
        }
    }

    static func checkText(_ text: String, field: String, limit: Int) throws(HandoffError) {
        guard text.utf8.count <= limit else {
            throw .invalidActivity("\(field) is \(text.utf8.count) bytes, over the limit of \(limit).",
                                   fix: "Shorten \(field).")
        }
        guard !containsUnsafeCharacters(text) else {
            throw .invalidActivity("\(field) contains control, line-separator or bidirectional-override characters.",
                                   fix: "Remove newlines, tabs and other invisible control characters from \(field).")
        }
    }

    /// `text` as a title can hold it: each unsafe character (below) becomes a space, and it is
    /// cut at a character boundary within `limit` bytes. For titles taken from elsewhere (a
    /// web page's, a file's name), which are no reason not to offer the activity.
    public static func displayableTitle(_ text: String, limit: Int = ActivityLimits.titleBytes) -> String {
        var result = ""
        var used = 0
        for character in text {
            let safe = containsUnsafeCharacters(String(character)) ? " " : character
            used += safe.utf8.count
            guard used <= limit else { break }
            result.append(safe)
        }
        return result
    }

    /// Characters that let text shown by a peer rewrite or reorder a terminal
    /// line: C0/C1 controls, line and paragraph separators, bidi overrides.
    public static func containsUnsafeCharacters(_ text: String) -> Bool {
        text.unicodeScalars.contains { scalar in
            switch scalar.properties.generalCategory {
            case .control, .lineSeparator, .paragraphSeparator: return true
            default: return (0x202A...0x202E).contains(scalar.value) || (0x2066...0x2069).contains(scalar.value)
            }
        }
    }

    public static func validateWebpageURL(_ text: String) throws(HandoffError) {
        try checkText(text, field: "webpageURL", limit: ActivityLimits.webpageURLBytes)
        guard !text.contains(where: \.isWhitespace), let url = URL(string: text), let scheme = url.scheme?.lowercased(),
              scheme == "http" || scheme == "https", let host = url.host, !host.isEmpty,
              (url.port.map { (1...65535).contains($0) } ?? true)
        else {
            throw .invalidActivity("webpageURL '\(text)' is not an http or https URL.",
                                   fix: "Give an absolute http:// or https:// URL; other schemes belong in userInfo.")
        }
        if let refusal = WebAddress.refusal(text) {
            throw .invalidActivity("webpageURL is refused: \(refusal).",
                                   fix: "Give the page's public address, with no user name before the host.")
        }
    }

    public func isExpired(nowMillis: UInt64) -> Bool {
        if let expiresAtMillis { return expiresAtMillis <= nowMillis }
        return false
    }
}

// MARK: - Payload encoding (Docs/PROTOCOL.md, "Activity payload")

extension Activity {
    public static let payloadVersion: UInt8 = 1

    enum Flag {
        static let contentIdentifier: UInt8 = 0x01
        static let webpageURL: UInt8 = 0x02
        static let expiration: UInt8 = 0x04
        static let continuationStreams: UInt8 = 0x08
        static let known = contentIdentifier | webpageURL | expiration | continuationStreams
    }

    /// The bytes fetched after accept; their BLAKE2b digest is in the signed summary.
    public func encodedPayload() -> [UInt8] {
        var writer = ByteWriter()
        writer.write(Self.payloadVersion)
        writer.write(UInt8(type.utf8.count))
        writer.write(contentsOf: type.utf8)
        writer.write(UInt16(title.utf8.count))
        writer.write(contentsOf: title.utf8)
        var flags: UInt8 = 0
        if targetContentIdentifier != nil { flags |= Flag.contentIdentifier }
        if webpageURL != nil { flags |= Flag.webpageURL }
        if expiresAtMillis != nil { flags |= Flag.expiration }
        if supportsContinuationStreams { flags |= Flag.continuationStreams }
        writer.write(flags)
        if let targetContentIdentifier {
            writer.write(UInt16(targetContentIdentifier.utf8.count))
            writer.write(contentsOf: targetContentIdentifier.utf8)
        }
        if let webpageURL {
            writer.write(UInt16(webpageURL.utf8.count))
            writer.write(contentsOf: webpageURL.utf8)
        }
        if let expiresAtMillis { writer.write(expiresAtMillis) }
        writer.write(sequence)
        PropertyListValue.dictionary(userInfo).encode(into: &writer)
        return writer.bytes
    }

    /// Decodes and validates a payload. Throws on anything a publisher could not have produced.
    public init(payload: [UInt8]) throws(HandoffError) {
        guard payload.count <= ActivityLimits.payloadBytes else {
            throw .init(.payloadTooLarge, "The payload is \(payload.count) bytes, over the limit of \(ActivityLimits.payloadBytes).",
                        fix: "Ask the sender to shrink the activity's userInfo.")
        }
        var reader = ByteReader(payload)
        var userInfoStart = 0
        do {
            let version = try reader.readUInt8()
            guard version == Self.payloadVersion else { throw WireError.unsupportedVersion(version) }
            let type = try reader.readUTF8(Int(try reader.readUInt8()))
            let title = try reader.readUTF8(Int(try reader.readUInt16BE()))
            let flags = try reader.readUInt8()
            guard flags & ~Flag.known == 0 else {
                throw WireError.invalidValue("unknown payload flags")
            }
            let contentIdentifier = flags & Flag.contentIdentifier != 0
                ? try reader.readUTF8(Int(try reader.readUInt16BE())) : nil
            let url = flags & Flag.webpageURL != 0 ? try reader.readUTF8(Int(try reader.readUInt16BE())) : nil
            let expiration = flags & Flag.expiration != 0 ? try reader.readUInt64BE() : nil
            let sequence = try reader.readUInt64BE()
            userInfoStart = reader.offset
            guard case let .dictionary(userInfo) = try PropertyListValue(from: &reader) else {
                throw WireError.invalidValue("userInfo is not a dictionary")
            }
            try reader.expectEnd()
            self.init(type: type, title: title, userInfo: userInfo, targetContentIdentifier: contentIdentifier,
                      webpageURL: url, expiresAtMillis: expiration, sequence: sequence,
                      supportsContinuationStreams: flags & Flag.continuationStreams != 0)
        } catch let error as WireError {
            throw .payloadInvalid(error.description)
        } catch {
            throw .payloadInvalid("\(error)")
        }
        // The decoder already bounded depth and key lengths and refused non-finite
        // numbers; the userInfo's size is what it consumed, so nothing is re-encoded.
        try validateFields()
        try Self.checkUserInfoSize(payload.count - userInfoStart)
    }
}

// MARK: - Payload scan (the receiver's check, without building userInfo)

/// An activity's fixed fields: read from a payload whose userInfo was checked
/// but not built (what the daemon needs to route a continuation without holding
/// a second, decoded copy of a large payload), and what the local API carries in
/// JSON when the payload travels by descriptor or not at all (HandoffAPI gives it
/// its JSON form).
public struct ActivityHeader: Equatable, Sendable {
    public func isExpired(nowMillis: UInt64) -> Bool {
        expiresAtMillis.map { $0 <= nowMillis } ?? false
    }

    public var type: String
    public var title: String
    public var targetContentIdentifier: String?
    public var webpageURL: String?
    public var expiresAtMillis: UInt64?
    public var sequence: UInt64
    public var supportsContinuationStreams: Bool = false
    /// Where the encoded userInfo starts in the payload, and its size; 0 for a header
    /// that did not come from a payload (a built activity's, or one read from JSON).
    public var userInfoOffset: Int
    public var userInfoBytes: Int

    public init(type: String, title: String, targetContentIdentifier: String? = nil, webpageURL: String? = nil,
                expiresAtMillis: UInt64? = nil, sequence: UInt64, supportsContinuationStreams: Bool = false,
                userInfoOffset: Int = 0, userInfoBytes: Int = 0) {
        self.type = type
        self.title = title
        self.targetContentIdentifier = targetContentIdentifier
        self.webpageURL = webpageURL
        self.expiresAtMillis = expiresAtMillis
        self.sequence = sequence
        self.supportsContinuationStreams = supportsContinuationStreams
        self.userInfoOffset = userInfoOffset
        self.userInfoBytes = userInfoBytes
    }

    /// A built activity's fixed fields.
    public init(_ activity: Activity) {
        self.init(type: activity.type, title: activity.title, targetContentIdentifier: activity.targetContentIdentifier,
                  webpageURL: activity.webpageURL, expiresAtMillis: activity.expiresAtMillis, sequence: activity.sequence,
                  supportsContinuationStreams: activity.supportsContinuationStreams)
    }
}

extension Activity {
    /// Checks a payload exactly as `init(payload:)` does (limits, depth, value count,
    /// UTF-8, finite numbers, key order) and throws the same error for the same
    /// input, but builds no userInfo value: it walks the encoding in place.
    public static func scanPayload(_ payload: UnsafeRawBufferPointer) throws(HandoffError) -> ActivityHeader {
        guard payload.count <= ActivityLimits.payloadBytes else {
            throw .init(.payloadTooLarge, "The payload is \(payload.count) bytes, over the limit of \(ActivityLimits.payloadBytes).",
                        fix: "Ask the sender to shrink the activity's userInfo.")
        }
        var cursor = PayloadCursor(payload)
        let header: ActivityHeader
        do {
            let version = try cursor.readUInt8()
            guard version == Self.payloadVersion else { throw WireError.unsupportedVersion(version) }
            let type = try cursor.readUTF8(Int(try cursor.readUInt8()))
            let title = try cursor.readUTF8(Int(try cursor.readUInt16BE()))
            let flags = try cursor.readUInt8()
            guard flags & ~Flag.known == 0 else {
                throw WireError.invalidValue("unknown payload flags")
            }
            let contentIdentifier = flags & Flag.contentIdentifier != 0
                ? try cursor.readUTF8(Int(try cursor.readUInt16BE())) : nil
            let url = flags & Flag.webpageURL != 0 ? try cursor.readUTF8(Int(try cursor.readUInt16BE())) : nil
            let expiration = flags & Flag.expiration != 0 ? try cursor.readUInt64BE() : nil
            let sequence = try cursor.readUInt64BE()
            let userInfoStart = cursor.offset
            guard try PropertyListValue.scan(&cursor) == .dictionary else {
                throw WireError.invalidValue("userInfo is not a dictionary")
            }
            try cursor.expectEnd()
            header = ActivityHeader(type: type, title: title, targetContentIdentifier: contentIdentifier, webpageURL: url,
                                    expiresAtMillis: expiration, sequence: sequence,
                                    supportsContinuationStreams: flags & Flag.continuationStreams != 0,
                                    userInfoOffset: userInfoStart, userInfoBytes: payload.count - userInfoStart)
        } catch let error as WireError {
            throw .payloadInvalid(error.description)
        } catch {
            throw .payloadInvalid("\(error)")
        }
        let fields = Activity(type: header.type, title: header.title, targetContentIdentifier: header.targetContentIdentifier,
                              webpageURL: header.webpageURL, expiresAtMillis: header.expiresAtMillis, sequence: header.sequence)
        try fields.validateFields()
        try checkUserInfoSize(header.userInfoBytes)
        return header
    }
}

/// ByteReader's reads and errors over borrowed memory (a mapped payload), for the scan.
struct PayloadCursor {
    let bytes: UnsafeRawBufferPointer
    private(set) var offset = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    var remaining: Int { bytes.count - offset }

    private func require(_ count: Int) throws(WireError) {
        guard count >= 0, remaining >= count else { throw .truncated(needed: count, available: remaining) }
    }

    mutating func readUInt8() throws(WireError) -> UInt8 {
        try require(1)
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func readUInt16BE() throws(WireError) -> UInt16 { UInt16(truncatingIfNeeded: try readBigEndian(2)) }
    mutating func readUInt32BE() throws(WireError) -> UInt32 { UInt32(truncatingIfNeeded: try readBigEndian(4)) }
    mutating func readUInt64BE() throws(WireError) -> UInt64 { try readBigEndian(8) }

    private mutating func readBigEndian(_ width: Int) throws(WireError) -> UInt64 {
        try require(width)
        var value: UInt64 = 0
        for index in offset..<(offset + width) { value = (value << 8) | UInt64(bytes[index]) }
        offset += width
        return value
    }

    /// Steps over `count` bytes, returning them in place.
    mutating func skip(_ count: Int) throws(WireError) -> UnsafeRawBufferPointer {
        try require(count)
        defer { offset += count }
        return UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)])
    }

    /// Checks `count` bytes are UTF-8 without making a String of them.
    mutating func skipUTF8(_ count: Int) throws(WireError) {
        guard UTF8Check.isValid(try skip(count)) else { throw .invalidText }
    }

    mutating func readUTF8(_ count: Int) throws(WireError) -> String {
        let raw = try skip(count)
        guard let text = String(validating: raw, as: UTF8.self) else { throw .invalidText }
        return text
    }

    func expectEnd() throws(WireError) {
        guard remaining == 0 else { throw .trailingBytes(remaining) }
    }
}

/// Well-formed UTF-8 (Unicode's table 3-7: no overlongs, surrogates or values past
/// U+10FFFF), what `String(validating:)` accepts, checked in place and eight
/// ASCII bytes at a time.
enum UTF8Check {
    static func isValid(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let count = bytes.count
        var index = 0
        while index < count {
            // ASCII runs, a word at a time.
            while index + 8 <= count, bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
                index += 8
            }
            guard index < count else { break }
            let lead = bytes[index]
            if lead < 0x80 {
                index += 1
                continue
            }
            let length: Int
            var low: UInt8 = 0x80
            var high: UInt8 = 0xBF
            switch lead {
            case 0xC2...0xDF: length = 2
            case 0xE0: length = 3; low = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED: length = 3; high = 0x9F
            case 0xF0: length = 4; low = 0x90
            case 0xF1...0xF3: length = 4
            case 0xF4: length = 4; high = 0x8F
            default: return false
            }
            guard index + length <= count else { return false }
            let second = bytes[index + 1]
            guard second >= low, second <= high else { return false }
            for next in (index + 2)..<(index + length) where bytes[next] & 0xC0 != 0x80 { return false }
            index += length
        }
        return true
    }
}

extension PropertyListValue {
    /// What a scanned value was, for the one check the caller needs (userInfo is a dictionary).
    enum ScannedKind: Equatable { case dictionary, other }

    /// Walks one encoded value as `init(from:)` decodes it, with the same checks in
    /// the same order (so the same error), building nothing but the keys of each
    /// dictionary (to refuse two keys that Swift would take as one).
    static func scan(_ cursor: inout PayloadCursor) throws(WireError) -> ScannedKind {
        var values = 0
        return try scan(&cursor, depth: 0, values: &values)
    }

    private static func scan(_ cursor: inout PayloadCursor, depth: Int, values: inout Int) throws(WireError) -> ScannedKind {
        guard depth < maximumDepth else { throw .nestingTooDeep(limit: maximumDepth) }
        values += 1
        guard values <= maximumValues else { throw tooManyWireValues }
        let rawTag = try cursor.readUInt8()
        guard let tag = Tag(rawValue: rawTag) else { throw .invalidValue("unknown value tag \(rawTag)") }
        switch tag {
        case .string:
            try cursor.skipUTF8(Int(try cursor.readUInt32BE()))
        case .integer:
            _ = try cursor.readUInt64BE()
        case .double:
            guard Double(bitPattern: try cursor.readUInt64BE()).isFinite else { throw .invalidValue("non-finite double") }
        case .falseValue, .trueValue:
            break
        case .data:
            _ = try cursor.skip(Int(try cursor.readUInt32BE()))
        case .date:
            guard Double(bitPattern: try cursor.readUInt64BE()).isFinite else { throw .invalidValue("non-finite date") }
        case .array:
            let count = Int(try cursor.readUInt32BE())
            guard count <= cursor.remaining else { throw .truncated(needed: count, available: cursor.remaining) }
            guard count <= maximumValues - values else { throw tooManyWireValues }
            for _ in 0..<count { _ = try scan(&cursor, depth: depth + 1, values: &values) }
        case .dictionary:
            let count = Int(try cursor.readUInt32BE())
            guard count <= cursor.remaining / 3 else { throw .truncated(needed: count * 3, available: cursor.remaining) }
            guard count <= maximumValues - values else { throw tooManyWireValues }
            var keys = Set<String>()
            var previousKey: UnsafeRawBufferPointer?
            for _ in 0..<count {
                let keyLength = Int(try cursor.readUInt16BE())
                guard keyLength <= maximumKeyBytes else {
                    throw .tooLong(field: "dictionary key", length: keyLength, limit: maximumKeyBytes)
                }
                let keyBytes = try cursor.skip(keyLength)
                guard let key = String(validating: keyBytes, as: UTF8.self) else { throw .invalidText }
                if let previousKey, !previousKey.lexicographicallyPrecedes(keyBytes) {
                    throw .invalidValue("dictionary keys out of order or repeated")
                }
                previousKey = keyBytes
                guard keys.insert(key).inserted else { throw .invalidValue("dictionary keys equal after Unicode normalization") }
                _ = try scan(&cursor, depth: depth + 1, values: &values)
            }
            return .dictionary
        }
        return .other
    }
}

// MARK: - JSON form used by the local API

extension Activity {
    public var json: JSONValue {
        var fields: [String: JSONValue] = [
            "type": .string(type),
            "title": .string(title),
            "userInfo": PropertyListValue.dictionary(userInfo).json,
            "sequence": .integer(Int64(clamping: sequence)),
        ]
        if let targetContentIdentifier { fields["targetContentIdentifier"] = .string(targetContentIdentifier) }
        if let webpageURL { fields["webpageURL"] = .string(webpageURL) }
        if let expiresAtMillis { fields["expiresAtMillis"] = .integer(Int64(clamping: expiresAtMillis)) }
        // Only when set, so activities without streams read as before.
        if supportsContinuationStreams { fields["supportsContinuationStreams"] = true }
        return .object(fields)
    }

    /// Reads an activity from the local API's JSON. Sequence is assigned by the daemon.
    public init(json: JSONValue) throws(HandoffError) {
        guard let fields = json.objectValue else {
            throw .invalidActivity("The activity must be a JSON object.", fix: "See Docs/LOCAL-API.md, 'publish'.")
        }
        let known: Set = ["type", "title", "userInfo", "targetContentIdentifier", "webpageURL", "expiresAtMillis", "sequence",
                          "supportsContinuationStreams"]
        if let unknown = fields.keys.sorted().first(where: { !known.contains($0) }) {
            throw .invalidActivity("The activity has an unknown field '\(unknown)'.", fix: "Remove it; known fields: \(known.sorted().joined(separator: ", ")).")
        }
        guard let type = fields["type"]?.stringValue else {
            throw .invalidActivity("The activity has no type.", fix: "Give a reverse-DNS type such as org.example.reader.document.")
        }
        let title = try Self.optionalString(fields, "title") ?? ""
        var userInfo: [String: PropertyListValue] = [:]
        if let info = fields["userInfo"] {
            guard case let .dictionary(values) = try PropertyListValue(json: info) else {
                throw .invalidActivity("userInfo must be a JSON object.", fix: "Wrap the values in {...}.")
            }
            userInfo = values
        }
        var expiration: UInt64?
        if let value = fields["expiresAtMillis"] {
            guard let millis = value.integerValue, millis > 0 else {
                throw .invalidActivity("expiresAtMillis must be a positive integer.", fix: "Give milliseconds since 1970.")
            }
            expiration = UInt64(millis)
        }
        var streams = false
        if let value = fields["supportsContinuationStreams"], value != .null {
            guard let flag = value.boolValue else {
                throw .invalidActivity("supportsContinuationStreams must be true or false.", fix: "Give a JSON boolean.")
            }
            streams = flag
        }
        self.init(type: type, title: title, userInfo: userInfo,
                  targetContentIdentifier: try Self.optionalString(fields, "targetContentIdentifier"),
                  webpageURL: try Self.optionalString(fields, "webpageURL"),
                  expiresAtMillis: expiration,
                  sequence: UInt64(clamping: fields["sequence"]?.integerValue ?? 0),
                  supportsContinuationStreams: streams)
    }

    private static func optionalString(_ fields: [String: JSONValue], _ key: String) throws(HandoffError) -> String? {
        guard let value = fields[key], value != .null else { return nil }
        guard let text = value.stringValue else {
            throw .invalidActivity("\(key) must be a string.", fix: "Quote the value.")
        }
        return text
    }
}
