import Glibc
@testable import HandoffRuntime
import Testing

/// An actor that names an event loop as its executor (as the daemon does) runs on the loop's
/// thread, in the order its work arrives, and work the loop runs may assume its isolation.
@Suite struct LoopExecutorTests {
    actor Recorder {
        let loop: EventLoop
        var entries: [Int] = []
        init(loop: EventLoop) { self.loop = loop }
        nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

        func append(_ value: Int) -> Bool {
            entries.append(value)
            return loop.inLoop
        }

        /// Awaits blocking work on a thread of its own; the result comes back to the loop.
        func appendFromThread(_ value: Int) async -> (before: Bool, after: Bool) {
            let before = loop.inLoop
            let fromThread: Int = await withCheckedContinuation { continuation in
                Threads.start("test work") { continuation.resume(returning: value) }
            }
            entries.append(fromThread)
            return (before, loop.inLoop)
        }
    }

    @Test func theActorsWorkRunsOnTheLoopsThread() async {
        let loop = EventLoop(name: "test loop")
        let recorder = Recorder(loop: loop)
        #expect(await recorder.append(1))
        let hops = await recorder.appendFromThread(2)
        #expect(hops.before && hops.after)
        #expect(await recorder.entries == [1, 2])
    }

    /// What a loop's handler or another thread posts with `execute` may use the actor's state
    /// at once (`assumeIsolated`), and runs in the order posted, between the actor's jobs.
    @Test func postedWorkAssumesTheActorsIsolationInOrder() async {
        let loop = EventLoop(name: "test loop")
        let recorder = Recorder(loop: loop)
        let done = Signals(value: 0)
        for value in 0..<100 {
            loop.execute { recorder.assumeIsolated { _ = $0.append(value) } }
        }
        loop.execute { done.signal() }
        #expect(done.wait(millis: 5_000))
        #expect(await recorder.entries == Array(0..<100))
    }

    @Test func offTheLoopTheActorsIsolationIsNotAssumed() {
        let loop = EventLoop(name: "test loop")
        #expect(loop.isIsolatingCurrentContext() == false)
        let onLoop = Locked<Bool?>(nil)
        let done = Signals(value: 0)
        loop.execute {
            onLoop.withLock { $0 = loop.isIsolatingCurrentContext() }
            done.signal()
        }
        #expect(done.wait(millis: 5_000))
        #expect(onLoop.withLock { $0 } == true)
    }
}
