import Glibc
@testable import HandoffDaemon
import HandoffRuntime
@testable import HandoffTransport
import Testing

/// A local client served on an event loop of the test's own: lines one at a time, writes that
/// never block, and the ways a session ends.
@Suite struct LocalSessionTests {
    final class Record: Sendable {
        let lines = Locked<[String]>([])
        let arrived = Signals()
        let ended = Signals()

        func start(_ session: LocalSession) {
            session.start(onLine: { [self] _, line in
                lines.withLock { $0.append(String(decoding: line, as: UTF8.self)) }
                arrived.signal()
            }, onClose: { [self] _ in ended.signal() })
        }
    }

    private func text(_ line: [UInt8]?) -> String? { line.map { String(decoding: $0, as: UTF8.self) } }

    /// A session on a loop of the test's own, recording the lines it hands on, and the client's end.
    private func served(stallMillis: UInt64 = 5_000, maximumLineBytes: Int = Daemon.maximumRequestBytes) throws
        -> (session: LocalSession, client: StreamConnection, record: Record) {
        let (daemonSide, client) = try connectedPair("daemon", "client")
        let session = LocalSession(connection: daemonSide, loop: EventLoop(name: "session test"),
                                   stallMillis: stallMillis, maximumLineBytes: maximumLineBytes)
        let record = Record()
        record.start(session)
        return (session, client, record)
    }

    /// The kernel names who connected; only handoffd's own user is served, and an unknown
    /// user (the kernel would not say) is not.
    @Test func onlyThisUsersClientsAreServed() throws {
        let (daemonSide, client) = try connectedPair("daemon", "client")
        defer { daemonSide.close(); client.close() }
        #expect(try Daemon.admitsLocalClient(uid: daemonSide.peerUID(), ownUID: getuid()))
        #expect(!Daemon.admitsLocalClient(uid: getuid() &+ 1, ownUID: getuid()))
        #expect(!Daemon.admitsLocalClient(uid: nil, ownUID: getuid()))
    }

    @Test func linesComeOneAtATimeAndAnEndedClientIsClosedAfterItsLastReply() throws {
        let (session, client, record) = try served()
        defer { client.close() }
        try client.write(Array("one\ntwo\n".utf8))
        try #require(record.arrived.wait(millis: 10_000))
        // The second waits until the first has its reply.
        #expect(!record.arrived.wait(millis: 100))
        #expect(record.lines.withLock { $0 } == ["one"])
        session.send(line: Array("reply one\n".utf8))
        session.requestDone()
        try #require(record.arrived.wait(millis: 10_000))
        #expect(record.lines.withLock { $0 } == ["one", "two"])
        #expect(text(try client.readLine(maxBytes: 100)) == "reply one")
        // Half-closed after its requests: it still gets the last reply, then the session ends.
        client.shutdownWrite()
        #expect(!record.ended.wait(millis: 100))
        session.send(line: Array("reply two\n".utf8))
        session.requestDone()
        #expect(text(try client.readLine(maxBytes: 100)) == "reply two")
        #expect(record.ended.wait(millis: 10_000))
        #expect(session.isClosed)
    }

    /// A long line comes in many reads (each scanned once for its newline) and arrives whole.
    @Test func aLongLineInManyReadsArrivesWholeAndTheNextAfterIt() throws {
        let (session, client, record) = try served()
        defer { client.close() }
        let long = [UInt8](repeating: UInt8(ascii: "x"), count: Daemon.maximumRequestBytes - 1)
        Threads.start("test writer") {
            for start in stride(from: 0, to: long.count, by: 100_000) {
                try? client.write(Array(long[start..<min(start + 100_000, long.count)]))
            }
            try? client.write(Array("\nshort\n".utf8))
        }
        try #require(record.arrived.wait(millis: 30_000))
        #expect(record.lines.withLock { $0.first?.utf8.count } == long.count)
        session.requestDone()
        try #require(record.arrived.wait(millis: 30_000))
        #expect(record.lines.withLock { $0.last } == "short")
        session.close()
    }

    /// Many requests in one write are handed on one at a time, in order.
    @Test func pipelinedRequestsComeInOrderOneAtATime() throws {
        let (session, client, record) = try served()
        defer { client.close() }
        try client.write(Array((0..<2_000).map { "request \($0)\n" }.joined().utf8))
        for index in 0..<2_000 {
            try #require(record.arrived.wait(millis: 10_000))
            #expect(record.lines.withLock { $0.count } == index + 1)
            session.requestDone()
        }
        #expect(record.lines.withLock { $0 } == (0..<2_000).map { "request \($0)" })
        session.close()
    }

