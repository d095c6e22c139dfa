#if canImport(Glibc)
import Glibc
#endif

/// A value that threads share behind a pthread mutex.
///
/// Not `Synchronization.Mutex`: on Linux that waits on futexes ThreadSanitizer
/// cannot see, so every contended use is reported as a race, and those false
/// reports would bury a real one. TSan intercepts pthread mutexes.
public final class Locked<Value: ~Copyable>: @unchecked Sendable {
    private var value: Value
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    public init(_ value: consuming Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value while holding the lock; keep it short and never block in it.
    public func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
