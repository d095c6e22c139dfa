import CLinux
import Glibc

/// Threads without Foundation's `Thread` (full Foundation brings ICU into every program).
/// Each is detached and named from inside itself, so the name shows in
/// /proc/PID/task/*/comm, top and perf (Linux keeps 15 bytes of it).
///
/// A thread whose work returned waits up to `parkedSeconds` for the next `start` before it
/// ends, so the work of an accept, a served fetch or a probe runs on a thread already made:
/// creating one for each cost a `clone`, a fresh stack faulted in and the scheduler placing a
/// newcomer, on every hand-off of the 1 KiB path (issue 21). At most `maximumParked` wait.
public enum Threads {
    public static let parkedSeconds = 30
    public static let maximumParked = 8

    /// The process's threads.
    static let pool = ThreadPool(maximumParked: maximumParked, parkedMillis: parkedSeconds * 1000)

    /// Runs `body` on a thread called `name`: a parked one if any waits, else a new one.
    public static func start(_ name: String, _ body: @escaping @Sendable () -> Void) {
        pool.start(name, body)
    }

    /// Names the calling thread (the first 15 bytes, the kernel's limit).
    public static func setName(_ name: String) {
        var bytes: [UInt8] = []
        for scalar in name.unicodeScalars {
            // Whole characters only: never half a UTF-8 sequence.
            guard bytes.count + scalar.utf8.count <= 15 else { break }
            bytes.append(contentsOf: scalar.utf8)
        }
        bytes.append(0)
        _ = bytes.withUnsafeBufferPointer { pointer in
            pointer.withMemoryRebound(to: CChar.self) { handoff_set_thread_name($0.baseAddress!) }
        }
    }

    /// Blocks the calling thread (never an actor's or the executor's).
    public static func sleep(seconds: Double) {
        guard seconds > 0 else { return }
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - seconds.rounded(.down)) * 1e9))
        var remaining = timespec()
        while nanosleep(&request, &remaining) == -1 && errno == EINTR { request = remaining }
    }
}

/// Threads that park when their work returns and take the next `start`. One per process
/// (`Threads`); tests make their own, so other suites' work does not take their threads.
final class ThreadPool: Sendable {
    let maximumParked: Int
    let parkedMillis: Int

    init(maximumParked: Int, parkedMillis: Int) {
        self.maximumParked = maximumParked
        self.parkedMillis = parkedMillis
    }

    fileprivate struct Work: Sendable {
        let name: String
        let body: @Sendable () -> Void
    }

    /// One thread waiting for work: its own lock and condition, so a start wakes it alone.
    fileprivate final class Parked: Sendable {
        private let slot = Locked<Work?>(nil)

        func hand(_ next: Work) { slot.withLockWakingWaiters { $0 = next } }

        /// The next work, or nil once `parkedMillis` passed with none and this thread is no
        /// longer on offer (a `start` that took it meanwhile hands it work, which it waits for).
        func next(in pool: ThreadPool) -> Work? {
            let taken = { (work: inout Work?) in work.take() }
            if let work = slot.wait(until: { $0 != nil }, millis: pool.parkedMillis, then: taken) { return work }
            if pool.withdraw(self) { return nil }
            return slot.wait(until: { $0 != nil }, then: taken) ?? nil
        }
    }

    /// Threads waiting for work, the most recently parked last (its stack is the warmest).
    private let parked = Locked<[Parked]>([])

    func start(_ name: String, _ body: @escaping @Sendable () -> Void) {
        let work = Work(name: name, body: body)
        if let waiting = parked.withLock({ $0.popLast() }) {
            waiting.hand(work)
            return
        }
        let start = Unmanaged.passRetained(Start(work, pool: self)).toOpaque()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        var thread = pthread_t()
        let status = pthread_create(&thread, &attributes, threadEntry, start)
        pthread_attr_destroy(&attributes)
        // Only when the process is out of threads or memory; nothing could go on.
        if status != 0 { fatalError("pthread_create failed: \(String(cString: strerror(status)))") }
    }

    /// How many threads wait for work now.
    var parkedCount: Int { parked.withLock { $0.count } }

    /// Removes `thread` from the parked ones; false when a `start` took it first.
    fileprivate func withdraw(_ thread: Parked) -> Bool {
        parked.withLock { list in
            guard let index = list.firstIndex(where: { $0 === thread }) else { return false }
            list.remove(at: index)
            return true
        }
    }

    /// Offers `thread` for the next start; false when `maximumParked` wait already.
    fileprivate func park(_ thread: Parked) -> Bool {
        parked.withLock { list -> Bool in
            guard list.count < maximumParked else { return false }
            list.append(thread)
            return true
        }
    }

    fileprivate final class Start {
        /// Taken by the new thread: what the work holds must go when it returns, not when the thread ends.
        var work: Work?
        let pool: ThreadPool
        init(_ work: Work, pool: ThreadPool) {
            self.work = work
            self.pool = pool
        }
    }
}

private let threadEntry: @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? = { argument in
    let start = Unmanaged<ThreadPool.Start>.fromOpaque(argument!).takeRetainedValue()
    let pool = start.pool
    var work = start.work.take()
    let me = ThreadPool.Parked()
    while work != nil {
        run(&work)
        guard pool.park(me) else { break }
        Threads.setName("parked")
        work = me.next(in: pool)
    }
    return nil
}

/// Runs the work and lets go of it (and of all it holds, a connection, a continuation)
/// before the thread parks.
private func run(_ work: inout ThreadPool.Work?) {
    guard let current = work.take() else { return }
    Threads.setName(current.name)
    current.body()
}
