import HandoffAPI
import HandoffTransport

/// Everything on the local API socket that outlives one request: the connections that take
/// events (Subscribers), the types apps declare while they run, and the types installed
/// apps declare in their `.desktop` files (AppDeclarations). A connection may declare and
/// subscribe in either order (Docs/LOCAL-API.md, "declare"); both end when it closes.
struct LocalClients {
    var subscribers = Subscribers()
    var declarations = AppDeclarations()

    /// `subscribe`: the connection's sink, taking payloads when it asks now or asked when it declared.
    mutating func subscribe(_ connection: StreamConnection, payloads: Bool) -> (sink: EventSink, declared: AppDeclarations.Registration?) {
        let declared = declarations.registered[ObjectIdentifier(connection)]
        let sink = subscribers.add(connection, wantsPayloads: payloads || declared?.payloads == true)
        return (sink, declared)
    }

    /// `declare`: held while the connection stays open; a subscribed connection takes payloads now if it asks.
    mutating func declare(_ connection: StreamConnection, _ registration: AppDeclarations.Registration) {
        declarations.registered[ObjectIdentifier(connection)] = registration
        if registration.payloads { subscribers.sink(of: connection)?.wantsPayloads = true }
    }

    /// The app a sink's connection declared as, if it declared.
    func app(of sink: EventSink) -> String? {
        declarations.registered[ObjectIdentifier(sink.connection)]?.app
    }

    /// The connection closed. True when it had declared types (an app quit).
    mutating func disconnected(_ connection: StreamConnection) -> Bool {
        subscribers.remove(connection)
        return declarations.registered.removeValue(forKey: ObjectIdentifier(connection)) != nil
    }

    /// `continued` to every sink but `skipped`'s connection: the payload goes (by descriptor)
    /// only to the app it is delivered to, and only when that app asked for payloads.
    mutating func broadcastContinued(_ event: ContinuedEvent, payload: PayloadBuffer, except skipped: ObjectIdentifier?) {
        // A copy: the sinks are being changed (a gone one leaves) while each is looked up.
        let registered = declarations.registered
        subscribers.send(except: skipped) { sink in
            Self.sendContinued(event, payload: payload, to: sink, app: registered[ObjectIdentifier(sink.connection)]?.app)
        }
    }

    /// One `continued` to one sink, whose connection declared as `app` (nil: not an app).
    static func sendContinued(_ event: ContinuedEvent, payload: PayloadBuffer, to sink: EventSink, app: String?) -> Bool {
        guard sink.wantsPayloads, app == event.deliverTo else { return sink.send(.continued(event)) }
        var carrying = event
        carrying.payloadFd = 0
        return sink.send(.continued(carrying), payload: payload)
    }
}
