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
public final class EventExecutor: @unchecked Sendable {
    /// The process's pool; its threads start on first use.
    public static let shared = EventExecutor(threads: max(2, min(4, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))))

    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// Idle threads wait here with no timeout.
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    private let threadCount: Int
    // All below: only with `mutex` held.
    private var jobs: [UnownedJob] = []
    private var jobHead = 0
    private var started = false
    private var idle = 0

    init(threads: Int) {
        threadCount = threads
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        pthread_cond_init(condition, nil)
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
        pthread_mutex_lock(mutex)
        jobs.append(job)
        if !started {
            started = true
            for index in 0..<threadCount { Threads.start("executor \(index)") { [self] in serve() } }
        }
        if idle > 0 { pthread_cond_signal(condition) }
        pthread_mutex_unlock(mutex)
    }

    private func serve() -> Never {
        // The generic executor: what libdispatch's global executor runs jobs on too.
        let generic = unsafeBitCast((0, 0), to: UnownedSerialExecutor.self)
        pthread_mutex_lock(mutex)
        while true {
            if jobHead < jobs.count {
                let job = jobs[jobHead]
                jobHead += 1
                if jobHead == jobs.count || jobHead > 1024 {
                    jobs.removeFirst(jobHead)
                    jobHead = 0
                }
                pthread_mutex_unlock(mutex)
                job.runSynchronously(on: generic)
                pthread_mutex_lock(mutex)
                continue
            }
            idle += 1
            pthread_cond_wait(condition, mutex)
            idle -= 1
        }
    }
}
