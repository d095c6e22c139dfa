import FoundationEssentials
import Glibc
import HandoffCore

/// The local API's version (Docs/LOCAL-API.md, "Versions"). Version 1 was the
/// untyped API that carried userInfo in JSON on accept and in `continued`;
/// version 2 passes payloads by descriptor. A client states the version it
/// speaks (`hello`, or `version` on any request); one that states none gets
/// the current version.
public enum LocalAPIVersion {
    public static let current: Int64 = 2
    public static let supported: ClosedRange<Int64> = 2...2

    public static func check(_ version: Int64) throws(HandoffError) {
        guard supported.contains(version) else {
            let speaks = supported.count == 1 ? "version \(current)" : "versions \(supported.lowerBound) to \(supported.upperBound)"
            throw HandoffError(.invalidRequest,
                               "This client speaks local API version \(version); this handoffd speaks \(speaks).",
                               fix: "Use a client (HandoffKit, handoff-peer) of the same handoff release as handoffd.")
        }
    }
}

/// Every op of the local API: the one list clients, daemon, help and errors use.
public enum Op: String, CaseIterable, Sendable {
    case hello, publish, becomeCurrent, resign, invalidate, list, accept, decline, status, id
    case pair, pairListen, pairOpen, pairConfirm, pairable, devices, untrust, enable, disable, doctor
    case declare, declarations, subscribe
    case awaitStream, openStream

    /// The type of each op's result (Docs/LOCAL-API.md): what `HandoffClient.request(_:as:)` reads.
    public var resultType: any JSONCodable.Type {
        switch self {
        case .hello: HelloResult.self
        case .publish, .becomeCurrent: PublishReceipt.self
        case .resign: ResignResult.self
        case .invalidate: InvalidateResult.self
        case .list: PeerList.self
        case .accept: AcceptResult.self
        case .decline: DeclineResult.self
        case .status: StatusReport.self
        case .id: IdentityInfo.self
        case .pair, .pairListen: PairingOffer.self
        case .pairOpen: PairingWindow.self
        case .pairConfirm: PairingResult.self
        case .pairable: PairableList.self
        case .devices: DeviceList.self
        case .untrust: UntrustResult.self
        case .enable, .disable: EnabledResult.self
        case .doctor: DoctorReport.self
        case .declare: DeclaredResult.self
        case .declarations: AppList.self
        case .subscribe: SubscribedResult.self
        case .awaitStream, .openStream: StreamResult.self
        }
    }
}

/// One request, typed. `Request.decode` is the only reader of request JSON and
/// `json` the only writer, so the daemon and every client agree on names.
public enum Request: Equatable, Sendable {
    case hello
    /// The activity in JSON (small ones, scripts), or its payload encoding in a sealed memfd.
    /// `publisher` names who offers it (Docs/LOCAL-API.md, "Which activity is current");
    /// nil is the shared publisher "default".
    case publish(PublishBody, publisher: String?)
    case becomeCurrent(publisher: String?), resign(publisher: String?), invalidate(publisher: String?)
    case list
    /// `sequence` and `digest` (hex) name the offer the user chose: when the peer offers something
    /// else by now, the answer is `not-current` and nothing is fetched. `ticket` comes back in
    /// `continued`, so the app can tell an accept this user made (HandoffKit's `AcceptTickets`).
    case accept(peer: String, requireApp: Bool, payload: Bool, sequence: Int64? = nil, digest: String? = nil, ticket: String? = nil)
    case decline(peer: String, sequence: Int64? = nil)
    case status, id
    case pair(peer: String?, address: String?)
    case pairListen(timeoutSeconds: Int64)
    /// Opens pairing for `timeoutSeconds` and returns at once: each device that asks is told to
    /// subscribers (`pairingCode`) and answered with `pairConfirm` (a notification, not a terminal).
    case pairOpen(timeoutSeconds: Int64)
    case pairConfirm(session: Int64, accept: Bool)
    case pairable, devices
    case untrust(peer: String)
    case enable, disable
    case doctor(peer: String?)
    case declare(app: String, types: [String], desktopID: String?, payloads: Bool)
    case declarations
    case subscribe(payloads: Bool)
    /// On a connection of its own: wait for a continuation stream to the current activity;
    /// after the success reply the connection carries the stream's raw bytes.
    case awaitStream(sequence: UInt64)
    /// On a connection of its own: open a continuation stream to the app that offered `sequence`.
    case openStream(peer: String?, sequence: UInt64)

