import CLinux
import Glibc

/// A few threads of our own that run Swift concurrency's global jobs, blocked on a
/// condition variable with no timeout while there is nothing to run. Deadlines are the
/// event loop's (`EventLoop.after`).
///
/// Why: on Linux, Swift's default global executor is libdispatch's global
/// queues, and the first worker thread of such a queue starts libdispatch's
/// workqueue monitor, a timer that wakes the process every second for as long
/// as it lives (swift-corelibs-libdispatch, src/event/workqueue.c). An idle
/// daemon woke once a second for that alone. `install()` points the runtime's
/// `swift_task_enqueueGlobal_hook` (the hook SwiftNIO uses for the same) at
/// this pool; `Task.sleep` still goes to libdispatch in Swift 6.3, so daemon
/// code waits with `EventLoop.after` instead.
public final class EventExecutor: Sendable {
    /// The process's pool; its threads start on first use.
    public static let shared = EventExecutor(threads: max(2, min(4, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))))

    private struct Queue {
        var jobs: [UnownedJob] = []
        var head = 0
        var started = false
        var hasJob: Bool { head < jobs.count }
    }

    private let queue = Locked(Queue())
    private let threadCount: Int

    init(threads: Int) {
        threadCount = threads
    }

    typealias Original = @convention(thin) (UnownedJob) -> Void
    typealias Hook = @convention(thin) (UnownedJob, Original) -> Void

    /// Makes this pool Swift concurrency's global executor for the process. Call once,
    /// first thing in `main`, before any Task runs; a process that does not stays on libdispatch.
    /// False (and nothing changed) when another executor holds the hook already: that one keeps it.
    @discardableResult
    public static func install() -> Bool {
        // Linked, not looked up: dlsym does not find it in a binary with the static Swift runtime
        // (the package's), which then stayed on libdispatch unnoticed.
        install(into: UnsafeMutableRawPointer(handoff_enqueue_global_hook()).assumingMemoryBound(to: Hook?.self))
    }

    /// Sets `hook` to this pool unless something holds it already (tests hand in a slot of their own).
    static func install(into hook: UnsafeMutablePointer<Hook?>) -> Bool {
        guard hook.pointee == nil else { return false }
        hook.pointee = { job, _ in EventExecutor.shared.enqueue(job) }
        return true
    }

    func enqueue(_ job: UnownedJob) {
        // One idle thread is woken for one job; busy ones take the next job as they finish.
        let first = queue.withLockWakingOne { queue -> Bool in
            queue.jobs.append(job)
            defer { queue.started = true }
            return !queue.started
        }
        if first {
            for index in 0..<threadCount { Threads.start("executor \(index)") { [self] in serve() } }
        }
    }

    private func serve() -> Never {
        // The generic executor: what libdispatch's global executor runs jobs on too.
        let generic = unsafeBitCast((0, 0), to: UnownedSerialExecutor.self)
        while true {
            let job = queue.wait(until: { $0.hasJob }) { queue -> UnownedJob in
                let job = queue.jobs[queue.head]
                queue.head += 1
                if queue.head == queue.jobs.count || queue.head > 1024 {
                    queue.jobs.removeFirst(queue.head)
                    queue.head = 0
                }
                return job
            }
            job!.runSynchronously(on: generic)
        }
    }
}
