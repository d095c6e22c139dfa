import HandoffCore

/// Every event a subscriber can receive: the one list the daemon emits and clients match.
public enum EventName: String, CaseIterable, Sendable {
    case peerAppeared, peerLeft, summaryReceived, summaryWithdrawn, declined
    case willContinue, continued, failed, progress, transferWaiting, transferResumed
    case payloadServed, activityEnded, paired, near, enabled, disabled
    case pairable, pairingCode, pairingEnded, unpaired
}

/// `pairingCode`: a pairing dialog's code is known, on either side (`role`: "initiator" when this
/// host asked, "responder" when the other did). The local user compares it with the other
/// laptop's screen and answers with `pairConfirm` (or in the terminal that started it).
public struct PairingCodeEvent: JSONCodable {
    public var session: Int64
    public var peer: String
    public var name: String
    public var code: String
    public var role: String

    public init(session: Int64, peer: String, name: String, code: String, role: String) {
        (self.session, self.peer, self.name, self.code, self.role) = (session, peer, name, code, role)
    }
}

/// `continued`: the accepted activity reached where it continues. Its payload
/// (userInfo included) travels only by descriptor, and only to the app it is
/// delivered to when that app asked for payloads (`declare` with `payloads`).
public struct ContinuedEvent: JSONCodable {
    public var acceptID: Int64
    public var peer: String
    public var activity: ActivityHeader
    public var deliverTo: String
    public var payloadBytes: Int64
    public var payloadFd: Int?

    enum CodingKeys: String, CodingKey {
        case acceptID = "acceptId", peer, activity, deliverTo, payloadBytes, payloadFd
    }

    public init(acceptID: Int64, peer: String, activity: ActivityHeader, deliverTo: String, payloadBytes: Int64, payloadFd: Int? = nil) {
        (self.acceptID, self.peer, self.activity, self.deliverTo) = (acceptID, peer, activity, deliverTo)
        (self.payloadBytes, self.payloadFd) = (payloadBytes, payloadFd)
    }
}

/// `progress`: bytes of an accept's payload received so far (transfers over 1 MiB, at most about ten a second).
public struct TransferProgress: JSONCodable {
    public var acceptID: Int64
    public var peer: String
    public var type: String
    public var bytes: Int64
    public var total: Int64
    public var bytesPerSecond: Double

    enum CodingKeys: String, CodingKey {
        case acceptID = "acceptId", peer, type, bytes, total, bytesPerSecond
    }

    public init(acceptID: Int64, peer: String, type: String, bytes: Int64, total: Int64, bytesPerSecond: Double) {
        (self.acceptID, self.peer, self.type) = (acceptID, peer, type)
        (self.bytes, self.total, self.bytesPerSecond) = (bytes, total, bytesPerSecond)
    }
}

/// `transferWaiting`: the link to the sender was lost mid-transfer; the accept waits for it until `untilMillis` (wall clock).
public struct TransferWaiting: JSONCodable {
    public var acceptID: Int64
    public var peer: String
    public var name: String
    public var untilMillis: Int64
    public var reason: String

    enum CodingKeys: String, CodingKey {
        case acceptID = "acceptId", peer, name, untilMillis, reason
    }

    public init(acceptID: Int64, peer: String, name: String, untilMillis: Int64, reason: String) {
        (self.acceptID, self.peer, self.name, self.untilMillis, self.reason) = (acceptID, peer, name, untilMillis, reason)
    }
}

