import FoundationEssentials
import Glibc
import HandoffAPI
import HandoffCore
import HandoffTransport
import HandoffRuntime
import Synchronization

/// One subscriber's event stream. Writes happen on the sink's own thread
/// ("events", a SerialWorker) so a subscriber that stops reading never blocks the daemon; one that falls
/// too far behind, or whose socket stays full for `sendTimeoutMillis`, is
/// disconnected. Disconnecting shuts the socket down for every thread that
/// uses it; its descriptor number is released only when the last of them is
/// done (StreamConnection), so no event can reach another connection.
final class EventSink: Sendable {
    static let maximumBacklog = 1024
    let connection: StreamConnection
    private let queue = SerialWorker(name: "events")
    private let backlog = Atomic<Int>(0)
    /// Set by `subscribe` or `declare` with `payloads`: the app takes its continuations' payloads by descriptor.
    private let payloads: Atomic<Bool>

    init(connection: StreamConnection, wantsPayloads: Bool = false) {
        self.connection = connection
        payloads = Atomic(wantsPayloads)
    }

    var wantsPayloads: Bool {
        get { payloads.load(ordering: .relaxed) }
        set { payloads.store(newValue, ordering: .relaxed) }
    }

    func send(_ event: Event) -> Bool {
        send(line: JSONWriter.line(event.json))
    }

    /// An event whose descriptor (the payload) travels with its first byte.
    func send(_ event: Event, payload: PayloadBuffer) -> Bool {
        send(line: JSONWriter.line(event.json), payload: payload)
    }

    /// Returns false once the subscriber is gone or hopelessly behind. The
    /// payload stays mapped until its descriptor has been passed on.
    func send(line: [UInt8], payload: PayloadBuffer? = nil) -> Bool {
        guard !connection.isClosed else { return false }
        guard backlog.add(1, ordering: .relaxed).newValue <= Self.maximumBacklog else {
            connection.close()
            return false
        }
        queue.async { [self] in
            if !connection.isClosed,
               (try? connection.write(line, passing: payload.map { [$0.descriptorForPassing] } ?? [])) == nil {
                connection.close()
            }
            backlog.subtract(1, ordering: .relaxed)
        }
        return true
    }

    /// Before the daemon exits: lets the sinks write what is queued for at most
    /// `millis`, then ends every connection whether or not its subscriber read
    /// it. Blocks the calling thread, never an actor.
    static func finish(_ sinks: [EventSink], withinMillis millis: Int) {
        let drained = Signals(value: 0)
        for sink in sinks { sink.queue.async { drained.signal() } }
        let end = monotonicMillis() &+ UInt64(max(0, millis))
        var waiting = sinks.count
        while waiting > 0, drained.wait(millis: Int(end &- min(end, monotonicMillis()))) { waiting -= 1 }
        for sink in sinks { sink.connection.close() }
    }
}
