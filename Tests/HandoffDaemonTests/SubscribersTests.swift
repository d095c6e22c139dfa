import Glibc
@testable import HandoffDaemon
@testable import HandoffTransport
import Testing

@Suite struct SubscribersTests {
    @Test func subscribingTwiceKeepsOneSinkSoEveryEventArrivesOnce() throws {
        let (daemonSide, app) = try connectedPair("daemon", "app")
        defer { daemonSide.close(); app.close() }
        var subscribers = Subscribers()
        let first = subscribers.add(daemonSide, wantsPayloads: false)
        let second = subscribers.add(daemonSide, wantsPayloads: true)
        #expect(first === second)
        #expect(first.wantsPayloads)
        subscribers.broadcast(line: Array("{\"event\":\"one\"}\n".utf8))
        subscribers.broadcast(line: Array("{\"event\":\"two\"}\n".utf8))
        #expect(try app.readLine(maxBytes: 100).map { String(decoding: $0, as: UTF8.self) } == "{\"event\":\"one\"}")
        #expect(try app.readLine(maxBytes: 100).map { String(decoding: $0, as: UTF8.self) } == "{\"event\":\"two\"}")
    }

    @Test func aSinkWhoseConnectionClosedLeavesAtTheNextEvent() throws {
        let (daemonSide, app) = try connectedPair("daemon", "app")
        defer { app.close() }
        var subscribers = Subscribers()
        _ = subscribers.add(daemonSide, wantsPayloads: false)
        daemonSide.close()
        subscribers.broadcast(line: Array("{}\n".utf8))
        #expect(subscribers.all.isEmpty)
    }

    @Test func theSkippedConnectionGetsNothing() throws {
        let (a, appA) = try connectedPair("daemon", "app")
        let (b, appB) = try connectedPair("daemon", "app")
        defer { for end in [a, appA, b, appB] { end.close() } }
        var subscribers = Subscribers()
        _ = subscribers.add(a, wantsPayloads: false)
        _ = subscribers.add(b, wantsPayloads: false)
        var reached: [String] = []
        subscribers.send(except: ObjectIdentifier(a)) { reached.append($0.connection.remote); return true }
        #expect(reached == ["daemon"] && subscribers.all.count == 2)
        subscribers.remove(b)
        #expect(subscribers.sink(of: b) == nil && subscribers.sink(of: a) != nil)
    }
}
