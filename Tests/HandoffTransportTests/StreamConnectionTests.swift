import Foundation
import Glibc
import HandoffCore
import Testing
@testable import HandoffTransport
import HandoffRuntime

/// Two connected StreamConnections over an AF_UNIX socket pair.
func socketPair() throws -> (StreamConnection, StreamConnection) {
    var fds: [Int32] = [-1, -1]
    let status = fds.withUnsafeMutableBufferPointer {
        socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, $0.baseAddress)
    }
    try #require(status == 0)
    return (StreamConnection(fd: fds[0], remote: "first"), StreamConnection(fd: fds[1], remote: "second"))
}

/// Runs `body` on a thread of its own and returns a way to wait for its result.
func onThread<T: Sendable>(_ body: @escaping @Sendable () -> T) -> @Sendable (Int) -> T? {
    let box = Locked<T?>(nil)
    let done = DispatchSemaphore(value: 0)
    Thread {
        let value = body()
        box.withLock { $0 = value }
        done.signal()
    }.start()
    return { millis in done.wait(timeout: .now() + .milliseconds(millis)) == .success ? box.withLock { $0 } : nil }
}

@Suite struct StreamConnectionTests {
    /// The attack of issue 15 finding 1: a subscriber's connection is closed while
    /// its writer still holds it; the kernel must not hand its number to the next
    /// connection, or that connection receives the writer's bytes.
    @Test func closedNumberIsNotReusedWhileTheConnectionLives() throws {
        let (local, peer) = try socketPair()
        local.close()
        let next = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { Glibc.close(next) }
        #expect(next != local.fd, "the closed connection's number went to a new socket while the object lives")
        #expect(throws: SystemError.self) { try local.write(Array("event".utf8)) }
        #expect(local.isClosed)
        // The other end sees the end of the stream, not the write.
        #expect(try peer.readLine(maxBytes: 64) == nil)
    }

    @Test func closeWakesABlockedReader() throws {
        let (local, _) = try socketPair()
        let result = onThread { () -> Bool in (try? local.readLine(maxBytes: 64)) == nil }
        usleep(50_000)
        local.close()
        #expect(result(5_000) == true, "a reader blocked on a closed connection did not return")
    }

    @Test func closeWakesABlockedWriter() throws {
        let (local, _) = try socketPair()
        let chunk = [UInt8](repeating: 7, count: 64 * 1024)
        // The peer never reads: the writer blocks once the socket buffers are full.
        let result = onThread { () -> Bool in
            for _ in 0..<1024 { if (try? local.write(chunk)) == nil { return true } }
            return false
        }
        usleep(100_000)
        local.close()
        #expect(result(5_000) == true, "a writer blocked on a closed connection did not return")
    }

    /// Finding 6: one byte every few seconds kept a connection (and its thread) forever.
    @Test func deadlineCutsATricklingPeer() throws {
        let (local, peer) = try socketPair()
        local.setDeadline(millisFromNow: 300)
        let trickle = onThread { () -> Void in
            for _ in 0..<20 {
                if (try? peer.write([0x41])) == nil { return }
                usleep(100_000)
            }
        }
        let started = monotonicMillis()
        #expect(throws: SystemError.self) { _ = try local.read(exactly: 1_000) }
        #expect(monotonicMillis() - started < 1_500)
        peer.close()
        _ = trickle(3_000)
    }

    /// A HandoffKit client waits in readLine for its replies and events: short lines leave its
    /// buffers small, a long one grows them while it arrives, and they shrink once it is read.
    @Test func shortLinesKeepTheBufferSmallAndALongOneDoesNotStay() throws {
        let (local, peer) = try socketPair()
        try peer.write(Array("{\"event\":\"offer\"}\n".utf8))
        #expect(try local.readLine(maxBytes: 1 << 20) == Array("{\"event\":\"offer\"}".utf8))
        #expect(local.scratchCapacity == StreamConnection.initialScratchBytes)
        let long = [UInt8](repeating: 0x61, count: 200_000)
        let writer = onThread { (try? peer.write(long + [0x0A] + Array("short\n".utf8))) != nil }
        #expect(try local.readLine(maxBytes: 1 << 20) == long)
        #expect(writer(5_000) == true)
        #expect(try local.readLine(maxBytes: 1 << 20) == Array("short".utf8))
        #expect(local.scratchCapacity == StreamConnection.initialScratchBytes)
    }

    @Test func smallReadsKeepTheBufferSmall() throws {
        let (local, peer) = try socketPair()
        try peer.write([UInt8](repeating: 1, count: 100))
        _ = try local.read(exactly: 100)
        #expect(local.scratchCapacity == StreamConnection.initialScratchBytes)
        // Larger than the socket buffers: written from another thread while this one reads.
        let writer = onThread { (try? peer.write([UInt8](repeating: 2, count: 300_000))) != nil }
        _ = try local.read(exactly: 300_000)
        #expect(writer(5_000) == true)
        #expect(local.scratchCapacity == StreamConnection.maximumScratchBytes)
    }
}
