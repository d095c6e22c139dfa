import Glibc
@testable import HandoffDaemon
@testable import HandoffTransport
import Testing

@Suite struct SubscribersTests {
    @Test func subscribingTwiceKeepsOneSessionSoEveryEventArrivesOnce() throws {
        let (daemonSide, app) = try connectedPair("daemon", "app")
        defer { daemonSide.close(); app.close() }
        var subscribers = Subscribers()
        let session = LocalSession(connection: daemonSide, loop: .shared)
        subscribers.add(session, wantsPayloads: false)
        subscribers.add(session, wantsPayloads: true)
        #expect(subscribers.all.count == 1)
        #expect(session.wantsPayloads)
        subscribers.broadcast(line: Array("{\"event\":\"one\"}\n".utf8))
        subscribers.broadcast(line: Array("{\"event\":\"two\"}\n".utf8))
        #expect(try app.readLine(maxBytes: 100).map { String(decoding: $0, as: UTF8.self) } == "{\"event\":\"one\"}")
        #expect(try app.readLine(maxBytes: 100).map { String(decoding: $0, as: UTF8.self) } == "{\"event\":\"two\"}")
    }

    @Test func aSessionWhoseConnectionClosedLeavesAtTheNextEvent() throws {
        let (daemonSide, app) = try connectedPair("daemon", "app")
        defer { app.close() }
        var subscribers = Subscribers()
        subscribers.add(LocalSession(connection: daemonSide, loop: .shared), wantsPayloads: false)
        daemonSide.close()
        subscribers.broadcast(line: Array("{}\n".utf8))
        #expect(subscribers.all.isEmpty)
    }

    @Test func theSkippedConnectionGetsNothing() throws {
        let (a, appA) = try connectedPair("daemon", "app")
        let (b, appB) = try connectedPair("daemon", "app")
        defer { for end in [a, appA, b, appB] { end.close() } }
        var subscribers = Subscribers()
        subscribers.add(LocalSession(connection: a, loop: .shared), wantsPayloads: false)
        subscribers.add(LocalSession(connection: b, loop: .shared), wantsPayloads: false)
        var reached: [String] = []
        subscribers.send(except: ObjectIdentifier(a)) { reached.append($0.connection.remote); return true }
        #expect(reached == ["daemon"] && subscribers.all.count == 2)
        subscribers.remove(b)
        #expect(subscribers.session(of: b) == nil && subscribers.session(of: a) != nil)
    }
}
