import Foundation
import HandoffCore
import HandoffTransport

/// What an app implements to be continued (NSUserActivity's delegate
/// callbacks): for every `willContinue`, exactly one of `continueActivity` or
/// `didFailToContinue` follows.
public protocol ContinuationHandler: AnyObject, Sendable {
    func willContinue(activityType: String)
    func continueActivity(_ activity: Activity)
    func didFailToContinue(activityType: String, error: HandoffError)
}

/// Turns the daemon's event stream into exactly-once callbacks for one app.
/// Pure: fed events, it answers with the callbacks to make.
public struct ContinuationTracker: Sendable {
    public enum Callback: Equatable, Sendable {
        case willContinue(type: String)
        case continued(Activity)
        case failed(type: String, error: HandoffError)
    }

    public let app: String
    public let types: Set<String>
    /// Accepts announced with willContinue and not yet finished.
    public private(set) var open: [Int64: String] = [:]
    private var finished: Set<Int64> = []

    public init(app: String, types: Set<String>) {
        self.app = app
        self.types = types
    }

    /// Events for other apps, and repeats, produce nothing.
    public mutating func handle(_ event: JSONValue) -> [Callback] {
        guard let name = event["event"]?.stringValue, let acceptID = event["acceptId"]?.integerValue,
              !finished.contains(acceptID) else { return [] }
        if let target = event["deliverTo"]?.stringValue, target != app { return [] }
        switch name {
        case "willContinue":
            guard let type = event["type"]?.stringValue, types.contains(type), open[acceptID] == nil else { return [] }
            open[acceptID] = type
            return [.willContinue(type: type)]
        case "continued":
            guard let body = event["activity"], let activity = try? Activity(json: body), types.contains(activity.type) else { return [] }
            return finish(acceptID, type: activity.type, with: .continued(activity))
        case "failed":
            guard let type = event["type"]?.stringValue, types.contains(type) else { return [] }
            let error = event["error"].map(HandoffError.init(json:)) ?? HandoffError(.internal, "The continuation failed.", fix: "Try again.")
            return finish(acceptID, type: type, with: .failed(type: type, error: error))
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

extension HandoffError {
    init(json: JSONValue) {
        self.init(HandoffError.Code(rawValue: json["code"]?.stringValue ?? "") ?? .internal,
                  json["message"]?.stringValue ?? "", fix: json["fix"]?.stringValue ?? "")
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
        try events.subscribe()
        var declaration: [String: JSONValue] = ["app": .string(name), "types": .array(types.sorted().map { .string($0) })]
        // Started by handoffd for a continuation: the .desktop file it started us from, so it is matched by file id.
        if let desktopID = ProcessInfo.processInfo.environment["HANDOFF_DESKTOP_ID"] { declaration["desktopId"] = .string(desktopID) }
        _ = try events.request("declare", declaration)
    }

    /// Delivers events to `handler` on a background thread until the daemon goes away.
    public func run(handler: ContinuationHandler) {
        let thread = Thread { [self] in
            while true {
                let event: JSONValue?
                do { event = try events.nextEvent() } catch { event = nil }
                guard let event else {
                    deliver(tracker.withLock { $0.connectionLost() }, to: handler)
                    return
                }
                deliver(tracker.withLock { $0.handle(event) }, to: handler)
            }
        }
        thread.name = "handoffkit events"
        thread.start()
    }

    private func deliver(_ callbacks: [ContinuationTracker.Callback], to handler: ContinuationHandler) {
        for callback in callbacks {
            switch callback {
            case let .willContinue(type): handler.willContinue(activityType: type)
            case let .continued(activity): handler.continueActivity(activity)
            case let .failed(type, error): handler.didFailToContinue(activityType: type, error: error)
            }
        }
    }
}
