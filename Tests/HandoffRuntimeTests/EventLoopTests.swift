import Glibc
@testable import HandoffRuntime
import Testing

/// Each test runs its own loop, so nothing else the process does shares its thread.
@Suite struct EventLoopTests {
    init() {
        // The tests learn that a read end was closed from EPIPE on the write end.
        signal(SIGPIPE, SIG_IGN)
    }

    private func pipeEnds() -> (read: Int32, write: Int32) {
        var ends: [Int32] = [-1, -1]
        #expect(pipe(&ends) == 0)
        return (ends[0], ends[1])
    }

    /// Whether the pipe's read end is still open somewhere: a write fails with EPIPE once it is not
    /// (the descriptor's number says nothing, another test may have it by now).
    private func readEndOpen(_ writeEnd: Int32) -> Bool {
        var byte: UInt8 = 0
        return write(writeEnd, &byte, 1) == 1 || errno != EPIPE
    }

    @Test func aReadyDescriptorCallsItsHandlerOnTheLoopsThread() throws {
        let loop = EventLoop(name: "test loop")
        let ends = pipeEnds()
        defer { close(ends.write) }
        let seen = Locked<[UInt8]>([])
        let called = Signals(value: 0)
        let watch = try loop.watch(ends.read) { readiness in
            #expect(loop.inLoop)
            #expect(readiness.isReadable)
            var byte: UInt8 = 0
            while read(ends.read, &byte, 1) == 1 { seen.withLock { $0.append(byte) } }
            called.signal()
        }
        var byte: UInt8 = 7
        _ = write(ends.write, &byte, 1)
        #expect(called.wait(millis: 5_000))
        #expect(seen.withLock { $0 } == [7])
        #expect(!loop.inLoop)
        // The loop made it non-blocking: the handler's read loop ended at EAGAIN.
        #expect(fcntl(ends.read, F_GETFL) & O_NONBLOCK != 0)
        watch.close()
        #expect(closedSoon(ends.write, loop: loop))
    }

    /// The watch owns the descriptor: closing it closes the descriptor once, and the handler
    /// is not called again.
    @Test func closingAWatchClosesItsDescriptorOnceAndStopsItsHandler() throws {
        let loop = EventLoop(name: "test loop")
        let ends = pipeEnds()
        defer { close(ends.write) }
        let calls = Counter(0)
        let watch = try loop.watch(ends.read) { _ in calls.add(1) }
        watch.close()
        watch.close()
        #expect(watch.isClosed)
        #expect(closedSoon(ends.write, loop: loop))
        let flushed = Signals(value: 0)
        loop.after(millis: 20) { flushed.signal() }
        #expect(flushed.wait(millis: 5_000))
        #expect(calls.value == 0)
    }

    /// A handler that closes its own watch (a peer that hung up) closes it at once, on the loop.
    @Test func aHandlerMayCloseItsOwnWatch() throws {
        let loop = EventLoop(name: "test loop")
        let ends = pipeEnds()
        defer { close(ends.write) }
        let holder = Locked<EventLoop.Watch?>(nil)
        let done = Signals(value: 0)
        let watch = try loop.watch(ends.read) { _ in
            holder.withLock { $0 }?.close()
            done.signal()
        }
        holder.withLock { $0 = watch }
        var byte: UInt8 = 1
        _ = write(ends.write, &byte, 1)
        #expect(done.wait(millis: 5_000))
        // Closed before the handler returned, not posted for later.
        #expect(!readEndOpen(ends.write))
    }

    @Test func deadlinesRunInOrderAndACancelledOneNever() {
        let loop = EventLoop(name: "test loop")
        let order = Locked<[Int]>([])
        let done = Signals(value: 0)
        loop.after(millis: 60) {
            order.withLock { $0.append(3) }
            done.signal()
        }
        let cancelled = loop.after(millis: 10) { order.withLock { $0.append(99) } }
        loop.after(millis: 30) { order.withLock { $0.append(2) } }
        loop.after(millis: 0) { order.withLock { $0.append(1) } }
        loop.cancel(cancelled)
        #expect(done.wait(millis: 5_000))
        #expect(order.withLock { $0 } == [1, 2, 3])
    }

    @Test func aDeadlineDoesNotRunEarly() {
        let loop = EventLoop(name: "test loop")
        let started = monotonicNanos()
        let ran = Locked<UInt64>(0)
        let done = Signals(value: 0)
        loop.after(millis: 50) {
            ran.withLock { $0 = monotonicNanos() }
            done.signal()
        }
        #expect(done.wait(millis: 5_000))
        #expect(ran.withLock { $0 } - started >= 50_000_000)
    }

    /// Posts nothing but a marker and waits for it: everything due before it has run.
    private func settled(_ loop: EventLoop) {
        let done = Signals(value: 0)
        loop.execute { done.signal() }
        _ = done.wait(millis: 5_000)
    }

