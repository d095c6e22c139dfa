import HandoffAPI
import HandoffCore
import HandoffTransport

/// The local sessions that take events, one per connection. A session that is gone or
/// hopelessly behind (LocalSession.send returns false) leaves at the next event.
struct Subscribers {
    private var sessions: [ObjectIdentifier: LocalSession] = [:]

    var all: Dictionary<ObjectIdentifier, LocalSession>.Values { sessions.values }

    /// Subscribing twice must not bring every event twice: the session is kept once, and
    /// takes payloads from now on if it asks now.
    mutating func add(_ session: LocalSession, wantsPayloads: Bool) {
        if wantsPayloads { session.wantsPayloads = true }
        sessions[ObjectIdentifier(session.connection)] = session
    }

    func session(of connection: StreamConnection) -> LocalSession? {
        sessions[ObjectIdentifier(connection)]
    }

    mutating func remove(_ connection: StreamConnection) {
        sessions.removeValue(forKey: ObjectIdentifier(connection))
    }

    /// Every session, which leave: the daemon is stopping.
    mutating func removeAll() -> [LocalSession] {
        defer { sessions.removeAll() }
        return Array(sessions.values)
    }

    /// One message to every session but `skipped`'s connection; `send` says whether the session took it.
    mutating func send(except skipped: ObjectIdentifier? = nil, _ send: (LocalSession) -> Bool) {
        for (id, session) in sessions where id != skipped && !send(session) {
            sessions.removeValue(forKey: id)
        }
    }

    mutating func broadcast(line: [UInt8]) {
        send { $0.send(line: line) }
    }
}
