import Glibc
import HandoffAPI
import HandoffCore
@testable import HandoffDaemon
@testable import HandoffTransport
import Testing

private func line(_ connection: StreamConnection) throws -> JSONValue? {
    try connection.readLine(maxBytes: 4096).flatMap { try? JSONValue.parse(String(decoding: $0, as: UTF8.self)) }
}

private func continued(deliverTo: String) throws -> ContinuedEvent {
    let header = try EncodedActivity(Activity(type: "org.example.read", title: "Chapter 3")).header
    return ContinuedEvent(acceptID: 1, peer: "K7QM", activity: header, deliverTo: deliverTo, payloadBytes: 4)
}

@Suite struct LocalClientsTests {
    @Test func thePayloadGoesOnlyToTheAppItIsForAndOnlyWhenItAsked() throws {
        let (readerSide, reader) = try connectedPair("daemon", "app")
        let (watcherSide, watcher) = try connectedPair("daemon", "app")
        let (otherSide, other) = try connectedPair("daemon", "app")
        defer { for end in [readerSide, reader, watcherSide, watcher, otherSide, other] { end.close() } }
        var clients = LocalClients()
        // Declared first, subscribed second: the payloads wish still applies.
        clients.declare(readerSide, .init(app: "Reader", types: ["org.example.read"], desktopID: nil, payloads: true))
        _ = clients.subscribe(LocalSession(connection: readerSide, loop: .shared), payloads: false)
        _ = clients.subscribe(LocalSession(connection: watcherSide, loop: .shared), payloads: true)
        clients.declare(otherSide, .init(app: "Other", types: ["org.example.read"], desktopID: nil, payloads: true))
        _ = clients.subscribe(LocalSession(connection: otherSide, loop: .shared), payloads: false)
        let payload = try PayloadBuffer.create(count: 4)
        try payload.seal()
        clients.broadcastContinued(try continued(deliverTo: "Reader"), payload: payload, except: nil)
        #expect(try line(reader)?["payloadFd"] == .integer(0))
        // A watcher that asked for payloads but is not the app, and another app: the event without it.
        #expect(try line(watcher).map { $0["event"] == "continued" && $0["payloadFd"] == nil } == true)
        #expect(try line(other).map { $0["event"] == "continued" && $0["payloadFd"] == nil } == true)
    }

    @Test func aClosedConnectionEndsItsSubscriptionAndItsDeclaration() throws {
        let (daemonSide, app) = try connectedPair("daemon", "app")
        defer { daemonSide.close(); app.close() }
        var clients = LocalClients()
        clients.declare(daemonSide, .init(app: "Reader", types: ["org.example.read"], desktopID: nil, payloads: false))
        let declared = clients.subscribe(LocalSession(connection: daemonSide, loop: .shared), payloads: false)
        #expect(declared?.app == "Reader" && clients.subscribers.session(of: daemonSide) != nil)
        let first = clients.disconnected(daemonSide)
        #expect(first && clients.subscribers.all.isEmpty && clients.declarations.registered.isEmpty)
        let again = clients.disconnected(daemonSide)
        #expect(!again)
    }
}