    public enum PublishBody: Equatable, Sendable {
        case json(Activity)
        /// Descriptor index: the payload (Activity's payload encoding) in a sealed memfd.
        case descriptor(Int)
    }

    public var op: Op {
        switch self {
        case .hello: .hello
        case .publish: .publish
        case .becomeCurrent: .becomeCurrent
        case .resign: .resign
        case .invalidate: .invalidate
        case .list: .list
        case .accept: .accept
        case .decline: .decline
        case .status: .status
        case .id: .id
        case .pair: .pair
        case .pairListen: .pairListen
        case .pairOpen: .pairOpen
        case .pairConfirm: .pairConfirm
        case .pairable: .pairable
        case .devices: .devices
        case .untrust: .untrust
        case .enable: .enable
        case .disable: .disable
        case .doctor: .doctor
        case .declare: .declare
        case .declarations: .declarations
        case .subscribe: .subscribe
        case .awaitStream: .awaitStream
        case .openStream: .openStream
        }
    }

    /// How many descriptors travel with this request (SCM_RIGHTS, with its first byte).
    public var descriptorCount: Int {
        if case .publish(.descriptor, _) = self { return 1 }
        return 0
    }

    /// How many descriptors a request line declares, read from its fields alone (so
    /// also for a line that is otherwise wrong): one when it has `payloadFd`.
    public static func declaredDescriptors(_ fields: [String: JSONValue]) -> Int {
        fields["payloadFd"] != nil ? 1 : 0
    }

    static let peerHint = "a device id (or a unique prefix of it) or a device name"