    /// With a manual clock, deadlines come due by the test's steps: an hour passes at once,
    /// and nothing runs a moment early.
    @Test func aManualClockDrivesTheDeadlines() {
        let clock = ManualClock(startMillis: 1_000)
        let loop = EventLoop(name: "test loop", clock: clock)
        let ran = Locked<[String]>([])
        loop.after(millis: 3_600_000) { ran.withLock { $0.append("hour") } }
        loop.after(millis: 1_000) { ran.withLock { $0.append("second") } }
        let cancelled = loop.after(millis: 500) { ran.withLock { $0.append("cancelled") } }
        loop.cancel(cancelled)
        settled(loop)
        #expect(ran.withLock { $0 }.isEmpty)
        clock.advance(millis: 999)
        settled(loop)
        #expect(ran.withLock { $0 }.isEmpty)
        clock.advance(millis: 1)
        settled(loop)
        #expect(ran.withLock { $0 } == ["second"])
        clock.advance(millis: 3_600_000)
        settled(loop)
        #expect(ran.withLock { $0 } == ["second", "hour"])
    }

    /// A `WakeTimer` re-armed before it fires fires once, at the later time.
    @Test func aRearmedWakeTimerFiresOnceAtItsLastTime() {
        let clock = ManualClock()
        let loop = EventLoop(name: "test loop", clock: clock)
        let fired = Counter(0)
        let timer = WakeTimer(loop: loop) { fired.add(1) }
        timer.arm(afterMillis: 100)
        timer.arm(afterMillis: 300)
        clock.advance(millis: 200)
        settled(loop)
        #expect(fired.value == 0)
        clock.advance(millis: 100)
        settled(loop)
        #expect(fired.value == 1)
        timer.arm(afterMillis: 10)
        timer.stop()
        clock.advance(millis: 50)
        settled(loop)
        #expect(fired.value == 1)
    }

    /// Work posted from many threads runs on the loop, each exactly once, in each thread's order.
    @Test func postedWorkRunsOnceInOrderPerThread() {
        let loop = EventLoop(name: "test loop")
        let perThread = 500
        let seen = Locked<[Int: [Int]]>([:])
        let done = Signals(value: 0)
        for thread in 0..<4 {
            Threads.start("poster \(thread)") {
                for index in 0..<perThread {
                    loop.execute {
                        precondition(loop.inLoop)
                        let count = seen.withLock { seen -> Int in
                            seen[thread, default: []].append(index)
                            return seen.values.reduce(0) { $0 + $1.count }
                        }
                        if count == 4 * perThread { done.signal() }
                    }
                }
            }
        }
        #expect(done.wait(millis: 10_000))
        let all = seen.withLock { $0 }
        for thread in 0..<4 { #expect(all[thread] == Array(0..<perThread)) }
    }

    /// A flood on one descriptor does not keep another waiting: each handler reads a bounded
    /// amount per turn.
    @Test func aBusyDescriptorDoesNotStarveAnother() throws {
        let loop = EventLoop(name: "test loop")
        let busy = pipeEnds()
        let quiet = pipeEnds()
        defer {
            close(busy.write)
            close(quiet.write)
        }
        // Never drained to the end: it stays ready on every turn.
        let busyWatch = try loop.watch(busy.read) { _ in
            var byte: UInt8 = 0
            _ = read(busy.read, &byte, 1)
        }
        let heard = Signals(value: 0)
        let quietWatch = try loop.watch(quiet.read) { _ in
            var byte: UInt8 = 0
            while read(quiet.read, &byte, 1) == 1 {}
            heard.signal()
        }
        let flood = [UInt8](repeating: 1, count: 4096)
        _ = flood.withUnsafeBytes { write(busy.write, $0.baseAddress, $0.count) }
        var byte: UInt8 = 2
        _ = write(quiet.write, &byte, 1)
        #expect(heard.wait(millis: 5_000))
        busyWatch.close()
        quietWatch.close()
    }

    @Test func updateStopsAndResumesReadiness() throws {
        let loop = EventLoop(name: "test loop")
        let ends = pipeEnds()
        defer { close(ends.write) }
        let calls = Counter(0)
        let watch = try loop.watch(ends.read) { _ in
            var byte: UInt8 = 0
            while read(ends.read, &byte, 1) == 1 {}
            calls.add(1)
        }
        watch.update([])
        var byte: UInt8 = 1
        _ = write(ends.write, &byte, 1)
        let flushed = Signals(value: 0)
        loop.after(millis: 30) { flushed.signal() }
        #expect(flushed.wait(millis: 5_000))
        #expect(calls.value == 0)
        watch.update(.readable)
        var waited = 0
        while calls.value == 0 && waited < 5_000 {
            Threads.sleep(seconds: 0.001)
            waited += 1
        }
        #expect(calls.value == 1)
        watch.close()
    }

    /// Waits for the loop to have closed the read end of `writeEnd`'s pipe (the close is posted to it).
    private func closedSoon(_ writeEnd: Int32, loop: EventLoop) -> Bool {
        let done = Signals(value: 0)
        loop.execute { done.signal() }
        _ = done.wait(millis: 5_000)
        return !readEndOpen(writeEnd)
    }
}

/// An atomic counter for the tests' handlers.
private final class Counter: Sendable {
    private let count: Locked<Int>
    init(_ value: Int) { count = Locked(value) }
    func add(_ amount: Int) { count.withLock { $0 += amount } }
    var value: Int { count.withLock { $0 } }
}
