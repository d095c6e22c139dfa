import Foundation
import Glibc
import HandoffCore
import Synchronization
import Testing
@testable import HandoffTransport
import HandoffRuntime

@Suite struct StreamListenerTests {
    /// A client of the test's listener, its reads bounded so a failure cannot hang the suite.
    static func client(to address: SocketAddress) throws -> StreamConnection {
        let client = try StreamConnection.connect(to: address, timeoutMillis: 2_000)
        try client.setTimeout(millis: 2_000)
        return client
    }

    /// Polls `condition` for up to 2 s (the listener's threads run on their own).
    func waitFor(millis: UInt64 = 2_000, _ condition: () -> Bool) {
        let deadline = monotonicMillis() + millis
        while !condition(), monotonicMillis() < deadline { usleep(2_000) }
    }

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

    /// Attack regression (round two, 1): strangers held every transfer slot with idle
    /// connections until their handshake deadline, so no paired device got through. A full
    /// pool now evicts its oldest connection that has not proven who it is, never a proven one.
    @Test func aFullPoolEvictsTheOldestUnprovenConnectionNeverAProvenOne() throws {
        let listener = try StreamListener.tcp(port: 0)
        listener.run(name: "test", limits: ConnectionLimits(total: 4, perSource: 64, evictsUnproven: true)) { connection in
            // "P" proves itself (as a finished handshake does); anything else stays silent.
            guard let first = try? connection.read(exactly: 1) else { return }
            if first == [UInt8(ascii: "P")] { connection.markProven() }
            try? connection.write(first)
            _ = try? connection.read(exactly: 1) // held until the client goes
        }
        defer { listener.stop() }
        let address = try SocketAddress(host: "127.0.0.1", port: listener.port)
        func connect() throws -> StreamConnection { try Self.client(to: address) }
        // Four strangers fill the pool and say nothing.
        var strangers: [StreamConnection] = []
        for _ in 0..<4 {
            strangers.append(try connect())
            waitFor { listener.counters.active == strangers.count }
        }
        // The paired device gets in (the oldest stranger goes) and proves itself.
        let paired = try connect()
        try paired.write([UInt8(ascii: "P")])
        #expect(try paired.read(exactly: 1) == [UInt8(ascii: "P")])
        #expect((try? strangers[0].read(exactly: 1)) == nil) // evicted: end of stream
        // More strangers evict strangers (or, while evicted ones are still ending, are refused:
        // the pool holds at most twice its size), never the proven connection.
        for _ in 0..<8 { strangers.append(try connect()) }
        waitFor { listener.counters.evictedUnproven + listener.counters.refusedOverLimit >= 9 }
        #expect(listener.counters.evictedUnproven + listener.counters.refusedOverLimit >= 9)
        #expect(listener.counters.evictedUnproven >= 2)
        try paired.write([1])
        #expect(!paired.isClosed)
        #expect(listener.counters.active <= 8)
        paired.close()
        for stranger in strangers { stranger.close() }
    }

    /// Attack regression (round two, 1, 256 addresses): a device in the middle of its handshake
    /// (it has sent bytes, not yet proven) was evicted as the oldest unproven connection, and
    /// pairing failed while strangers held the slots. Idle connections go first.
    @Test func aFullPoolEvictsConnectionsThatSentNothingBeforeOneMidHandshake() throws {
        let listener = try StreamListener.tcp(port: 0)
        listener.run(name: "test", limits: ConnectionLimits(total: 3, perSource: 64, evictsUnproven: true)) { connection in
            // Reads a byte and waits for the next: a handshake under way. Answers it, then holds on.
            guard (try? connection.read(exactly: 1)) != nil, let next = try? connection.read(exactly: 1) else { return }
            try? connection.write(next)
            _ = try? connection.read(exactly: 1)
        }
        defer { listener.stop() }
        let address = try SocketAddress(host: "127.0.0.1", port: listener.port)
        func connect() throws -> StreamConnection { try Self.client(to: address) }
        // The oldest connection is a device that has begun its handshake; two strangers say nothing.
        let device = try connect()
        try device.write([0x48])
        waitFor { listener.counters.active == 1 }
        var strangers: [StreamConnection] = []
        for _ in 0..<2 {
            strangers.append(try connect())
            waitFor { listener.counters.active == strangers.count + 1 }
        }
        // Each new stranger evicts a stranger, never the device, though it is the oldest.
        for _ in 0..<4 {
            strangers.append(try connect())
            usleep(20_000)
        }
        waitFor { listener.counters.evictedUnproven >= 2 }
        #expect(listener.counters.evictedUnproven >= 2)
        try device.write([0x49])
        #expect(try device.read(exactly: 1) == [0x49])  // still served: not evicted
        #expect((try? strangers[0].read(exactly: 1)) == nil) // evicted: end of stream
        device.close()
        for stranger in strangers { stranger.close() }
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

    /// A paired device's address has a rate of its own, higher than a stranger's.
    @Test func aPreferredSourceHasItsOwnRate() throws {
        let listener = try StreamListener.tcp(port: 0)
        listener.setPreferredSources(["127.0.0.1"])
        listener.run(name: "test", limits: ConnectionLimits(total: 16, perSource: 16, perSourceRate: .init(perSecond: 0.001, burst: 2),
                                                            preferredSourceRate: .init(perSecond: 0.001, burst: 5))) { connection in
            try? connection.write([3])
        }
        defer { listener.stop() }
        let address = try SocketAddress(host: "127.0.0.1", port: listener.port)
        var served = 0
        for _ in 0..<8 {
            let client = try StreamConnection.connect(to: address, timeoutMillis: 2_000)
            try client.setTimeout(millis: 2_000)
            if (try? client.read(exactly: 1)) == [3] { served += 1 }
        }
        #expect(served == 5)
        #expect(listener.counters.refusedOverLimit == 3)
    }

    /// A connection to 127.0.0.1:`port` from the loopback address `source` (any of 127/8), sending nothing.
    static func connection(from source: String, to port: UInt16) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #expect(fd >= 0)
        func address(_ host: String, _ port: UInt16) -> sockaddr_in {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            inet_pton(AF_INET, host, &address.sin_addr)
            return address
        }
        var local = address(source, 0)
        var remote = address("127.0.0.1", port)
        let bound = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        let connected = withUnsafePointer(to: &remote) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        #expect(bound == 0 && connected == 0)
        return fd
    }

