/// What `handoffd` publishes as a `_handoff._tcp` mDNS service. Nothing in it
/// names the device, the user or the activity: the instance name and `id`
/// carry a rotating token that only devices trusting this one can recognise
/// (Docs/PROTOCOL.md, "Discovery: mDNS through Avahi").
public struct ServiceRecord: Equatable, Sendable {
    public static let serviceType = "_handoff._tcp"
    public static let protocolVersion = 1
    /// Tokens rotate this often; receivers try the previous, current and next period.
    public static let rotationSeconds: UInt64 = 900
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

    /// The token alone: the service type already says what it is, and every peer's browse query
    /// carries every name it knows as a known answer, so each byte here is paid by every host
    /// on the link at each query (Docs/PROTOCOL.md, "Discovery: mDNS through Avahi"). Peers read the token from TXT `id`.
    public var instanceName: String { token.lowercased() }

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

/// The resource data of the records a DNS-SD service is made of (RFC 6763 section 4 and 6,
/// RFC 2782), in DNS wire format, for publishing them one by one (`AvahiDiscovery`) rather
/// than as avahi's whole service, whose shared `_services._dns-sd._udp` record is withdrawn and
/// re-announced by every host on the link each time a name changes.
public enum ServiceRecordData {
    /// A name from its labels: each a length byte and its bytes, then the root. Nil when a
    /// label is empty or longer than 63 bytes, or the name longer than 255.
    public static func name(_ labels: [String]) -> [UInt8]? {
        var bytes: [UInt8] = []
        for label in labels {
            let utf8 = Array(label.utf8)
            guard !utf8.isEmpty, utf8.count <= 63 else { return nil }
            bytes.append(UInt8(utf8.count))
            bytes += utf8
        }
        bytes.append(0)
        return bytes.count <= 255 ? bytes : nil
    }

    /// A dotted name's labels (a host name or a domain: their labels hold no dots).
    public static func labels(_ dotted: String) -> [String] {
        dotted.split(separator: ".", omittingEmptySubsequences: true).map(String.init)
    }

    /// SRV: priority 0, weight 0, the port, the target host.
    public static func service(port: UInt16, target: [String]) -> [UInt8]? {
        name(target).map { [0, 0, 0, 0, UInt8(port >> 8), UInt8(port & 0xff)] + $0 }
    }

    /// TXT: each string behind its length byte; nil when one is longer than 255 bytes.
    /// No strings is one empty string (RFC 6763 section 6.1).
    public static func text(_ strings: [String]) -> [UInt8]? {
        var bytes: [UInt8] = []
        for string in strings {
            let utf8 = Array(string.utf8)
            guard utf8.count <= ServiceRecord.maximumTXTStringBytes else { return nil }
            bytes.append(UInt8(utf8.count))
            bytes += utf8
        }
        return bytes.isEmpty ? [0] : bytes
    }
}
