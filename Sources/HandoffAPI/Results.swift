import HandoffCore

/// An activity's fixed fields in the local API's JSON: the payload's place (`userInfoOffset`,
/// `userInfoBytes`) is the daemon's own and is not written; read back, it is 0.
extension ActivityHeader: JSONCodable {
    enum CodingKeys: String, CodingKey {
        case type, title, targetContentIdentifier, webpageURL, expiresAtMillis, sequence, supportsContinuationStreams
    }

    public init(from decoder: any Decoder) throws {
        let keyed = try decoder.container(keyedBy: CodingKeys.self)
        self.init(type: try keyed.decode(String.self, forKey: .type), title: try keyed.decode(String.self, forKey: .title),
                  targetContentIdentifier: try keyed.decodeIfPresent(String.self, forKey: .targetContentIdentifier),
                  webpageURL: try keyed.decodeIfPresent(String.self, forKey: .webpageURL),
                  expiresAtMillis: try keyed.decodeIfPresent(UInt64.self, forKey: .expiresAtMillis),
                  sequence: try keyed.decode(UInt64.self, forKey: .sequence),
                  supportsContinuationStreams: try keyed.decodeIfPresent(Bool.self, forKey: .supportsContinuationStreams) ?? false)
    }

    public func encode(to encoder: any Encoder) throws {
        var keyed = encoder.container(keyedBy: CodingKeys.self)
        try keyed.encode(type, forKey: .type)
        try keyed.encode(title, forKey: .title)
        try keyed.encodeIfPresent(targetContentIdentifier, forKey: .targetContentIdentifier)
        try keyed.encodeIfPresent(webpageURL, forKey: .webpageURL)
        try keyed.encodeIfPresent(expiresAtMillis, forKey: .expiresAtMillis)
        try keyed.encode(sequence, forKey: .sequence)
        // Written only when true (absent reads as false): older clients never saw the key.
        if supportsContinuationStreams { try keyed.encode(true, forKey: .supportsContinuationStreams) }
    }
}

/// A peer's current offer, as `list` and `summaryReceived` show it.
public struct OfferInfo: JSONCodable {
    public var type: String
    public var title: String
    public var payloadSize: Int64
    public var sequence: Int64
    public var timestampMillis: Int64
    public var expiresAtMillis: Int64
    public var digest: String
    /// In `list` only: how old the offer is, and where accepting it continues it (an app, `browser` or `terminal`).
    public var ageMillis: Int64?
    public var deliverTo: String?

    public init(type: String, title: String, payloadSize: Int64, sequence: Int64, timestampMillis: Int64,
                expiresAtMillis: Int64, digest: String, ageMillis: Int64? = nil, deliverTo: String? = nil) {
        self.type = type
        self.title = title
        self.payloadSize = payloadSize
        self.sequence = sequence
        self.timestampMillis = timestampMillis
        self.expiresAtMillis = expiresAtMillis
        self.digest = digest
        self.ageMillis = ageMillis
        self.deliverTo = deliverTo
    }
}

/// One entry of `list`.
public struct PeerEntry: JSONCodable {
    public var peer: String
    public var name: String
    public var hosts: [String]
    public var port: Int64
    public var lastSeenMillisAgo: Int64
    public var paths: [String]
    /// `{enforced, near, rssi, lastHeardMillisAgo, thresholdDBM}`, as the daemon's proximity state has it (null if absent).
    public var proximity: JSONValue
    /// null, not absent, when the peer offers nothing (Docs/LOCAL-API.md, `list`).
    @NullWhenEmpty public var offer: OfferInfo?

    public init(peer: String, name: String, hosts: [String], port: Int64, lastSeenMillisAgo: Int64, paths: [String],
                proximity: JSONValue, offer: OfferInfo?) {
        (self.peer, self.name, self.hosts, self.port) = (peer, name, hosts, port)
        (self.lastSeenMillisAgo, self.paths, self.proximity, self.offer) = (lastSeenMillisAgo, paths, proximity, offer)
    }
}

/// `publish` and `becomeCurrent`.
public struct PublishReceipt: JSONCodable {
    public var sequence: Int64
    public var payloadBytes: Int64
    public var userInfoBytes: Int64
    public var warnings: [String]

    public init(sequence: Int64, payloadBytes: Int64, userInfoBytes: Int64, warnings: [String]) {
        (self.sequence, self.payloadBytes, self.userInfoBytes, self.warnings) = (sequence, payloadBytes, userInfoBytes, warnings)
    }
}

