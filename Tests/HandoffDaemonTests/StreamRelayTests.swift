import Dispatch
import Foundation
import Glibc
import HandoffCore
import HandoffCrypto
@testable import HandoffDaemon
@testable import HandoffTransport
import HandoffRuntime
import Testing

// The continuation stream relay of both daemons, in one process: two apps on
// socket pairs, the two daemons' secure channel on a third, the real handshake
// (purpose stream), control messages and StreamRelay on each side.

private let alpha = try! Identity(seed: [UInt8](repeating: 0x31, count: 32))
private let beta = try! Identity(seed: [UInt8](repeating: 0x32, count: 32))

private func connectedPair() throws -> (StreamConnection, StreamConnection) {
    var fds: [Int32] = [-1, -1]
    let status = fds.withUnsafeMutableBufferPointer {
        socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, $0.baseAddress)
    }
    try #require(status == 0)
    return (StreamConnection(fd: fds[0], remote: "first"), StreamConnection(fd: fds[1], remote: "second"))
}

private func started<T: Sendable>(_ work: @escaping @Sendable () -> T) -> @Sendable () -> T {
    let box = Locked<T?>(nil)
    let done = DispatchSemaphore(value: 0)
    Thread {
        let value = work()
        box.withLock { $0 = value }
        done.signal()
    }.start()
    return {
        done.wait()
        return box.withLock { $0! }
    }
}

/// The two apps' ends of an open stream: `a` on the originating host, `b` on the continuing one.
private struct Apps {
    let a: StreamConnection
    let b: StreamConnection
    let finished: @Sendable () -> Void
}

/// Sets up the whole path as the daemons do and returns once both apps have their reply line.
private func openStream() throws -> Apps {
    let (appA, daemonAApp) = try connectedPair()
    let (appB, daemonBApp) = try connectedPair()
    let (wireB, wireA) = try connectedPair()
    let secrets = pairSecrets(beta, alpha)
    let serverSide = started { () -> Result<SecureChannel, HandoffError> in
        do throws(HandoffError) {
            return .success(try SecureChannel.accept(wireA, identity: alpha) { hello in
                hello.purpose == .stream && hello.isFrom(secrets) ? .answer(psk: secrets.handshakePSK, expectedClient: beta.publicKey)
                                                                  : .refuse(.init(code: .trust, message: "no"))
            })
        } catch { return .failure(error) }
    }
    let channelB = try SecureChannel.connect(wireB, identity: beta, purpose: .stream, secrets: secrets)
    let channelA = try serverSide().get()
    #expect(channelA.session.purpose == .stream)

    // B cites the summary; A's daemon admits it and hands the app's connection over.
    let open = ContinuationStreamFrame.open(.init(summarySender: alpha.publicKey, summarySequence: 7, payloadDigest: [UInt8](repeating: 9, count: 32)))
    try Daemon.sendControl(open, over: channelB)
    #expect(try Daemon.receiveControl(over: channelA) == open)
    let relayA = StreamRelay(app: daemonAApp, channel: channelA, role: .originating)
    let appSideA = started { relayA.serveApp(reply: Array("ok a\n".utf8)) }
    let transferSideA = started { () -> Bool in
        guard relayA.waitForAppReply() else { return false }
        guard (try? Daemon.sendControl(.accepted, over: channelA)) != nil else { relayA.abort(); return false }
        relayA.peerAccepted()
        relayA.run(.toApp)
        relayA.join()
        return true
    }
    #expect(try Daemon.receiveControl(over: channelB) == .accepted)
    let relayB = StreamRelay(app: daemonBApp, channel: channelB, role: .continuing)
    let sideB = started { relayB.serveApp(reply: Array("ok b\n".utf8)) }
    #expect(try appA.readLine(maxBytes: 100) == Array("ok a".utf8))
    #expect(try appB.readLine(maxBytes: 100) == Array("ok b".utf8))
    return Apps(a: appA, b: appB) {
        appSideA()
        _ = transferSideA()
        sideB()
    }
}

private func readAll(_ connection: StreamConnection) -> [UInt8] {
    var all: [UInt8] = []
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 100_000, alignment: 1)
    defer { buffer.deallocate() }
    while let count = try? connection.readSome(into: buffer), count > 0 {
        all += UnsafeRawBufferPointer(rebasing: buffer[0..<count])
    }
    return all
}

@Suite struct StreamRelayTests {
    @Test func bytesCrossBothWaysAtOnceAndEachSideEndsOnItsOwn() throws {
        let apps = try openStream()
        // Patterns that do not repeat at record boundaries, so a lost, doubled or reordered record shows.
        let toB = (0..<1_500_000).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 13) }
        let toA = (0..<700_001).map { UInt8(truncatingIfNeeded: ($0 &* 40_503) >> 7) }
        let (a, b) = (apps.a, apps.b)
        // Both write everything before reading anything: only relaying while writing keeps this from deadlocking.
        let writerA = started { () -> Bool in
            defer { a.shutdownWrite() }
            return (try? a.write(toB)) != nil
        }
        let writerB = started { () -> Bool in
            defer { b.shutdownWrite() }
            return (try? b.write(toA)) != nil
        }
        let readB = started { readAll(b) }
        let readA = started { readAll(a) }
        #expect(writerA() && writerB())
        #expect(readB() == toB)
        #expect(readA() == toA)
        apps.finished()
    }

    @Test func halfCloseLeavesTheOtherDirectionOpen() throws {
        let apps = try openStream()
        try apps.a.write(Array("unsaved".utf8))
        apps.a.shutdownWrite()
        #expect(readAll(apps.b) == Array("unsaved".utf8))
        try apps.b.write(Array("thanks".utf8))
        apps.b.shutdownWrite()
        #expect(readAll(apps.a) == Array("thanks".utf8))
        apps.finished()
    }

    @Test func anAppThatLeavesEndsTheStreamForTheOther() throws {
        let apps = try openStream()
        apps.a.close()
        // B reads end of stream (a's side stopped writing); its next bytes find a's app gone and the stream ends.
        #expect(readAll(apps.b) == [])
        var failed = false
        for _ in 0..<200 where !failed {
            failed = (try? apps.b.write([UInt8](repeating: 1, count: 65536))) == nil
        }
        #expect(failed)
        apps.finished()
    }
}
