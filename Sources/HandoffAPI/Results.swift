import HandoffCore

/// An activity's fixed fields: what the local API carries in JSON when the
/// payload (userInfo included) travels by descriptor or not at all.
public struct ActivityFields: JSONCodable {
    public var type: String
    public var title: String
    public var targetContentIdentifier: String?
    public var webpageURL: String?
    public var expiresAtMillis: UInt64?
    public var sequence: UInt64

    public init(_ activity: Activity) {
        type = activity.type
        title = activity.title
        targetContentIdentifier = activity.targetContentIdentifier
        webpageURL = activity.webpageURL
        expiresAtMillis = activity.expiresAtMillis
        sequence = activity.sequence
    }

    public init(fields: Fields) throws(HandoffError) {
        type = try fields.string("type")
        title = try fields.string("title")
        targetContentIdentifier = try fields.optionalString("targetContentIdentifier")
        webpageURL = try fields.optionalString("webpageURL")
        expiresAtMillis = try fields.optionalInteger("expiresAtMillis").map { UInt64(clamping: $0) }
        sequence = UInt64(clamping: try fields.integer("sequence"))
    }

    public var json: JSONValue {
        var fields: [String: JSONValue] = ["type": .string(type), "title": .string(title), "sequence": .integer(Int64(clamping: sequence))]
        fields.put("targetContentIdentifier", targetContentIdentifier.map { .string($0) })
        fields.put("webpageURL", webpageURL.map { .string($0) })
        fields.put("expiresAtMillis", expiresAtMillis.map { .integer(Int64(clamping: $0)) })
        return .object(fields)
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

    public init(fields: Fields) throws(HandoffError) {
        self.init(type: try fields.string("type"), title: try fields.string("title"), payloadSize: try fields.integer("payloadSize"),
                  sequence: try fields.integer("sequence"), timestampMillis: try fields.integer("timestampMillis"),
                  expiresAtMillis: try fields.integer("expiresAtMillis"), digest: try fields.string("digest"),
                  ageMillis: try fields.optionalInteger("ageMillis"), deliverTo: try fields.optionalString("deliverTo"))
    }

    public var json: JSONValue {
        var fields: [String: JSONValue] = [
            "type": .string(type), "title": .string(title), "payloadSize": .integer(payloadSize), "sequence": .integer(sequence),
            "timestampMillis": .integer(timestampMillis), "expiresAtMillis": .integer(expiresAtMillis), "digest": .string(digest),
        ]
        fields.put("ageMillis", ageMillis.map { .integer($0) })
        fields.put("deliverTo", deliverTo.map { .string($0) })
        return .object(fields)
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
    /// `{enforced, near, rssi, lastHeardMillisAgo, thresholdDBM}`, as the daemon's proximity state has it.
    public var proximity: JSONValue
    public var offer: OfferInfo?

    public init(peer: String, name: String, hosts: [String], port: Int64, lastSeenMillisAgo: Int64, paths: [String],
                proximity: JSONValue, offer: OfferInfo?) {
        (self.peer, self.name, self.hosts, self.port) = (peer, name, hosts, port)
        (self.lastSeenMillisAgo, self.paths, self.proximity, self.offer) = (lastSeenMillisAgo, paths, proximity, offer)
    }

    public init(fields: Fields) throws(HandoffError) {
        self.init(peer: try fields.string("peer"), name: try fields.string("name"), hosts: try fields.strings("hosts"),
                  port: try fields.integer("port"), lastSeenMillisAgo: try fields.integer("lastSeenMillisAgo"),
                  paths: try fields.strings("paths"), proximity: fields["proximity"] ?? .null,
                  offer: try fields["offer"].map { (value) throws(HandoffError) in try OfferInfo(fields: fields.object("offer", "an offer")) })
    }

    public var json: JSONValue {
        ["peer": .string(peer), "name": .string(name), "hosts": .array(hosts.map { .string($0) }), "port": .integer(port),
         "lastSeenMillisAgo": .integer(lastSeenMillisAgo), "paths": .array(paths.map { .string($0) }),
         "proximity": proximity, "offer": offer?.json ?? .null]
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

    public init(fields: Fields) throws(HandoffError) {
        self.init(sequence: try fields.integer("sequence"), payloadBytes: try fields.integer("payloadBytes"),
                  userInfoBytes: try fields.integer("userInfoBytes"), warnings: try fields.strings("warnings"))
    }

    public var json: JSONValue {
        ["sequence": .integer(sequence), "payloadBytes": .integer(payloadBytes), "userInfoBytes": .integer(userInfoBytes),
         "warnings": .array(warnings.map { .string($0) })]
    }
}

/// `accept`: the activity's fixed fields; with `payload`, the payload by descriptor (`payloadFd`).
public struct AcceptResult: JSONCodable {
    public var peer: String
    public var name: String
    public var activity: ActivityFields
    public var deliverTo: String
    public var payloadBytes: Int64
    public var handshakeMillis: Double
    public var transferMillis: Double
    /// Index of the descriptor that carries the payload, when the request asked for it.
    public var payloadFd: Int?

    public init(peer: String, name: String, activity: ActivityFields, deliverTo: String, payloadBytes: Int64,
                handshakeMillis: Double, transferMillis: Double, payloadFd: Int?) {
        (self.peer, self.name, self.activity, self.deliverTo) = (peer, name, activity, deliverTo)
        (self.payloadBytes, self.handshakeMillis, self.transferMillis, self.payloadFd) = (payloadBytes, handshakeMillis, transferMillis, payloadFd)
    }

    public init(fields: Fields) throws(HandoffError) {
        self.init(peer: try fields.string("peer"), name: try fields.string("name"),
                  activity: try ActivityFields(fields: fields.object("activity", "the activity's fixed fields")),
                  deliverTo: try fields.string("deliverTo"), payloadBytes: try fields.integer("payloadBytes"),
                  handshakeMillis: try fields.double("handshakeMillis"), transferMillis: try fields.double("transferMillis"),
                  payloadFd: try fields.optionalInteger("payloadFd").map { Int($0) })
    }

    public var json: JSONValue {
        var fields: [String: JSONValue] = [
            "peer": .string(peer), "name": .string(name), "activity": activity.json, "deliverTo": .string(deliverTo),
            "payloadBytes": .integer(payloadBytes), "handshakeMillis": .double(handshakeMillis), "transferMillis": .double(transferMillis),
        ]
        fields.put("payloadFd", payloadFd.map { .integer(Int64($0)) })
        return .object(fields)
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

    public init(fields: Fields) throws(HandoffError) {
        self.init(session: try fields.integer("session"), code: try fields.string("code"), name: try fields.string("name"),
                  peer: try fields.string("peer"))
    }

    public var json: JSONValue { ["session": .integer(session), "code": .string(code), "name": .string(name), "peer": .string(peer)] }
}

/// `pairConfirm`: paired.
public struct PairingResult: JSONCodable {
    public var peer: String
    public var name: String

    public init(peer: String, name: String) { (self.peer, self.name) = (peer, name) }

    public init(fields: Fields) throws(HandoffError) {
        self.init(peer: try fields.string("peer"), name: try fields.string("name"))
    }

    public var json: JSONValue { ["paired": true, "peer": .string(peer), "name": .string(name)] }
}

/// `pairable`: a device with pairing open.
public struct PairableDevice: JSONCodable {
    public var peer: String
    public var name: String
    public var host: String

    public init(peer: String, name: String, host: String) { (self.peer, self.name, self.host) = (peer, name, host) }

    public init(fields: Fields) throws(HandoffError) {
        self.init(peer: try fields.string("peer"), name: try fields.string("name"), host: try fields.string("host"))
    }

    public var json: JSONValue { ["peer": .string(peer), "name": .string(name), "host": .string(host)] }
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

    public init(fields: Fields) throws(HandoffError) {
        self.init(peer: try fields.string("peer"), name: try fields.string("name"), publicKey: try fields.string("publicKey"),
                  pairedAtMillis: try fields.integer("pairedAtMillis"), inRange: try fields.bool("inRange"),
                  needsPairingAgain: try fields.bool("needsPairingAgain"))
    }

    public var json: JSONValue {
        ["peer": .string(peer), "name": .string(name), "publicKey": .string(publicKey), "pairedAtMillis": .integer(pairedAtMillis),
         "inRange": .bool(inRange), "needsPairingAgain": .bool(needsPairingAgain)]
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

    public init(fields: Fields) throws(HandoffError) {
        self.init(app: try fields.string("app"), running: try fields.bool("running"), types: try fields.strings("types"),
                  desktopFile: try fields.optionalString("desktopFile"))
    }

    public var json: JSONValue {
        var fields: [String: JSONValue] = ["app": .string(app), "running": .bool(running), "types": .array(types.map { .string($0) })]
        fields.put("desktopFile", desktopFile.map { .string($0) })
        return .object(fields)
    }
}

/// `id`.
public struct IdentityInfo: JSONCodable {
    public var deviceID: String
    public var publicKey: String
    public var name: String

    public init(deviceID: String, publicKey: String, name: String) { (self.deviceID, self.publicKey, self.name) = (deviceID, publicKey, name) }

    public init(fields: Fields) throws(HandoffError) {
        self.init(deviceID: try fields.string("deviceId"), publicKey: try fields.string("publicKey"), name: try fields.string("name"))
    }

    public var json: JSONValue { ["deviceId": .string(deviceID), "publicKey": .string(publicKey), "name": .string(name)] }
}

/// `hello`: the version this daemon speaks and the range it accepts.
public struct HelloResult: JSONCodable {
    public var version: Int64
    public var supported: ClosedRange<Int64>

    public init(version: Int64 = LocalAPIVersion.current, supported: ClosedRange<Int64> = LocalAPIVersion.supported) {
        (self.version, self.supported) = (version, supported)
    }

    public init(fields: Fields) throws(HandoffError) {
        let range = try fields.object("supported", "{min, max}")
        let (low, high) = (try range.integer("min"), try range.integer("max"))
        guard low <= high else { throw Fields.failure(fields.code, "hello.supported is empty.") }
        self.init(version: try fields.integer("version"), supported: low...high)
    }

    public var json: JSONValue {
        ["version": .integer(version), "supported": ["min": .integer(supported.lowerBound), "max": .integer(supported.upperBound)]]
    }
}

/// A reply line: `{id, ok: true, result}` or `{id, ok: false, error}`.
public struct Reply: Equatable, Sendable {
    public var id: JSONValue?
    public var outcome: Result<JSONValue, HandoffError>
    /// Descriptors attached to the line (their indices are named in the result, e.g. `payloadFd`).
    public var descriptorCount: Int

    public init(id: JSONValue?, outcome: Result<JSONValue, HandoffError>) {
        self.id = id
        self.outcome = outcome
        descriptorCount = if case let .success(result) = outcome, result["payloadFd"] != nil { 1 } else { 0 }
    }

    public var json: JSONValue {
        switch outcome {
        case let .success(result): ["id": id ?? .null, "ok": true, "result": result]
        case let .failure(error): ["id": id ?? .null, "ok": false, "error": error.json]
        }
    }

    public init(json: JSONValue) throws(HandoffError) {
        let fields = try Fields(json, context: "the reply", code: .internal)
        let ok = try fields.bool("ok")
        self.init(id: fields["id"], outcome: ok ? .success(fields["result"] ?? .null) : .failure(try fields.error("error")))
    }
}