/// One event, typed. `Event(json:)` is the only reader of event JSON and `json` the only writer.
public enum Event: Equatable, Sendable {
    case peerAppeared(peer: String, name: String)
    case peerLeft(peer: String)
    case summaryReceived(peer: String, offer: OfferInfo)
    case summaryWithdrawn(peer: String)
    case declined(peer: String, type: String)
    case willContinue(acceptID: Int64, peer: String, type: String, deliverTo: String)
    case continued(ContinuedEvent)
    /// `deliverTo` is absent when this daemon stopped before it knew where the activity would continue.
    case failed(acceptID: Int64, peer: String, type: String, error: HandoffError, deliverTo: String?)
    case progress(TransferProgress)
    case transferWaiting(TransferWaiting)
    case transferResumed(acceptID: Int64, peer: String, fromByte: Int64)
    /// On the sender: a paired device fetched the current activity.
    case payloadServed(peer: String, type: String, sequence: Int64)
    case activityEnded(type: String, reason: String)
    case paired(peer: String, name: String)
    /// A device that is not paired opened pairing and can be paired now (its clear pairing beacon).
    case pairable(peer: String, name: String)
    case pairingCode(PairingCodeEvent)
    /// A pairing dialog ended without pairing (declined on either side, timed out, failed); `paired` says the other outcome.
    case pairingEnded(session: Int64, peer: String, name: String, error: HandoffError)
    /// This host no longer trusts the device (`untrust`).
    case unpaired(peer: String, name: String)
    /// The peer's beacon became fresh and strong enough.
    case near(peer: String)
    case enabled, disabled

    public var name: EventName {
        switch self {
        case .peerAppeared: .peerAppeared
        case .peerLeft: .peerLeft
        case .summaryReceived: .summaryReceived
        case .summaryWithdrawn: .summaryWithdrawn
        case .declined: .declined
        case .willContinue: .willContinue
        case .continued: .continued
        case .failed: .failed
        case .progress: .progress
        case .transferWaiting: .transferWaiting
        case .transferResumed: .transferResumed
        case .payloadServed: .payloadServed
        case .activityEnded: .activityEnded
        case .paired: .paired
        case .pairable: .pairable
        case .pairingCode: .pairingCode
        case .pairingEnded: .pairingEnded
        case .unpaired: .unpaired
        case .near: .near
        case .enabled: .enabled
        case .disabled: .disabled
        }
    }

    /// The accept an event belongs to, for those that belong to one.
    public var acceptID: Int64? {
        switch self {
        case let .willContinue(id, _, _, _), let .failed(id, _, _, _, _), let .transferResumed(id, _, _): id
        case let .continued(event): event.acceptID
        case let .progress(event): event.acceptID
        case let .transferWaiting(event): event.acceptID
        default: nil
        }
    }

    /// The peer (device id) an event is about, when it is about one.
    public var peer: String? {
        switch self {
        case let .peerAppeared(peer, _), let .peerLeft(peer), let .summaryReceived(peer, _), let .summaryWithdrawn(peer),
             let .declined(peer, _), let .willContinue(_, peer, _, _), let .failed(_, peer, _, _, _), let .transferResumed(_, peer, _),
             let .payloadServed(peer, _, _), let .paired(peer, _), let .near(peer), let .pairable(peer, _),
             let .pairingEnded(_, peer, _, _), let .unpaired(peer, _):
            peer
        case let .pairingCode(event): event.peer
        case let .continued(event): event.peer
        case let .progress(event): event.peer
        case let .transferWaiting(event): event.peer
        case .activityEnded, .enabled, .disabled: nil
        }
    }

    /// How many descriptors travel with this event.
    public var descriptorCount: Int {
        if case let .continued(event) = self, event.payloadFd != nil { return 1 }
        return 0
    }

    public var json: JSONValue {
        var fields: [String: JSONValue] = ["event": .string(name.rawValue)]
        switch self {
        case let .peerAppeared(peer, name), let .paired(peer, name), let .pairable(peer, name), let .unpaired(peer, name):
            fields["peer"] = .string(peer)
            fields["name"] = .string(name)
        case let .pairingCode(event): return Self.named(.pairingCode, event.json)
        case let .pairingEnded(session, peer, name, error):
            fields["session"] = .integer(session)
            fields["peer"] = .string(peer)
            fields["name"] = .string(name)
            fields["error"] = error.json
        case let .peerLeft(peer), let .summaryWithdrawn(peer), let .near(peer):
            fields["peer"] = .string(peer)
        case let .summaryReceived(peer, offer):
            fields["peer"] = .string(peer)
            fields["offer"] = offer.json
        case let .declined(peer, type):
            fields["peer"] = .string(peer)
            fields["type"] = .string(type)
        case let .willContinue(acceptID, peer, type, deliverTo):
            fields["acceptId"] = .integer(acceptID)
            fields["peer"] = .string(peer)
            fields["type"] = .string(type)
            fields["deliverTo"] = .string(deliverTo)
        case let .continued(event): return Self.named(.continued, event.json)
        case let .failed(acceptID, peer, type, error, deliverTo):
            fields["acceptId"] = .integer(acceptID)
            fields["peer"] = .string(peer)
            fields["type"] = .string(type)
            fields["error"] = error.json
            fields.put("deliverTo", deliverTo.map { .string($0) })
        case let .progress(event): return Self.named(.progress, event.json)
        case let .transferWaiting(event): return Self.named(.transferWaiting, event.json)
        case let .transferResumed(acceptID, peer, fromByte):
            fields["acceptId"] = .integer(acceptID)
            fields["peer"] = .string(peer)
            fields["fromByte"] = .integer(fromByte)
        case let .payloadServed(peer, type, sequence):
            fields["peer"] = .string(peer)
            fields["type"] = .string(type)
            fields["sequence"] = .integer(sequence)
        case let .activityEnded(type, reason):
            fields["type"] = .string(type)
            fields["reason"] = .string(reason)
        case .enabled, .disabled:
            break
        }
        return .object(fields)
    }

