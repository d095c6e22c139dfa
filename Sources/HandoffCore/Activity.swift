import Foundation

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

    private func validateFields() throws(HandoffError) {
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
    }

    public func isExpired(nowMillis: UInt64) -> Bool {
        if let expiresAtMillis { return expiresAtMillis <= nowMillis }
        return false
    }
}

// MARK: - Payload encoding (Docs/PROTOCOL.md, "Activity payload")

extension Activity {
    public static let payloadVersion: UInt8 = 1

    private enum Flag {
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
