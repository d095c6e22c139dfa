#if canImport(Glibc)
import Glibc
#endif

/// A value that threads share behind a pthread mutex, with a condition to wait on
/// until the value says so. The one lock of the program's own threads (`Signals`,
/// `SerialWorker`, parked `Threads` and the executor's job queue are made of it;
/// `Atomic` is the other kind, for single flags and counters).
///
/// Not `Synchronization.Mutex`: on Linux that waits on futexes ThreadSanitizer
/// cannot see, so every contended use is reported as a race, and those false
/// reports would bury a real one. TSan intercepts pthread mutexes and conditions.
public final class Locked<Value: ~Copyable>: @unchecked Sendable {
    private var value: Value
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// On CLOCK_MONOTONIC, so a wall clock set back or forward does not move a deadline.
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    public init(_ value: consuming Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        condition = makeMonotonicCondition()
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value while holding the lock; keep it short and never block in it.
    public func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }

    /// Like `withLock`, then wakes the threads waiting in `wait` so they look at the value again.
    public func withLockWakingWaiters<Result>(_ body: (inout Value) -> Result) -> Result {
        withLock(waking: pthread_cond_broadcast, body)
    }

    /// Like `withLock`, then wakes one thread waiting in `wait`: for waiters that all wait for the
    /// same thing (a pool's idle threads), where one can take what was added.
    public func withLockWakingOne<Result>(_ body: (inout Value) -> Result) -> Result {
        withLock(waking: pthread_cond_signal, body)
    }

    private func withLock<Result>(waking wake: (UnsafeMutablePointer<pthread_cond_t>) -> Int32,
                                  _ body: (inout Value) -> Result) -> Result {
        pthread_mutex_lock(mutex)
        defer {
            _ = wake(condition)
            pthread_mutex_unlock(mutex)
        }
        return body(&value)
    }

    /// Blocks the calling thread (never an actor's or the executor's) until `ready` holds, then
    /// runs `body` under the same lock. With `millis`, gives up after that long: nil, and
    /// `body` does not run. Waiters are woken by `withLockWakingWaiters`.
    public func wait<Result>(until ready: (inout Value) -> Bool, millis: Int? = nil,
                             then body: (inout Value) -> Result) -> Result? {
        var deadline = timespec()
        if let millis {
            clock_gettime(CLOCK_MONOTONIC, &deadline)
            let nanos = Int(deadline.tv_nsec) + (max(0, millis) % 1000) * 1_000_000
            deadline.tv_sec += max(0, millis) / 1000 + nanos / 1_000_000_000
            deadline.tv_nsec = nanos % 1_000_000_000
        }
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while !ready(&value) {
            if millis == nil {
                pthread_cond_wait(condition, mutex)
            } else if pthread_cond_timedwait(condition, mutex, &deadline) == ETIMEDOUT {
                guard ready(&value) else { return nil }
                break
            }
        }
        return body(&value)
    }
}

/// A pthread condition whose timed waits count on CLOCK_MONOTONIC (a wall clock set back or
/// forward does not move their deadlines). The caller destroys and deallocates it.
func makeMonotonicCondition() -> UnsafeMutablePointer<pthread_cond_t> {
    let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    condition.initialize(to: pthread_cond_t())
    var attributes = pthread_condattr_t()
    pthread_condattr_init(&attributes)
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
    pthread_cond_init(condition, &attributes)
    pthread_condattr_destroy(&attributes)
    return condition
}

/// A counting semaphore made of `Locked` (so ThreadSanitizer sees it, and no libdispatch
/// object is needed): `signal` adds one, `wait` takes one, blocking until there is one.
public final class Signals: Sendable {
    private let count: Locked<Int>

    public init(value: Int = 0) { count = Locked(value) }

    public func signal() { count.withLockWakingWaiters { $0 += 1 } }

    /// Blocks the calling thread (never an actor's or the executor's).
    public func wait() { _ = count.wait(until: { $0 > 0 }) { $0 -= 1 } }

    /// False when `millis` passed first (nothing is taken then).
    public func wait(millis: Int) -> Bool { count.wait(until: { $0 > 0 }, millis: millis) { $0 -= 1 } != nil }
}