    /// A client that sends thousands of requests at once and reads its replies slowly is answered
    /// at its pace: the next request is read once the last reply is written, so its replies never
    /// pile up to the backlog that disconnects a client that stopped reading.
    @Test func aPipeliningClientIsAnsweredAtThePaceItReads() throws {
        let loop = EventLoop(name: "session test")
        let (daemonSide, client) = try connectedPair("daemon", "client")
        defer { client.close() }
        let session = LocalSession(connection: daemonSide, loop: loop, stallMillis: 60_000)
        let ended = Signals()
        session.start(onLine: { session, line in
            session.send(line: line + [UInt8](repeating: UInt8(ascii: " "), count: 2_000) + [0x0A])
            session.requestDone()
        }, onClose: { _ in ended.signal() })
        let count = 4_000
        Threads.start("test writer") {
            try? client.write(Array((0..<count).map { "request \($0)\n" }.joined().utf8))
        }
        for index in 0..<count {
            if index % 500 == 0 { Threads.sleep(seconds: 0.05) }
            let reply = try #require(text(try client.readLine(maxBytes: 4096)))
            #expect(reply.hasPrefix("request \(index) "))
        }
        #expect(!ended.wait(millis: 50))
        session.close()
    }

    @Test func whatTheSocketCannotTakeIsWrittenWhenTheClientReads() throws {
        let (session, client, _) = try served(stallMillis: 60_000)
        defer { client.close() }
        // Far more than a Unix socket's buffer, queued at once without blocking the sender.
        let count = 64
        for index in 0..<count {
            #expect(session.send(line: Array(String(repeating: "\(index % 10)", count: 64 * 1024 - 1).utf8) + [0x0A]))
        }
        for index in 0..<count {
            let line = try #require(try client.readLine(maxBytes: 64 * 1024))
            #expect(line.count == 64 * 1024 - 1 && line.allSatisfy { $0 == UInt8(ascii: "0") + UInt8(index % 10) })
        }
        #expect(!session.isClosed)
        session.close()
    }

    @Test func aClientThatStopsReadingIsDisconnectedAfterTheStall() throws {
        let (session, client, record) = try served(stallMillis: 200)
        defer { client.close() }
        for _ in 0..<64 { session.send(line: [UInt8](repeating: 0x41, count: 64 * 1024)) }
        #expect(record.ended.wait(millis: 10_000))
        #expect(!session.send(line: Array("late\n".utf8)))
    }

    @Test func aBacklogOverItsBoundDisconnects() throws {
        let (session, client, record) = try served(stallMillis: 60_000)
        defer { client.close() }
        // The socket full, then one message more than the backlog holds.
        #expect(session.send(line: [UInt8](repeating: 0x41, count: 4 << 20)))
        for _ in 0..<LocalSession.maximumBacklog - 1 { #expect(session.send(line: Array("{}\n".utf8))) }
        #expect(!session.send(line: Array("{}\n".utf8)))
        #expect(record.ended.wait(millis: 10_000))
    }

    @Test func aLineOverTheLimitIsAnsweredAndEndsTheSession() throws {
        let (_, client, record) = try served(maximumLineBytes: 1_000)
        defer { client.close() }
        try client.write([UInt8](repeating: 0x41, count: 5_000))
        let reply = try #require(text(try client.readLine(maxBytes: 4096)))
        #expect(reply.contains("longer than 1000 bytes"))
        #expect(record.ended.wait(millis: 10_000))
        #expect(record.lines.withLock { $0 }.isEmpty)
    }

    @Test func aPayloadsDescriptorTravelsWithItsMessage() throws {
        let (session, client, _) = try served()
        defer { client.close() }
        let payload = try PayloadBuffer.create(count: 4)
        try payload.seal()
        #expect(session.send(line: Array("{\"payloadFd\":0}\n".utf8), payload: payload))
        #expect(text(try client.readLine(maxBytes: 100)) == "{\"payloadFd\":0}")
        let received = try client.takeDescriptors(1)
        #expect(received.count == 1)
        for descriptor in received { close(descriptor) }
        session.close()
    }

    @Test func aClientThatHangsUpMidRequestEndsTheSession() throws {
        let (session, client, record) = try served()
        try client.write(Array("request\n".utf8))
        try #require(record.arrived.wait(millis: 10_000))
        client.close()
        // No reply was queued: the hang-up alone ends it, and a late reply is refused.
        #expect(record.ended.wait(millis: 10_000))
        #expect(!session.send(line: Array("late\n".utf8)))
    }
}