    /// Round two, 1, pairing while a stranger holds the slots: silent connections from many
    /// addresses, far faster than the handshake rate, spend none of it (it is charged when a
    /// hello asks for a handshake), so a device that says hello is answered. Hellos beyond the
    /// rate are not. With the rate charged at accept (before), the device's connection was closed.
    @Test func silentConnectionsFromManyAddressesDoNotSpendTheHandshakeRate() throws {
        let listener = try StreamListener.tcp(port: 0)
        let answered = Atomic<Int>(0)
        let limits = ConnectionLimits(total: 8, perSource: 4, perSourceRate: .init(perSecond: 5, burst: 10),
                                      handshakeRate: .init(perSecond: 0.001, burst: 3), evictsUnproven: true)
        listener.run(name: "test", limits: limits) { connection in
            // The daemon's order: the hello first, then the handshake's cost.
            guard (try? connection.read(exactly: 1)) != nil,
                  listener.allowHandshake(from: connection.remoteHost ?? "") else { return }
            answered.add(1, ordering: .relaxed)
            try? connection.write([7])
            _ = try? connection.read(exactly: 1)
        }
        defer { listener.stop() }
        // The stranger: 120 silent connections from 60 addresses, as fast as they go.
        var strangers: [Int32] = []
        defer { strangers.forEach { _ = Glibc.close($0) } }
        for index in 0..<120 { strangers.append(try Self.connection(from: "127.0.0.\(2 + index % 60)", to: listener.port)) }
        // Each took a slot from an older one, or was closed while the evicted ones ended. Wait for
        // all of them (8 hold the slots): a connect returns before the listener accepts it, and one
        // that met a full accept queue is accepted only when the kernel retries it, maybe a second
        // later; such a stranger would then evict a device whose hello is not read yet.
        func turnedAway() -> Int { listener.counters.evictedUnproven + listener.counters.refusedOverLimit }
        waitFor(millis: 10_000) { turnedAway() >= 120 - 8 }
        #expect(turnedAway() == 120 - 8)
        // And for the evicted ones' threads to end: until then a device from an address not known
        // as a paired one's may be refused (the next test), which is not what this one is about.
        waitFor(millis: 10_000) { listener.counters.windingDown == 0 }
        #expect(listener.counters.windingDown == 0)
        // Devices that say hello: the first three (the burst) are answered, the fourth is not.
        let address = try SocketAddress(host: "127.0.0.1", port: listener.port)
        var replies: [[UInt8]?] = []
        var devices: [StreamConnection] = []
        for _ in 0..<4 {
            let device = try Self.client(to: address)
            try device.write([0x48])
            replies.append(try? device.read(exactly: 1))
            devices.append(device)
        }
        #expect(replies == [[7], [7], [7], nil])
        #expect(answered.load(ordering: .relaxed) == 3)
        #expect(listener.counters.handshakesRefused == 1)
        #expect(turnedAway() >= 100)
        devices.forEach { $0.close() }
    }