/// `accept`: the activity's fixed fields; with `payload`, the payload by descriptor (`payloadFd`).
public struct AcceptResult: JSONCodable {
    public var peer: String
    public var name: String
    public var activity: ActivityHeader
    public var deliverTo: String
    public var payloadBytes: Int64
    public var handshakeMillis: Double
    public var transferMillis: Double
    /// Index of the descriptor that carries the payload, when the request asked for it.
    public var payloadFd: Int?

    public init(peer: String, name: String, activity: ActivityHeader, deliverTo: String, payloadBytes: Int64,
                handshakeMillis: Double, transferMillis: Double, payloadFd: Int?) {
        (self.peer, self.name, self.activity, self.deliverTo) = (peer, name, activity, deliverTo)
        (self.payloadBytes, self.handshakeMillis, self.transferMillis, self.payloadFd) = (payloadBytes, handshakeMillis, transferMillis, payloadFd)
    }
}

/// `pair` and `pairListen`: both sides know the code.
public struct PairingOffer: JSONCodable {
    public var session: Int64
    public var code: String
    public var name: String
    public var peer: String

    public init(session: Int64, code: String, name: String, peer: String) {
        (self.session, self.code, self.name, self.peer) = (session, code, name, peer)
    }
}

/// `pairOpen`: pairing is open until then (wall clock, milliseconds).
public struct PairingWindow: JSONCodable {
    public var openUntilMillis: Int64
    public init(openUntilMillis: Int64) { self.openUntilMillis = openUntilMillis }
}

/// `pairConfirm`: paired.
public struct PairingResult: JSONCodable {
    public var paired = true
    public var peer: String
    public var name: String

    public init(peer: String, name: String) { (self.peer, self.name) = (peer, name) }
}

/// `pairable`: a device with pairing open.
public struct PairableDevice: JSONCodable {
    public var peer: String
    public var name: String
    public var host: String

    public init(peer: String, name: String, host: String) { (self.peer, self.name, self.host) = (peer, name, host) }
}

/// `devices`: a paired device.
public struct DeviceEntry: JSONCodable {
    public var peer: String
    public var name: String
    public var publicKey: String
    public var pairedAtMillis: Int64
    public var inRange: Bool
    /// Paired before discovery secrets existed: it can no longer be found until paired again.
    public var needsPairingAgain: Bool

    public init(peer: String, name: String, publicKey: String, pairedAtMillis: Int64, inRange: Bool, needsPairingAgain: Bool) {
        (self.peer, self.name, self.publicKey) = (peer, name, publicKey)
        (self.pairedAtMillis, self.inRange, self.needsPairingAgain) = (pairedAtMillis, inRange, needsPairingAgain)
    }
}

/// `declarations`: an app that declares activity types, running (declared at run time) or by its `.desktop` file.
public struct AppEntry: JSONCodable {
    public var app: String
    public var running: Bool
    public var types: [String]
    public var desktopFile: String?

    public init(app: String, running: Bool, types: [String], desktopFile: String?) {
        (self.app, self.running, self.types, self.desktopFile) = (app, running, types, desktopFile)
    }
}

/// `id`.
public struct IdentityInfo: JSONCodable {
    public var deviceID: String
    public var publicKey: String
    public var name: String

    enum CodingKeys: String, CodingKey {
        case deviceID = "deviceId", publicKey, name
    }

    public init(deviceID: String, publicKey: String, name: String) { (self.deviceID, self.publicKey, self.name) = (deviceID, publicKey, name) }
}

/// `hello`: the version this daemon speaks and the range it accepts.
public struct HelloResult: JSONCodable {
    public struct Versions: Codable, Equatable, Sendable {
        public var min: Int64
        public var max: Int64
    }

    public var version: Int64
    private var versions: Versions
    public var supported: ClosedRange<Int64> { versions.min...max(versions.min, versions.max) }

    enum CodingKeys: String, CodingKey {
        case version, versions = "supported"
    }

    public init(version: Int64 = LocalAPIVersion.current, supported: ClosedRange<Int64> = LocalAPIVersion.supported) {
        self.version = version
        versions = Versions(min: supported.lowerBound, max: supported.upperBound)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        version = try container.decode(Int64.self, forKey: .version)
        versions = try container.decode(Versions.self, forKey: .versions)
        guard versions.min <= versions.max else {
            throw DecodingError.dataCorruptedError(forKey: .versions, in: container, debugDescription: "hello.supported is empty")
        }
    }
}