    /// An event carried by a struct: its fields and the event's name.
    private static func named(_ name: EventName, _ json: JSONValue) -> JSONValue {
        guard case var .object(fields) = json else { return json }
        fields["event"] = .string(name.rawValue)
        return .object(fields)
    }

    /// Reads an event line's fields. nil for an event this client does not know
    /// (a newer daemon may add events; clients skip them).
    public init?(json: JSONValue) throws(HandoffError) {
        guard let text = json["event"]?.stringValue else { throw Fields.failure(.internal, "an event without \"event\".") }
        guard let name = EventName(rawValue: text) else { return nil }
        let fields = try Fields(json, context: "the \(text) event", code: .internal)
        switch name {
        case .peerAppeared: self = .peerAppeared(peer: try fields.string("peer"), name: try fields.string("name"))
        case .peerLeft: self = .peerLeft(peer: try fields.string("peer"))
        case .summaryReceived:
            self = .summaryReceived(peer: try fields.string("peer"), offer: try OfferInfo(fields: fields.object("offer", "an offer")))
        case .summaryWithdrawn: self = .summaryWithdrawn(peer: try fields.string("peer"))
        case .declined: self = .declined(peer: try fields.string("peer"), type: try fields.string("type"))
        case .willContinue:
            self = .willContinue(acceptID: try fields.integer("acceptId"), peer: try fields.string("peer"),
                                 type: try fields.string("type"), deliverTo: try fields.string("deliverTo"))
        case .continued: self = .continued(try ContinuedEvent(fields: fields))
        case .failed:
            self = .failed(acceptID: try fields.integer("acceptId"), peer: try fields.string("peer"), type: try fields.string("type"),
                           error: try fields.error("error"), deliverTo: try fields.optionalString("deliverTo"))
        case .progress: self = .progress(try TransferProgress(fields: fields))
        case .transferWaiting: self = .transferWaiting(try TransferWaiting(fields: fields))
        case .transferResumed:
            self = .transferResumed(acceptID: try fields.integer("acceptId"), peer: try fields.string("peer"),
                                    fromByte: try fields.integer("fromByte"))
        case .payloadServed:
            self = .payloadServed(peer: try fields.string("peer"), type: try fields.string("type"), sequence: try fields.integer("sequence"))
        case .activityEnded: self = .activityEnded(type: try fields.string("type"), reason: try fields.string("reason"))
        case .paired: self = .paired(peer: try fields.string("peer"), name: try fields.string("name"))
        case .pairable: self = .pairable(peer: try fields.string("peer"), name: try fields.string("name"))
        case .unpaired: self = .unpaired(peer: try fields.string("peer"), name: try fields.string("name"))
        case .pairingCode: self = .pairingCode(try PairingCodeEvent(fields: fields))
        case .pairingEnded:
            self = .pairingEnded(session: try fields.integer("session"), peer: try fields.string("peer"), name: try fields.string("name"),
                                 error: try fields.error("error"))
        case .near: self = .near(peer: try fields.string("peer"))
        case .enabled: self = .enabled
        case .disabled: self = .disabled
        }
    }
}