    /// The fields of a request line (without `id` and `version`, which `Envelope` handles).
    public static func decode(_ fields: Fields) throws(HandoffError) -> Request {
        guard let name = fields["op"] else { throw HandoffError.invalidRequest("The request has no \"op\".") }
        guard let text = name.stringValue, let op = Op(rawValue: text) else {
            throw HandoffError.invalidRequest("Unknown op '\(name.stringValue ?? "\(name)")'. Known: \(Op.allCases.map(\.rawValue).joined(separator: ", ")).")
        }
        let fields = Fields(fields.values, context: op.rawValue, code: .invalidRequest)
        if op != .publish, fields["payloadFd"] != nil {
            throw .invalidRequest("Only publish carries a descriptor (\"payloadFd\"); \(op.rawValue) takes none.")
        }
        let publisher = try Self.publisher(fields, op: op)
        switch op {
        case .hello: return .hello
        case .publish:
            if let index = try fields.optionalInteger("payloadFd", "a descriptor index") {
                guard index == 0, fields["activity"] == nil else {
                    throw .invalidRequest("publish takes either \"activity\" (JSON) or \"payloadFd\": 0 (a sealed memfd), not both.")
                }
                return .publish(.descriptor(0), publisher: publisher)
            }
            guard let body = fields["activity"] else {
                throw .invalidRequest("publish needs \"activity\" (an object) or \"payloadFd\": 0 with a sealed memfd.")
            }
            return .publish(.json(try Activity(json: body)), publisher: publisher)
        case .becomeCurrent: return .becomeCurrent(publisher: publisher)
        case .resign: return .resign(publisher: publisher)
        case .invalidate: return .invalidate(publisher: publisher)
        case .list: return .list
        case .accept:
            let digest = try fields.optionalString("digest")
            if let digest, digest.utf8.count != 64 || Hex.decode(digest) == nil {
                throw .invalidRequest("\"digest\" must be the offer's digest as 64 hex digits (from list).")
            }
            let ticket = try fields.optionalString("ticket")
            if let ticket, !AcceptTicket.isWellFormed(ticket) {
                throw .invalidRequest("\"ticket\" must be \(AcceptTicket.characters) lowercase hex digits.")
            }
            return .accept(peer: try nonEmpty(fields.string("peer", peerHint), "peer", peerHint),
                           requireApp: try fields.bool("requireApp", default: false),
                           payload: try fields.bool("payload", default: false),
                           sequence: try offerSequence(fields), digest: digest, ticket: ticket)
        case .decline:
            return .decline(peer: try nonEmpty(fields.string("peer", peerHint), "peer", peerHint), sequence: try offerSequence(fields))
        case .status: return .status
        case .id: return .id
        case .pair:
            let request = Request.pair(peer: try fields.optionalString("peer"), address: try fields.optionalString("address"))
            return request
        case .pairListen:
            let seconds = try fields.optionalInteger("timeoutSeconds") ?? 120
            guard (1...3600).contains(seconds) else { throw .invalidRequest("\"timeoutSeconds\" must be 1 to 3600.") }
            return .pairListen(timeoutSeconds: seconds)
        case .pairOpen:
            let seconds = try fields.optionalInteger("timeoutSeconds") ?? 120
            guard (1...3600).contains(seconds) else { throw .invalidRequest("\"timeoutSeconds\" must be 1 to 3600.") }
            return .pairOpen(timeoutSeconds: seconds)
        case .pairConfirm:
            guard let session = fields["session"]?.integerValue, let accept = fields["accept"]?.boolValue else {
                throw .invalidRequest("pairConfirm needs \"session\" (from pair or pairListen) and \"accept\" (true or false).")
            }
            return .pairConfirm(session: session, accept: accept)
        case .pairable: return .pairable
        case .devices: return .devices
        case .untrust:
            let hint = "a device name, device id (or a unique prefix) or public key"
            return .untrust(peer: try nonEmpty(fields.string("peer", hint), "peer", hint))
        case .enable: return .enable
        case .disable: return .disable
        case .doctor: return .doctor(peer: try fields.optionalString("peer"))
        case .declare:
            guard let app = fields["app"]?.stringValue, !app.isEmpty, fields["types"]?.arrayValue != nil else {
                throw .invalidRequest("declare needs \"app\" (a name) and \"types\" (a list of activity types).")
            }
            guard let types = try? fields.strings("types") else { throw .invalidRequest("\"types\" must hold strings.") }
            return .declare(app: app, types: types, desktopID: try fields.optionalString("desktopId"),
                            payloads: try fields.bool("payloads", default: false))
        case .declarations: return .declarations
        case .subscribe: return .subscribe(payloads: try fields.bool("payloads", default: false))
        case .awaitStream:
            guard let sequence = fields["sequence"]?.integerValue, sequence >= 0 else {
                throw .invalidRequest("awaitStream needs \"sequence\": the sequence publish returned for the activity.")
            }
            return .awaitStream(sequence: UInt64(sequence))
        case .openStream:
            guard let sequence = fields["sequence"]?.integerValue, sequence >= 0 else {
                throw .invalidRequest("openStream needs \"sequence\": the continued activity's sequence.")
            }
            return .openStream(peer: try fields.optionalString("peer"), sequence: UInt64(sequence))
        }
    }

    /// The ops that offer an activity take `publisher`; the others refuse it rather than ignore it.
    private static func publisher(_ fields: Fields, op: Op) throws(HandoffError) -> String? {
        guard let publisher = try fields.optionalString("publisher") else { return nil }
        guard [.publish, .becomeCurrent, .resign, .invalidate].contains(op) else {
            throw .invalidRequest("Only publish, becomeCurrent, resign and invalidate take \"publisher\"; \(op.rawValue) does not.")
        }
        guard PublisherStack<Activity>.validName(publisher) else {
            throw .invalidRequest("\"publisher\" must be 1 to \(PublisherStack<Activity>.maximumNameBytes) printable ASCII characters without spaces.")
        }
        return publisher
    }

