import HandoffCore

/// Every event a subscriber can receive: the one list the daemon emits and clients match.
public enum EventName: String, CaseIterable, Sendable {
    case peerAppeared, peerLeft, summaryReceived, summaryWithdrawn, declined
    case willContinue, continued, failed, progress, transferWaiting, transferResumed
    case payloadServed, activityEnded, paired, near, enabled, disabled
    case pairable, pairingCode, pairingEnded, pairingClosed, unpaired
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
    /// The accepting client's ticket, as its accept carried it (nil when it carried none).
    public var ticket: String?

    enum CodingKeys: String, CodingKey {
        case acceptID = "acceptId", peer, activity, deliverTo, payloadBytes, payloadFd, ticket
    }

    public init(acceptID: Int64, peer: String, activity: ActivityHeader, deliverTo: String, payloadBytes: Int64, payloadFd: Int? = nil,
                ticket: String? = nil) {
        (self.acceptID, self.peer, self.activity, self.deliverTo) = (acceptID, peer, activity, deliverTo)
        (self.payloadBytes, self.payloadFd, self.ticket) = (payloadBytes, payloadFd, ticket)
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

/// One event, typed. Its JSON is Swift's Codable for the enum through `JSONValueCoding`, flattened:
/// the case's name under `"event"` beside its fields.
public enum Event: Codable, Equatable, Sendable {
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
    /// Sent only while pairing is open on this host too: the user here asked to pair.
    case pairable(peer: String, name: String)
    case pairingCode(PairingCodeEvent)
    /// A pairing dialog ended without pairing (declined on either side, timed out, failed); `paired` says the other outcome.
    case pairingEnded(session: Int64, peer: String, name: String, error: HandoffError)
    /// Pairing closed on this host (`reason`: "paired", "timed-out", "opener-gone", "too-many-declined"):
    /// devices it told of (`pairable`) can no longer be paired from here.
    case pairingClosed(reason: String)
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
        case .pairingClosed: .pairingClosed
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
        case .activityEnded, .enabled, .disabled, .pairingClosed: nil
        }
    }

    /// How many descriptors travel with this event.
    public var descriptorCount: Int {
        if case let .continued(event) = self, event.payloadFd != nil { return 1 }
        return 0
    }

    /// The event's line: its fields and `"event"`, its name.
    public var json: JSONValue { JSONValueCoding.encode(self, tag: "event") }

    // The wire's names where a case's labels differ from them.
    enum WillContinueCodingKeys: String, CodingKey { case acceptID = "acceptId", peer, type, deliverTo }
    enum FailedCodingKeys: String, CodingKey { case acceptID = "acceptId", peer, type, error, deliverTo }
    enum TransferResumedCodingKeys: String, CodingKey { case acceptID = "acceptId", peer, fromByte }

    /// Reads an event line's fields. nil for an event this client does not know
    /// (a newer daemon may add events; clients skip them).
    public init?(json: JSONValue) throws(HandoffError) {
        guard let text = json["event"]?.stringValue else { throw Fields.failure(.internal, "an event without \"event\".") }
        guard EventName(rawValue: text) != nil else { return nil }
        self = try JSONValueCoding.decode(Event.self, from: json, tag: "event", context: "the \(text) event")
    }
}
