import FoundationEssentials
import CLinux
import Glibc

/// A few threads of our own that run Swift concurrency's global jobs and the
/// daemon's deadlines, blocked on a condition variable with no timeout unless a
/// deadline is pending.
///
/// Why: on Linux, Swift's default global executor is libdispatch's global
/// queues, and the first worker thread of such a queue starts libdispatch's
/// workqueue monitor, a timer that wakes the process every second for as long
/// as it lives (swift-corelibs-libdispatch, src/event/workqueue.c). An idle
/// daemon woke once a second for that alone. `install()` points the runtime's
/// `swift_task_enqueueGlobal_hook` (the hook SwiftNIO uses for the same) at
/// this pool; `Task.sleep` still goes to libdispatch in Swift 6.3, so daemon
/// code waits with `after`/`sleep` here instead.
public final class EventExecutor: @unchecked Sendable {
    /// The process's pool; its threads start on first use.
    public static let shared = EventExecutor(threads: max(2, min(4, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))))

    /// One scheduled call, for `cancel`.
    public struct Deadline: Hashable, Sendable {
        let id: UInt64
    }

    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// Idle threads wait here with no timeout.
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    /// At most one idle thread (the keeper) waits here, until the earliest deadline.
    private let timerCondition: UnsafeMutablePointer<pthread_cond_t>
    private let threadCount: Int
    // All below: only with `mutex` held.
    private var jobs: [UnownedJob] = []
    private var jobHead = 0
    private var timed: [UInt64: (atNanos: UInt64, call: @Sendable () -> Void)] = [:]
    private var nextID: UInt64 = 0
    private var started = false
    private var idle = 0
    private var keeper = false
    /// The pool's threads, and the one running a deadline's call (what that call
    /// enqueues or schedules, this thread picks up itself once the call returns).
    private var threads: Set<pthread_t> = []
    private var inTimedCall: pthread_t?

    init(threads: Int) {
        threadCount = threads
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        pthread_cond_init(condition, nil)
        timerCondition = makeMonotonicCondition()
    }

    /// Makes this pool Swift concurrency's global executor for the process. Call once,
    /// first thing in `main`, before any Task runs; a process that does not stays on libdispatch.
    /// False (and nothing changed) when another executor holds the hook already: that one keeps it.
    @discardableResult
    public static func install() -> Bool {
        typealias Original = @convention(thin) (UnownedJob) -> Void
        typealias Hook = @convention(thin) (UnownedJob, Original) -> Void
        // Linked, not looked up: dlsym does not find it in a binary with the static Swift runtime
        // (the package's), which then stayed on libdispatch unnoticed.
        let hook = UnsafeMutableRawPointer(handoff_enqueue_global_hook()).assumingMemoryBound(to: Hook?.self)
        guard hook.pointee == nil else { return false }
        hook.pointee = { job, _ in EventExecutor.shared.enqueue(job) }
        return true
    }

    func enqueue(_ job: UnownedJob) {
        pthread_mutex_lock(mutex)
        jobs.append(job)
        startIfNeeded()
        if inTimedCall != pthread_self() {
            if idle > 0 { pthread_cond_signal(condition) } else if keeper { pthread_cond_signal(timerCondition) }
        }
        pthread_mutex_unlock(mutex)
    }

    /// Runs `call` on a pool thread once `millis` have passed (monotonic clock).
    @discardableResult
    public func after(millis: UInt64, _ call: @escaping @Sendable () -> Void) -> Deadline {
        pthread_mutex_lock(mutex)
        nextID += 1
        let id = nextID
        timed[id] = (Self.nowNanos() &+ millis &* 1_000_000, call)
        // The keeper recomputes its timeout, or an idle thread becomes the keeper; the others stay
        // asleep. A pool thread that schedules goes back to the loop and keeps the deadline itself.
        startIfNeeded()
        if keeper { pthread_cond_signal(timerCondition) } else if idle > 0, !threads.contains(pthread_self()) { pthread_cond_signal(condition) }
        pthread_mutex_unlock(mutex)
        return Deadline(id: id)
    }

    /// Drops a scheduled call that has not run yet; nothing wakes for it.
    public func cancel(_ deadline: Deadline) {
        pthread_mutex_lock(mutex)
        timed.removeValue(forKey: deadline.id)
        pthread_mutex_unlock(mutex)
    }

    /// Suspends the caller for `millis` (instead of `Task.sleep`, which wakes libdispatch).
    public func sleep(millis: UInt64) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            after(millis: millis) { continuation.resume() }
        }
    }

    private func startIfNeeded() {
        guard !started else { return }
        started = true
        for index in 0..<threadCount { startThread(index) }
    }

    private func startThread(_ index: Int) {
        Threads.start("executor \(index)") { [self] in serve() }
    }

    private func serve() -> Never {
        // The generic executor: what libdispatch's global executor runs jobs on too.
        let generic = unsafeBitCast((0, 0), to: UnownedSerialExecutor.self)
        pthread_mutex_lock(mutex)
        threads.insert(pthread_self())
        while true {
            if jobHead < jobs.count {
                let job = jobs[jobHead]
                jobHead += 1
                if jobHead == jobs.count || jobHead > 1024 {
                    jobs.removeFirst(jobHead)
                    jobHead = 0
                }
                handOverDeadlines()
                pthread_mutex_unlock(mutex)
                job.runSynchronously(on: generic)
                pthread_mutex_lock(mutex)
                continue
            }
            let now = Self.nowNanos()
            if let (id, entry) = timed.min(by: { $0.value.atNanos < $1.value.atNanos }) {
                if entry.atNanos <= now {
                    timed.removeValue(forKey: id)
                    handOverDeadlines()
                    inTimedCall = pthread_self()
                    pthread_mutex_unlock(mutex)
                    entry.call()
                    pthread_mutex_lock(mutex)
                    inTimedCall = nil
                    continue
                }
                if !keeper {
                    keeper = true
                    var until = timespec(tv_sec: Int(entry.atNanos / 1_000_000_000), tv_nsec: Int(entry.atNanos % 1_000_000_000))
                    pthread_cond_timedwait(timerCondition, mutex, &until)
                    keeper = false
                    continue
                }
                idle += 1
                pthread_cond_wait(condition, mutex)
                idle -= 1
            } else {
                idle += 1
                pthread_cond_wait(condition, mutex)
                idle -= 1
            }
        }
    }

    /// Before this thread runs something: another idle one keeps the remaining deadlines meanwhile.
    private func handOverDeadlines() {
        if !keeper, !timed.isEmpty, idle > 0 { pthread_cond_signal(condition) }
    }

    static func nowNanos() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
    }
}
