import FoundationEssentials
import Glibc
import HandoffAPI
import HandoffCore
import HandoffTransport
import HandoffRuntime

/// What an app implements to be continued (NSUserActivity's delegate
/// callbacks): for every `willContinue`, exactly one of `continueActivity` or
/// `didFailToContinue` follows; `transferUpdate` reports a large payload's
/// progress in between (by default it does nothing).
public protocol ContinuationHandler: AnyObject, Sendable {
    func willContinue(activityType: String)
    func continueActivity(_ activity: Activity)
    func didFailToContinue(activityType: String, error: HandoffError)
    func transferUpdate(activityType: String, _ update: TransferUpdate)
}

extension ContinuationHandler {
    public func transferUpdate(activityType: String, _ update: TransferUpdate) {}
}

/// How the transfer of a continuation's payload goes (transfers over 1 MiB).
public enum TransferUpdate: Equatable, Sendable {
    case progress(TransferProgress)
    /// The link to the sender was lost; handoffd waits for it to come back (`untilMillis`, wall clock).
    case waiting(TransferWaiting)
    case resumed(fromByte: Int64)
}

/// Turns the daemon's event stream into exactly-once callbacks for one app.
/// Pure: fed events, it answers with the callbacks to make.
public struct ContinuationTracker: Sendable {
    public enum Callback: Equatable, Sendable {
        case willContinue(type: String)
        case continued(Activity)
        case failed(type: String, error: HandoffError)
        case transfer(type: String, TransferUpdate)
    }

    public let app: String
    public let types: Set<String>
    /// Accepts announced with willContinue and not yet finished.
    public private(set) var open: [Int64: String] = [:]
    private var finished: Set<Int64> = []
    /// Whether a `continued`'s ticket proves this user accepted (`AcceptTickets.redeem`).
    private let redeem: @Sendable (String?) -> Bool

    public init(app: String, types: Set<String>, redeem: @escaping @Sendable (String?) -> Bool = { AcceptTickets.redeem($0) }) {
        self.app = app
        self.types = types
        self.redeem = redeem
    }

    /// Events for other apps, and repeats, produce nothing. A `continued` for
    /// this app brings its payload (by descriptor); the activity is decoded from it.
    public mutating func handle(_ event: Event, payload: PayloadBuffer? = nil) -> [Callback] {
        guard let acceptID = event.acceptID, !finished.contains(acceptID) else { return [] }
        switch event {
        case let .willContinue(_, _, type, deliverTo):
            guard deliverTo == app, types.contains(type), open[acceptID] == nil else { return [] }
            open[acceptID] = type
            return [.willContinue(type: type)]
        case let .continued(continued):
            let type = continued.activity.type
            guard continued.deliverTo == app, types.contains(type) else { return [] }
            // Nobody accepted it here: nothing of it is acted on. An app that saw its willContinue
            // hears that it failed; one that did not hears nothing at all.
            guard redeem(continued.ticket) else {
                finished.insert(acceptID)
                guard open.removeValue(forKey: acceptID) != nil else { return [] }
                return [.failed(type: type, error: HandoffError(
                    .declined, "handoffd delivered a continuation of \(type) that nobody accepted on this computer; it was ignored.",
                    fix: "Accept through handoff-peer, the notification or the panel item; if this repeats, restart handoffd."))]
            }
            guard let payload else {
                return finish(acceptID, type: type, with: .failed(type: type, error: HandoffError(
                    .payloadInvalid, "handoffd delivered the continuation of \(type) without its payload.",
                    fix: "Make sure the app and handoffd are the same version.")))
            }
            do throws(HandoffError) {
                let activity = try HandoffClient.activity(from: payload)
                guard activity.type == type, activity.sequence == continued.activity.sequence else {
                    throw HandoffError(.payloadInvalid, "The continuation's payload describes another activity.", fix: "Accept again.")
                }
                return finish(acceptID, type: type, with: .continued(activity))
            } catch {
                return finish(acceptID, type: type, with: .failed(type: type, error: error))
            }
        case let .failed(_, _, type, error, deliverTo):
            // Without deliverTo, handoffd stopped before it knew where the activity would continue.
            guard deliverTo == nil || deliverTo == app, types.contains(type) else { return [] }
            return finish(acceptID, type: type, with: .failed(type: type, error: error))
        case let .progress(progress):
            guard let type = open[acceptID] else { return [] }
            return [.transfer(type: type, .progress(progress))]
        case let .transferWaiting(waiting):
            guard let type = open[acceptID] else { return [] }
            return [.transfer(type: type, .waiting(waiting))]
        case let .transferResumed(_, _, fromByte):
            guard let type = open[acceptID] else { return [] }
            return [.transfer(type: type, .resumed(fromByte: fromByte))]
        default:
            return []
        }
    }

