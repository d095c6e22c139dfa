import HandoffCore
import HandoffCrypto
import HandoffTransport

/// The transfer port: its listener, what it served and refused, the apps waiting for a
/// continuation stream, and the one decision of what a paired device (proven by the
/// handshake) may have: the current payload (fetch) or a stream to the app (stream).
struct TransferServer {
    var listener: StreamListener?
    /// The port peers connect to (announced; learnt from the listener once it is open).
    var port: UInt16 = 0
    private(set) var served = 0
    private(set) var refused = 0
    /// Apps waiting for a continuation stream (Daemon+Streams).
    var streams = ContinuationStreams()

    enum Purpose: Equatable {
        case fetch
        case stream
    }

    /// What the request cites, and the facts the decision needs from the daemon.
    struct Request {
        var purpose: Purpose
        var cited: TransferFrame.FetchRequest
        var requesterTrusted: Bool
        var enabled: Bool
        var hostName: String
        var ownKey: DeviceKey
        var nowMillis: UInt64
    }

    /// The current activity if `request` may have it, else the refusal to send. A fetch or a
    /// stream must cite the current summary exactly (sender, sequence and digest) while it has
    /// not expired; a resume may not start past the end; a stream needs an activity published for streams.
    enum Admission: Sendable {
        case admit(PublishedActivity)
        case refuse(TransferFrame.Refusal)

        /// What the fetching device hears: the whole payload (sent from its offset) or the refusal.
        var frame: TransferFrame {
            switch self {
            case let .admit(current): .payload(current.payload)
            case let .refuse(refusal): .refusal(refusal)
            }
        }
    }

    static func admission(_ request: Request, current: PublishedActivity?) -> Admission {
        func refuse(_ code: HandoffError.Code, _ message: String) -> Admission {
            .refuse(.init(code: code, message: message))
        }
        guard request.requesterTrusted else { return refuse(.trust, noLongerTrusted) }
        guard request.enabled else { return refuse(.enabled, "Handoff is switched off on \(request.hostName)") }
        let cited = request.cited
        guard let current, cited.summarySender == request.ownKey,
              cited.summarySequence == current.summary.summary.sequence,
              constantTimeEqual(cited.payloadDigest, current.summary.summary.payloadDigest),
              !current.activity.isExpired(nowMillis: request.nowMillis)
        else {
            let verb = request.purpose == .fetch ? "accepted" : "continued"
            return refuse(.notCurrent, "the activity you \(verb) is no longer the current one on \(request.hostName)")
        }
        switch request.purpose {
        case .fetch:
            guard cited.offset < UInt64(current.payload.count) || cited.offset == 0 else {
                return refuse(.invalidRequest, "a resume from byte \(cited.offset) is past the end of the payload")
            }
        case .stream:
            guard current.activity.supportsContinuationStreams else {
                return refuse(.invalidRequest, "the activity was published without continuation streams")
            }
        }
        return .admit(current)
    }

    static let noLongerTrusted = "this device is no longer trusted here"

    mutating func countServed() { served += 1 }
    mutating func countRefused() { refused += 1 }
}