/// A reply line: `{id, ok: true, result}` or `{id, ok: false, error}`.
public struct Reply: JSONCodable {
    public var id: JSONValue?
    public var outcome: Result<JSONValue, HandoffError>
    /// Descriptors attached to the line (their indices are named in the result, e.g. `payloadFd`).
    public var descriptorCount: Int

    public init(id: JSONValue?, outcome: Result<JSONValue, HandoffError>) {
        self.id = id
        self.outcome = outcome
        descriptorCount = if case let .success(result) = outcome, result["payloadFd"] != nil { 1 } else { 0 }
    }

    enum CodingKeys: String, CodingKey { case id, ok, result, error }

    public init(from decoder: any Decoder) throws {
        let fields = try decoder.container(keyedBy: CodingKeys.self)
        let id = try fields.decodeIfPresent(JSONValue.self, forKey: .id)
        if try fields.decode(Bool.self, forKey: .ok) {
            self.init(id: id, outcome: .success(try fields.decode(JSONValue.self, forKey: .result)))
        } else {
            self.init(id: id, outcome: .failure(try fields.decode(HandoffError.self, forKey: .error)))
        }
    }

    /// `id` is written as null when the request had none, so every reply has the same keys.
    public func encode(to encoder: any Encoder) throws {
        var fields = encoder.container(keyedBy: CodingKeys.self)
        try fields.encode(id ?? .null, forKey: .id)
        switch outcome {
        case let .success(result):
            try fields.encode(true, forKey: .ok)
            try fields.encode(result, forKey: .result)
        case let .failure(error):
            try fields.encode(false, forKey: .ok)
            try fields.encode(error, forKey: .error)
        }
    }

    public init(json: JSONValue) throws(HandoffError) {
        self = try JSONValueCoding.decode(Reply.self, from: json, context: "the reply")
    }
}

// MARK: - The other requests' results

/// `resign`: whether there was an activity to resign.
public struct ResignResult: JSONCodable {
    public var resigned: Bool
    public init(resigned: Bool) { self.resigned = resigned }
}

/// `invalidate`: whether there was an activity to end.
public struct InvalidateResult: JSONCodable {
    public var invalidated: Bool
    public init(invalidated: Bool) { self.invalidated = invalidated }
}

/// `enable` and `disable`: Handoff's state now.
public struct EnabledResult: JSONCodable {
    public var enabled: Bool
    public init(enabled: Bool) { self.enabled = enabled }
}

/// `list`: paired devices in range and what each offers.
public struct PeerList: JSONCodable {
    public var peers: [PeerEntry]
    public init(peers: [PeerEntry]) { self.peers = peers }
}

/// `devices`: every paired device.
public struct DeviceList: JSONCodable {
    public var devices: [DeviceEntry]
    public init(devices: [DeviceEntry]) { self.devices = devices }
}

/// `pairable`: devices with pairing open.
public struct PairableList: JSONCodable {
    public var devices: [PairableDevice]
    public init(devices: [PairableDevice]) { self.devices = devices }
}

/// `declarations`: apps that declare activity types.
public struct AppList: JSONCodable {
    public var apps: [AppEntry]
    public init(apps: [AppEntry]) { self.apps = apps }
}

/// `untrust`: the device id no longer trusted.
public struct UntrustResult: JSONCodable {
    public var untrusted: String
    public init(untrusted: String) { self.untrusted = untrusted }
}

/// `subscribe`: events follow on this connection.
public struct SubscribedResult: JSONCodable {
    public var subscribed: Bool
    public init(subscribed: Bool = true) { self.subscribed = subscribed }
}

/// `declare`: the types this connection now declares.
public struct DeclaredResult: JSONCodable {
    public var declared: [String]
    public init(declared: [String]) { self.declared = declared }
}

/// `awaitStream` and `openStream`: the connection now carries the stream's bytes.
public struct StreamResult: JSONCodable {
    public var stream: Bool
    public var peer: String
    public var sequence: Int64
    public init(peer: String, sequence: Int64) { (stream, self.peer, self.sequence) = (true, peer, sequence) }
}

/// `doctor`: the six conditions for this host (and a peer, when named), and the one verdict.
public struct DoctorReport: JSONCodable {
    public struct Condition: Codable, Equatable, Sendable {
        public var code: String
        /// pass, warn, fail or off.
        public var status: String
        public var ok: Bool
        public var evidence: String
        public var fix: String
        public init(code: String, status: String, ok: Bool, evidence: String, fix: String) {
            (self.code, self.status, self.ok, self.evidence, self.fix) = (code, status, ok, evidence, fix)
        }
    }

