import HandoffCore
@testable import HandoffDaemon
import HandoffRuntime
import Glibc
import Testing

/// The replay state is written off the loop: a slow disk must not hold the caller, the file
/// must never go back to an older state, and what must be on disk first is.
@Suite struct ReplayStateWriterTests {
    /// A disk whose writes wait until the test lets them finish, and which records them in order.
    final class SlowDisk: Sendable {
        let written = Locked<[UInt64]>([])
        let started = Signals()
        let release = Locked(false)

        func write(_ state: ReplayState) {
            started.signal()
            _ = release.wait(until: { $0 }) { _ in }
            written.withLock { $0.append(state.reservedSequence) }
        }

        func finishWrites() { release.withLockWakingWaiters { $0 = true } }
    }

    static func state(_ sequence: UInt64) -> ReplayState { ReplayState(reservedSequence: sequence) }

    @Test func aWriteDoesNotHoldTheCallerAndItsOutcomeComesBack() {
        let disk = SlowDisk()
        let writer = ReplayStateWriter { disk.write($0) }
        let reported = Locked<[UInt64]>([])
        let done = Signals()
        writer.writeLater(Self.state(1)) { result in
            if case let .success(state) = result { reported.withLock { $0.append(state.reservedSequence) } }
            done.signal()
        }
        // The caller is back while the disk still holds the write.
        #expect(disk.started.wait(millis: 2_000))
        #expect(disk.written.withLock { $0 }.isEmpty)
        disk.finishWrites()
        #expect(done.wait(millis: 2_000))
        #expect(disk.written.withLock { $0 } == [1])
        #expect(reported.withLock { $0 } == [1])
    }

    /// States given while one is being written: only the newest follows it.
    @Test func statesWaitingBehindAWriteAreReplacedByTheNewest() {
        let disk = SlowDisk()
        let writer = ReplayStateWriter { disk.write($0) }
        let outcomes = Signals()
        let reported = Locked<[UInt64]>([])
        let written: ReplayStateWriter.Written = { result in
            if case let .success(state) = result { reported.withLock { $0.append(state.reservedSequence) } }
            outcomes.signal()
        }
        writer.writeLater(Self.state(1), written: written)
        #expect(disk.started.wait(millis: 2_000))
        writer.writeLater(Self.state(2), written: written)
        writer.writeLater(Self.state(3), written: written)
        disk.finishWrites()
        #expect(outcomes.wait(millis: 2_000) && outcomes.wait(millis: 2_000))
        #expect(!outcomes.wait(millis: 100), "a replaced state was written too")
        #expect(disk.written.withLock { $0 } == [1, 3])
        #expect(reported.withLock { $0 } == [1, 3])
    }

    /// A reservation waits for the write under way, then goes to disk before `writeNow` returns,
    /// and an older state still waiting is never written after it.
    @Test func aWriteNowFollowsTheWriteUnderWayAndSupersedesWaitingOnes() {
        let disk = SlowDisk()
        let writer = ReplayStateWriter { disk.write($0) }
        writer.writeLater(Self.state(1)) { _ in }
        #expect(disk.started.wait(millis: 2_000))
        writer.writeLater(Self.state(2)) { _ in }
        let returned = Locked(false)
        let caller = Signals()
        Threads.start("test reserve") {
            try? writer.writeNow(Self.state(3))
            returned.withLock { $0 = true }
            caller.signal()
        }
        usleep(50_000)
        #expect(!returned.withLock { $0 }, "writeNow returned before the write under way finished")
        disk.finishWrites()
        #expect(caller.wait(millis: 2_000))
        #expect(disk.written.withLock { $0 } == [1, 3])
        usleep(50_000)
        #expect(disk.written.withLock { $0 } == [1, 3], "an older state was written after the reservation")
    }

    @Test func aFailedWriteIsReported() {
        let writer = ReplayStateWriter { _ throws(HandoffError) in throw HandoffError(.storage, "disk full", fix: "free space") }
        let failure = Locked<String?>(nil)
        let done = Signals()
        writer.writeLater(Self.state(1)) { result in
            if case let .failure(error) = result { failure.withLock { $0 = error.message } }
            done.signal()
        }
        #expect(done.wait(millis: 2_000))
        #expect(failure.withLock { $0 } == "disk full")
        #expect(throws: HandoffError.self) { try writer.writeNow(Self.state(2)) }
    }
}
