import Foundation
import HandoffCore
import HandoffTransport
import Synchronization

/// One subscriber's event stream. Writes happen on the sink's own serial queue
/// so a subscriber that stops reading never blocks the daemon; one that falls
/// too far behind is disconnected.
final class EventSink: Sendable {
    static let maximumBacklog = 1024
    let connection: StreamConnection
    private let queue = DispatchQueue(label: "handoffd.event-sink")
    private let backlog = Atomic<Int>(0)

    init(connection: StreamConnection) {
        self.connection = connection
    }

    /// Returns false once the subscriber is gone or hopelessly behind.
    func send(_ event: JSONValue) -> Bool {
        guard backlog.add(1, ordering: .relaxed).newValue <= Self.maximumBacklog else {
            connection.close()
            return false
        }
        let line = Array((event.encodedLine() + "\n").utf8)
        queue.async { [self] in
            if (try? connection.write(line)) == nil { connection.close() }
            backlog.subtract(1, ordering: .relaxed)
        }
        return true
    }

    /// Waits until everything queued so far is written (used before the daemon exits).
    func flush() {
        queue.sync {}
    }
}