    public struct Verdict: Codable, Equatable, Sendable {
        public var cause: String
        public var code: String
        /// warn or fail.
        public var status: String
        public var message: String
        public var fix: String
        public init(cause: String, code: String, status: String, message: String, fix: String) {
            (self.cause, self.code, self.status, self.message, self.fix) = (cause, code, status, message, fix)
        }
    }

    public var host: String
    /// null, not absent, when there is none: scripts test for it.
    @NullWhenEmpty public var peer: String?
    public var ok: Bool
    @NullWhenEmpty public var verdict: Verdict?
    public var conditions: [Condition]
    /// Added by `handoff-peer doctor` (the browsers' host manifests are the user's files), never by handoffd.
    public var browsers: JSONValue?

    public init(host: String, peer: String?, ok: Bool, verdict: Verdict?, conditions: [Condition]) {
        (self.host, self.peer, self.ok, self.verdict, self.conditions) = (host, peer, ok, verdict, conditions)
    }
}

/// `status`: this daemon, its paths and counters. The diagnostic parts (drops, budgets,
/// mdns, bluetooth) are objects whose keys Docs/LOCAL-API.md lists; they grow with the daemon.
public struct StatusReport: JSONCodable {
    public struct Path: Codable, Equatable, Sendable {
        public var path: String
        public var state: String
        public init(path: String, state: String) { (self.path, self.state) = (path, state) }
    }

    public struct Current: Codable, Equatable, Sendable {
        public var type: String
        public var sequence: Int64
        public var payloadBytes: Int64
        public var publisher: String
        public init(type: String, sequence: Int64, payloadBytes: Int64, publisher: String) {
            (self.type, self.sequence, self.payloadBytes, self.publisher) = (type, sequence, payloadBytes, publisher)
        }
    }

    public struct Publisher: Codable, Equatable, Sendable {
        public var publisher: String
        public var type: String
        /// current, waiting or resigned.
        public var state: String
        public init(publisher: String, type: String, state: String) { (self.publisher, self.type, self.state) = (publisher, type, state) }
    }

    public struct Transfers: Codable, Equatable, Sendable {
        public var served: Int64
        public var refused: Int64
        public init(served: Int64, refused: Int64) { (self.served, self.refused) = (served, refused) }
    }

    public var deviceID: String
    public var publicKey: String
    public var name: String
    public var transferPort: Int64
    public var socket: String
    public var stateDirectory: String
    public var uptimeSeconds: Int64
    public var discovery: [Path]
    /// Paired devices in range (near, with Bluetooth).
    public var peers: Int64
    public var trustedDevices: Int64
    public var drops: JSONValue
    public var budgets: JSONValue
    /// What this host offers; kept (and offered again once enabled) while Handoff is off. null when nothing.
    @NullWhenEmpty public var current: Current?
    /// Most recent first.
    public var publishers: [Publisher]
    public var mdns: JSONValue
    public var bluetooth: JSONValue
    public var enabled: Bool
    public var offering: Bool
    public var transfers: Transfers

    public init(deviceID: String, publicKey: String, name: String, transferPort: Int64, socket: String, stateDirectory: String,
                uptimeSeconds: Int64, discovery: [Path], peers: Int64, trustedDevices: Int64, drops: JSONValue, budgets: JSONValue,
                current: Current?, publishers: [Publisher], mdns: JSONValue, bluetooth: JSONValue, enabled: Bool, offering: Bool,
                transfers: Transfers) {
        (self.deviceID, self.publicKey, self.name, self.transferPort) = (deviceID, publicKey, name, transferPort)
        (self.socket, self.stateDirectory, self.uptimeSeconds, self.discovery) = (socket, stateDirectory, uptimeSeconds, discovery)
        (self.peers, self.trustedDevices, self.drops, self.budgets) = (peers, trustedDevices, drops, budgets)
        (self.current, self.publishers, self.mdns, self.bluetooth) = (current, publishers, mdns, bluetooth)
        (self.enabled, self.offering, self.transfers) = (enabled, offering, transfers)
    }

    enum CodingKeys: String, CodingKey {
        case deviceID = "deviceId", publicKey, name, transferPort, socket, stateDirectory, uptimeSeconds, discovery, peers
        case trustedDevices, drops, budgets, current, publishers, mdns, bluetooth, enabled, offering, transfers
    }
}

/// `decline`: the device whose offer is declined.
public struct DeclineResult: JSONCodable {
    public var declined: String
    public init(declined: String) { self.declined = declined }
}