    private static func offerSequence(_ fields: Fields) throws(HandoffError) -> Int64? {
        guard let sequence = try fields.optionalInteger("sequence") else { return nil }
        guard sequence >= 0 else { throw .invalidRequest("\"sequence\" must be the offer's sequence from list (0 or more).") }
        return sequence
    }

    private static func nonEmpty(_ text: String, _ key: String, _ hint: String) throws(HandoffError) -> String {
        guard !text.isEmpty else { throw .invalidRequest("This op needs \"\(key)\": \(hint).") }
        return text
    }

    /// The request's fields, `op` included: Swift's Codable for the enum, flattened.
    public var json: JSONValue { JSONValueCoding.encode(self, tag: "op") }

    // The wire's names where a case's labels differ from them.
    enum DeclareCodingKeys: String, CodingKey { case app, types, desktopID = "desktopId", payloads }
}

/// A request is written by Swift's Codable but read by `Request.decode`: it comes from another
/// program, so each op checks its fields one by one (defaults, ranges, either-or) and says
/// which is wrong in the words of Docs/LOCAL-API.md.
extension Request: Encodable {}

extension Request.PublishBody: Encodable {
    enum CodingKeys: String, CodingKey { case activity, payloadFd }

    public func encode(to encoder: any Encoder) throws {
        var fields = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case let .json(activity): try fields.encode(activity.json, forKey: .activity)
        case let .descriptor(index): try fields.encode(index, forKey: .payloadFd)
        }
    }
}

/// A request line that could not be read: its id, when it had one, for the error reply.
public struct RequestFailure: Error, Equatable {
    public var id: JSONValue?
    public var error: HandoffError
    /// Descriptors the line declared: the reader takes (and closes) them, so the next line gets its own.
    public var descriptorCount = 0
}

/// A request line: the request, the caller's `id` (echoed in the reply) and the version it speaks.
public struct RequestEnvelope: Equatable, Sendable {
    public var id: JSONValue?
    public var version: Int64?
    public var request: Request

    public init(id: JSONValue? = nil, version: Int64? = LocalAPIVersion.current, request: Request) {
        self.id = id
        self.version = version
        self.request = request
    }

    /// Parses one line. A failure carries the id when the line had one, for the error reply.
    public static func decode(line: [UInt8]) -> Result<RequestEnvelope, RequestFailure> {
        let value: JSONValue
        do {
            value = try JSONValue.parse(Data(line))
        } catch {
            // Say what is wrong with it: a repeated key or a huge number is not "not an object".
            return .failure(RequestFailure(id: nil, error: error.message.hasPrefix("not valid JSON")
                ? .invalidRequest("The request is \(error.message).") : error))
        }
        guard let object = value.objectValue else { return .failure(RequestFailure(id: nil, error: .invalidRequest("The request is not a JSON object."))) }
        let id = object["id"]
        do throws(HandoffError) {
            let fields = Fields(object, context: "the request", code: .invalidRequest)
            let version = try fields.optionalInteger("version", "the API version this client speaks, an integer")
            if let version { try LocalAPIVersion.check(version) }
            return .success(RequestEnvelope(id: id, version: version, request: try Request.decode(fields)))
        } catch {
            return .failure(RequestFailure(id: id, error: error, descriptorCount: Request.declaredDescriptors(object)))
        }
    }

    public var json: JSONValue {
        guard case var .object(fields) = request.json else { return request.json }
        fields.put("id", id)
        fields.put("version", version.map { .integer($0) })
        return .object(fields)
    }
}

/// Which messages carry descriptors: a request, reply or event carries one, its
/// payload, when it names `payloadFd` (at its top level, or in a reply's `result`).
/// The descriptor arrives no later than the message's first byte.
public enum MessageDescriptors {
    public static func declared(in message: JSONValue) -> Int {
        message["payloadFd"] != nil || message["result"]?["payloadFd"] != nil ? 1 : 0
    }
}
