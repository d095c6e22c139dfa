import Foundation
import Glibc
import HandoffCore
import Synchronization
import Testing
@testable import HandoffTransport

@Suite struct StreamListenerTests {
    /// Finding 6: 2,000 trickled connections took 2,012 threads. Connections over
    /// the per-source limit are closed at once and counted; those within it are served.
    @Test func connectionsOverThePerSourceLimitAreClosedAndCounted() throws {
        let listener = try StreamListener.tcp(port: 0)
        let release = DispatchSemaphore(value: 0)
        let served = Atomic<Int>(0)
        listener.run(name: "test", limits: ConnectionLimits(total: 16, perSource: 2)) { connection in
            served.add(1, ordering: .relaxed)
            try? connection.write([1])
            release.wait()
        }
        defer {
            for _ in 0..<4 { release.signal() }
            listener.stop()
        }
        let address = try SocketAddress(host: "127.0.0.1", port: listener.port)
        var clients: [StreamConnection] = []
        for _ in 0..<4 {
            let client = try StreamConnection.connect(to: address, timeoutMillis: 2_000)
            try client.setTimeout(millis: 2_000)
            clients.append(client)
        }
        // The first two are served (they get a byte); the other two see the end of the stream.
        var outcomes: [Bool] = []
        for client in clients { outcomes.append((try? client.read(exactly: 1)) == [1]) }
        #expect(outcomes.filter { $0 }.count == 2)
        #expect(served.load(ordering: .relaxed) == 2)
        #expect(listener.counters.refusedOverLimit == 2)
        #expect(listener.counters.active == 2)
    }

    @Test func aFinishedConnectionFreesItsSlot() throws {
        let listener = try StreamListener.tcp(port: 0)
        listener.run(name: "test", limits: ConnectionLimits(total: 1, perSource: 1)) { connection in
            try? connection.write([2])
        }
        defer { listener.stop() }
        let address = try SocketAddress(host: "127.0.0.1", port: listener.port)
        for _ in 0..<3 {
            let client = try StreamConnection.connect(to: address, timeoutMillis: 2_000)
            try client.setTimeout(millis: 2_000)
            #expect(try client.read(exactly: 1) == [2])
            // Wait for the server's thread to finish before the next one.
            let deadline = monotonicMillis() + 2_000
            while listener.counters.active > 0, monotonicMillis() < deadline { usleep(5_000) }
        }
        #expect(listener.counters.refusedOverLimit == 0)
    }

    /// New connections cost a handshake each: beyond the per-source rate they are closed unserved.
    @Test func connectionsOverThePerSourceRateAreClosed() throws {
        let listener = try StreamListener.tcp(port: 0)
        listener.run(name: "test", limits: ConnectionLimits(total: 16, perSource: 16, perSourceRate: .init(perSecond: 0.001, burst: 3))) { connection in
            try? connection.write([3])
        }
        defer { listener.stop() }
        let address = try SocketAddress(host: "127.0.0.1", port: listener.port)
        var served = 0
        for _ in 0..<6 {
            let client = try StreamConnection.connect(to: address, timeoutMillis: 2_000)
            try client.setTimeout(millis: 2_000)
            if (try? client.read(exactly: 1)) == [3] { served += 1 }
        }
        #expect(served == 3)
        #expect(listener.counters.refusedOverLimit == 3)
    }

    /// stop() wakes the accepting thread, which closes the socket: the port can be bound again.
    @Test func stopReleasesThePort() throws {
        let listener = try StreamListener.tcp(port: 0)
        let port = listener.port
        listener.run(name: "test", limits: ConnectionLimits(total: 1, perSource: 1)) { _ in }
        listener.stop()
        let deadline = monotonicMillis() + 3_000
        var rebound: StreamListener?
        while rebound == nil, monotonicMillis() < deadline {
            rebound = try? StreamListener.tcp(port: port)
            if rebound == nil { usleep(20_000) }
        }
        #expect(rebound != nil, "the listening socket was not closed after stop()")
    }

    @Test func stopEndsAUnixListener() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("listener-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("s.sock").path
        let listener = try StreamListener.unix(path: path)
        listener.run(name: "test", limits: ConnectionLimits(total: 1, perSource: 1)) { _ in }
        listener.stop()
        // Once the accepting thread has closed the socket, connecting is refused.
        let deadline = monotonicMillis() + 3_000
        var refused = false
        while !refused, monotonicMillis() < deadline {
            refused = (try? StreamConnection.connect(unixPath: path)) == nil
            if !refused { usleep(20_000) }
        }
        #expect(refused)
    }
}
