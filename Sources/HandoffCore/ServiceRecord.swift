/// What `handoffd` publishes as a `_handoff._tcp` mDNS service. Nothing in it
/// names the device, the user or the activity: the instance name and `id`
/// carry a rotating token that only devices trusting this one can recognise
/// (Docs/PROTOCOL.md, "mDNS").
public struct ServiceRecord: Equatable, Sendable {
    public static let serviceType = "_handoff._tcp"
    public static let protocolVersion = 1
    /// Tokens rotate this often; receivers try the previous, current and next period.
    public static let rotationSeconds: UInt64 = 900
    public static let instancePrefix = "handoff-"
    /// RFC 6763: one TXT string is at most 255 bytes; we need far fewer.
    public static let maximumTXTStringBytes = 255

    public var version: Int
    /// 16 characters of Crockford base32 (see `DiscoveryToken`).
    public var token: String
    /// What this daemon speaks beside the transfer socket: `udp` = accepts
    /// unicast announcements on the service port over UDP.
    public var capabilities: [String]

    public init(version: Int = ServiceRecord.protocolVersion, token: String, capabilities: [String] = ["udp"]) {
        self.version = version
        self.token = token
        self.capabilities = capabilities
    }

    public var instanceName: String { Self.instancePrefix + token.lowercased() }

    public var txt: [String] {
        ["v=\(version)", "id=\(token)", "caps=\(capabilities.joined(separator: ","))"]
    }

    /// Parses TXT strings from the network. Unknown keys are ignored (newer
    /// peers may add some); a missing or malformed `v` or `id` is refused.
    public init(txt: [String]) throws(WireError) {
        var fields: [String: String] = [:]
        for entry in txt {
            guard entry.utf8.count <= Self.maximumTXTStringBytes else {
                throw .tooLong(field: "TXT string", length: entry.utf8.count, limit: Self.maximumTXTStringBytes)
            }
            guard let equals = entry.firstIndex(of: "=") else { continue }
            let key = entry[..<equals].lowercased()
            // RFC 6763 6.4: only the first occurrence of a key counts.
            if fields[key] == nil { fields[key] = String(entry[entry.index(after: equals)...]) }
        }
        guard let versionText = fields["v"], let version = Int(versionText) else {
            throw .invalidValue("TXT record has no version")
        }
        guard version == Self.protocolVersion else { throw .unsupportedVersion(UInt8(clamping: version)) }
        guard let token = fields["id"], token.count == 16, DeviceID.normalize(token) == token else {
            throw .invalidValue("TXT record has no valid id")
        }
        self.init(version: version, token: token,
                  capabilities: (fields["caps"] ?? "").split(separator: ",").map(String.init))
    }

    public static func epoch(wallClockMillis: UInt64) -> UInt64 { wallClockMillis / 1000 / rotationSeconds }
}