    /// Regression (found as a flaky test under load): evicted strangers' threads, not yet run by
    /// the scheduler, held places, and a paired device arriving during the flood was refused.
    /// An evicted connection now gives up its place at once; at most `total` of them wind down
    /// before other strangers are refused, and a paired device's address is admitted regardless.
    @Test func aPairedDeviceIsAdmittedWhileEvictedConnectionsWindDown() throws {
        let listener = try StreamListener.tcp(port: 0)
        // Evicted connections stay "winding down" until the test lets their threads end.
        let windDown = Locked(false)
        listener.run(name: "test", limits: ConnectionLimits(total: 2, perSource: 8, perSourceRate: .init(perSecond: 100, burst: 100),
                                                            evictsUnproven: true)) { connection in
            guard let hello = try? connection.read(exactly: 1) else {
                while !windDown.withLock({ $0 }) { usleep(5_000) }
                return
            }
            try? connection.write(hello)
            _ = try? connection.read(exactly: 1)
        }
        defer { windDown.withLock { $0 = true }; listener.stop() }
        var strangers: [Int32] = []
        defer { strangers.forEach { _ = Glibc.close($0) } }
        func strangerConnects() throws { strangers.append(try Self.connection(from: "127.0.0.2", to: listener.port)) }
        // Two strangers fill the pool; two more evict them, whose threads do not end.
        for expected in 1...2 {
            try strangerConnects()
            waitFor { listener.counters.active == expected }
        }
        for evicted in 1...2 {
            try strangerConnects()
            waitFor { listener.counters.evictedUnproven == evicted }
        }
        #expect(listener.counters.active == 2)
        #expect(listener.counters.windingDown == 2)
        // A third eviction would pass the bound: the next stranger is refused.
        try strangerConnects()
        waitFor { listener.counters.refusedOverLimit == 1 }
        #expect(listener.counters.refusedOverLimit == 1)
        #expect(listener.counters.windingDown == 2)
        // A paired device's address is admitted past it (it evicts a stranger) and answered.
        listener.setPreferredSources(["127.0.0.1"])
        let device = try Self.client(to: SocketAddress(host: "127.0.0.1", port: listener.port))
        defer { device.close() }
        try device.write([0x48])
        #expect(try device.read(exactly: 1) == [0x48])
        #expect(listener.counters.windingDown == 3)
        #expect(listener.counters.active == 2)
        // When the evicted threads end, their count goes, and the places stay as they are.
        windDown.withLock { $0 = true }
        waitFor { listener.counters.windingDown == 0 }
        #expect(listener.counters.windingDown == 0)
        #expect(listener.counters.active == 2)
    }

    /// An evicted connection from the same source as the one evicting it: the source's count
    /// is what it holds (two), not one more, so its next connection evicts too, not refused.
    @Test func aSourceEvictingItsOwnConnectionKeepsItsCount() throws {
        let listener = try StreamListener.tcp(port: 0)
        listener.run(name: "test", limits: ConnectionLimits(total: 2, perSource: 3, evictsUnproven: true)) { connection in
            _ = try? connection.read(exactly: 1)
        }
        defer { listener.stop() }
        let address = try SocketAddress(host: "127.0.0.1", port: listener.port)
        var connections: [StreamConnection] = []
        defer { connections.forEach { $0.close() } }
        for expected in 1...4 {
            connections.append(try Self.client(to: address))
            waitFor { listener.counters.active + listener.counters.evictedUnproven + listener.counters.refusedOverLimit == expected }
        }
        #expect(listener.counters.evictedUnproven == 2)
        #expect(listener.counters.refusedOverLimit == 0)
        #expect(listener.counters.active == 2)
    }

    /// A paired device's address is never held to the handshake rate.
    @Test func aPreferredSourceIsNotHeldToTheHandshakeRate() throws {
        let listener = try StreamListener.tcp(port: 0)
        listener.run(name: "test", limits: ConnectionLimits(total: 4, perSource: 4, handshakeRate: .init(perSecond: 0.001, burst: 1))) { _ in }
        defer { listener.stop() }
        #expect(listener.allowHandshake(from: "10.0.0.9"))
        #expect(!listener.allowHandshake(from: "10.0.0.9"))
        listener.setPreferredSources(["10.0.0.9"])
        #expect((0..<10).allSatisfy { _ in listener.allowHandshake(from: "::ffff:10.0.0.9") })
        #expect(!listener.allowHandshake(from: "10.0.0.10"))
        #expect(listener.counters.handshakesRefused == 2)
    }

    /// After stop() the loop closes the socket: the port can be bound again.
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
        // At once, before the loop has closed it: a daemon started again on the same path
        // right after the old one stopped must not find it still answering.
        #expect((try? StreamConnection.connect(unixPath: path)) == nil)
        let again = try StreamListener.unix(path: path)
        again.stop()
    }
}
