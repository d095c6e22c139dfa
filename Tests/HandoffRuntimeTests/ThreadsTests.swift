import Glibc
@testable import HandoffRuntime
import Testing

@Suite(.serialized) struct ThreadsTests {
    private func comm() -> String {
        var buffer = [UInt8](repeating: 0, count: 32)
        let fd = open("/proc/thread-self/comm", O_RDONLY)
        let count = read(fd, &buffer, buffer.count)
        close(fd)
        return String(decoding: buffer[..<max(0, count)], as: UTF8.self)
    }

    /// A pool of the test's own: other suites' work, run at the same time, never takes its threads.
    private let pool = ThreadPool(maximumParked: Threads.maximumParked, parkedMillis: 30_000)

    private func run(_ name: String) async -> (tid: pthread_t, name: String) {
        await withCheckedContinuation { done in
            pool.start(name) { done.resume(returning: (pthread_self(), comm())) }
        }
    }

    /// Waits until `count` threads are parked (a thread parks just after its work returned).
    private func waitForParked(_ count: Int) -> Bool {
        for _ in 0..<5_000 where pool.parkedCount < count { Threads.sleep(seconds: 0.001) }
        return pool.parkedCount >= count
    }

    @Test func threadsCarryTheirNameInProc() async {
        #expect(await run("handoff test thread, long").name == "handoff test th\n")
    }

    /// A thread whose work returned parks and takes the next start, under the new work's name.
    @Test func aFinishedThreadRunsTheNextWork() async throws {
        let first = await run("first work")
        try #require(waitForParked(1))
        let second = await run("second work")
        #expect(second.name == "second work\n")
        #expect(second.tid == first.tid)
        #expect(waitForParked(1))
        #expect(pool.parkedCount == 1)
    }

    /// What a thread's first work holds (a connection, a request) goes when the work returns,
    /// not when the thread, parked for the next, ends.
    @Test func whatWorkHoldsGoesWhenItReturns() async throws {
        final class Held: Sendable {}
        // A pool of its own, so the work runs as a new thread's first.
        let fresh = ThreadPool(maximumParked: 1, parkedMillis: 30_000)
        weak var watched: Held?
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let held = Held()
            watched = held
            fresh.start("holding") {
                withExtendedLifetime(held) {}
                done.resume()
            }
        }
        for _ in 0..<5_000 where fresh.parkedCount < 1 { Threads.sleep(seconds: 0.001) }
        try #require(fresh.parkedCount == 1)
        #expect(watched == nil)
    }

    /// Work that is still running is not handed more: many at once each get a thread.
    @Test func concurrentWorkGetsThreadsOfItsOwn() async {
        let tids = await withTaskGroup(of: pthread_t.self) { group in
            let gate = Locked(0)
            for _ in 0..<12 {
                group.addTask {
                    await withCheckedContinuation { done in
                        pool.start("concurrent") {
                            gate.withLock { $0 += 1 }
                            // Hold the thread until all twelve run, so none can be reused.
                            while gate.withLock({ $0 }) < 12 { Threads.sleep(seconds: 0.001) }
                            done.resume(returning: pthread_self())
                        }
                    }
                }
            }
            var all: [pthread_t] = []
            for await tid in group { all.append(tid) }
            return all
        }
        #expect(Set(tids).count == 12)
        // At most `maximumParked` stay; the others end.
        #expect(waitForParked(Threads.maximumParked))
        Threads.sleep(seconds: 0.05)
        #expect(pool.parkedCount == Threads.maximumParked)
    }
}