    /// An outcome without its willContinue (the app joined late) gets one first.
    private mutating func finish(_ acceptID: Int64, type: String, with outcome: Callback) -> [Callback] {
        finished.insert(acceptID)
        return open.removeValue(forKey: acceptID) == nil ? [.willContinue(type: type), outcome] : [outcome]
    }

    /// The daemon went away: every continuation still open fails, once.
    public mutating func connectionLost() -> [Callback] {
        defer {
            finished.formUnion(open.keys)
            open.removeAll()
        }
        return open.sorted { $0.key < $1.key }.map {
            .failed(type: $0.value, error: HandoffError(.connectionLost, "The connection to handoffd was lost during the continuation.",
                                                        fix: "Check that handoffd is running, then accept again."))
        }
    }
}

/// An app's tie to the daemon for receiving: declares the activity types it
/// continues (for as long as it runs) and calls its handler exactly once per
/// outcome, on a thread of its own.
public final class HandoffApp: Sendable {
    public let name: String
    public let types: Set<String>
    private let events: HandoffClient
    private let tracker: Locked<ContinuationTracker>

    /// Connects, subscribes and declares; events start flowing to `handler` once `run` is called.
    public init(name: String, types: Set<String>, socketPath: String? = nil) throws(HandoffError) {
        self.name = name
        self.types = types
        events = try HandoffClient(socketPath: socketPath)
        tracker = Locked(ContinuationTracker(app: name, types: types))
        // Subscribe first: a daemon that launched us replays the continuation once we declare.
        // Payloads come by descriptor, to this app only.
        try events.subscribe(payloads: true)
        // Started by handoffd for a continuation: the .desktop file it started us from, so it is matched by file id.
        try events.request(.declare(app: name, types: types.sorted(), desktopID: ProcessInfo.processInfo.environment["HANDOFF_DESKTOP_ID"],
                                    payloads: true))
    }

    /// Delivers events to `handler` on a background thread until the daemon goes away.
    public func run(handler: ContinuationHandler) {
        Threads.start("handoffkit events") { [self] in serve(handler: handler) }
    }

    /// Delivers events to `handler` on the calling thread; returns when the daemon goes away
    /// (after failing what was under way), so an agent can connect again.
    public func serve(handler: ContinuationHandler) {
        while true {
            let received: ReceivedEvent?
            do { received = try events.nextEvent() } catch { received = nil }
            guard let received else {
                deliver(tracker.withLock { $0.connectionLost() }, to: handler)
                return
            }
            guard let event = received.event else { continue }
            deliver(tracker.withLock { $0.handle(event, payload: received.payload) }, to: handler)
        }
    }

    private func deliver(_ callbacks: [ContinuationTracker.Callback], to handler: ContinuationHandler) {
        for callback in callbacks {
            switch callback {
            case let .willContinue(type): handler.willContinue(activityType: type)
            case let .continued(activity): handler.continueActivity(activity)
            case let .failed(type, error): handler.didFailToContinue(activityType: type, error: error)
            case let .transfer(type, update): handler.transferUpdate(activityType: type, update)
            }
        }
    }
}
