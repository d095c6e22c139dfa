import HandoffAPI
import HandoffTransport

/// Everything on the local API socket that outlives one request: the connections that take
/// events (Subscribers), the types apps declare while they run, and the types installed
/// apps declare in their `.desktop` files (AppDeclarations). A connection may declare and
/// subscribe in either order (Docs/LOCAL-API.md, "declare"); both end when it closes.
struct LocalClients {
    var subscribers = Subscribers()
    var declarations = AppDeclarations()

    /// `subscribe`: the session takes events, and payloads when it asks now or asked when it declared.
    mutating func subscribe(_ session: LocalSession, payloads: Bool) -> AppDeclarations.Registration? {
        let declared = declarations.registered[ObjectIdentifier(session.connection)]
        subscribers.add(session, wantsPayloads: payloads || declared?.payloads == true)
        return declared
    }

    /// `declare`: held while the connection stays open; a subscribed connection takes payloads now if it asks.
    mutating func declare(_ connection: StreamConnection, _ registration: AppDeclarations.Registration) {
        declarations.registered[ObjectIdentifier(connection)] = registration
        if registration.payloads { subscribers.session(of: connection)?.wantsPayloads = true }
    }

    /// The connection closed. True when it had declared types (an app quit).
    mutating func disconnected(_ connection: StreamConnection) -> Bool {
        subscribers.remove(connection)
        return declarations.registered.removeValue(forKey: ObjectIdentifier(connection)) != nil
    }

    /// `continued` to every session but `skipped`'s connection: the payload goes (by descriptor)
    /// only to the app it is delivered to, and only when that app asked for payloads.
    mutating func broadcastContinued(_ event: ContinuedEvent, payload: PayloadBuffer, except skipped: ObjectIdentifier?) {
        // A copy: the sessions are being changed (a gone one leaves) while each is looked up.
        let registered = declarations.registered
        subscribers.send(except: skipped) { session in
            Self.sendContinued(event, payload: payload, to: session, app: registered[ObjectIdentifier(session.connection)]?.app)
        }
    }

    /// One `continued` to one session, whose connection declared as `app` (nil: not an app).
    static func sendContinued(_ event: ContinuedEvent, payload: PayloadBuffer, to session: LocalSession, app: String?) -> Bool {
        guard session.wantsPayloads, app == event.deliverTo else { return session.send(.continued(event)) }
        var carrying = event
        carrying.payloadFd = 0
        return session.send(.continued(carrying), payload: payload)
    }
}
