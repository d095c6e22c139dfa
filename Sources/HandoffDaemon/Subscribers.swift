import HandoffAPI
import HandoffCore
import HandoffTransport

/// The local connections that take events, one sink per connection. A sink that is gone or
/// hopelessly behind (EventSink.send returns false) leaves at the next event.
struct Subscribers {
    private var sinks: [ObjectIdentifier: EventSink] = [:]

    var all: Dictionary<ObjectIdentifier, EventSink>.Values { sinks.values }

    /// The connection's sink: a new one, or the one it already has (subscribing twice
    /// must not bring every event twice), which then takes payloads if asked now.
    mutating func add(_ connection: StreamConnection, wantsPayloads: Bool) -> EventSink {
        if let sink = sinks[ObjectIdentifier(connection)] {
            if wantsPayloads { sink.wantsPayloads = true }
            return sink
        }
        let sink = EventSink(connection: connection, wantsPayloads: wantsPayloads)
        sinks[ObjectIdentifier(connection)] = sink
        return sink
    }

    func sink(of connection: StreamConnection) -> EventSink? {
        sinks[ObjectIdentifier(connection)]
    }

    mutating func remove(_ connection: StreamConnection) {
        sinks.removeValue(forKey: ObjectIdentifier(connection))
    }

    /// Every sink, which leave: the daemon is stopping.
    mutating func removeAll() -> [EventSink] {
        defer { sinks.removeAll() }
        return Array(sinks.values)
    }

    /// One encoded line to every sink but `skipped`'s connection; `send` says whether the sink took it.
    mutating func send(except skipped: ObjectIdentifier? = nil, _ send: (EventSink) -> Bool) {
        for (id, sink) in sinks where id != skipped && !send(sink) {
            sinks.removeValue(forKey: id)
        }
    }

    mutating func broadcast(line: [UInt8]) {
        send { $0.send(line: line) }
    }
}
