import CLinux
import Glibc
import Synchronization

/// The process's one event loop: a thread blocked in `epoll_wait` that owns the
/// descriptors registered with it, the deadlines, and an inbox other threads post
/// work to. Nothing wakes it while nothing is ready and no deadline is due.
///
/// Why one loop: before it, each socket, watcher and timer had a thread of its own
/// blocked in its own call (UDP receive, route netlink, inotify, the listeners'
/// accept, the executor's deadline keeper), and stopping each was its own
/// shutdown-or-pipe trick. Here every such source is a `Watch`: the loop calls its
/// handler when the descriptor is ready, and closing the watch closes the
/// descriptor exactly once, on the loop, after the last call of its handler.
///
/// Handlers, deadlines and posted work run on the loop's thread, one at a time: they
/// must not block (no connect, no blocking read, no waiting on another thread).
public final class EventLoop: Sendable {
    /// The process's loop; its thread starts on first use.
    public static let shared = EventLoop(name: "event loop")

    public struct Interest: OptionSet, Sendable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        public static let readable = Interest(rawValue: EPOLLIN.rawValue)
        public static let writable = Interest(rawValue: EPOLLOUT.rawValue)
    }

    /// What was ready, as the handler is called, and the watch it is for (a handler that is done,
    /// a child that ended, closes it).
    public struct Readiness: Sendable {
        public let events: UInt32
        public let watch: Watch
        public var isReadable: Bool { events & EPOLLIN.rawValue != 0 }
        public var isWritable: Bool { events & EPOLLOUT.rawValue != 0 }
        /// The peer hung up: reading says how.
        public var isHungUp: Bool { events & EPOLLHUP.rawValue != 0 }
        /// The descriptor has an error pending: reading or SO_ERROR says which.
        public var isFailed: Bool { events & EPOLLERR.rawValue != 0 }
    }

    /// One scheduled call, for `cancel`.
    public struct Deadline: Hashable, Sendable {
        let id: UInt64
    }

    /// A descriptor the loop owns from `watch` on.
    public final class Watch: Sendable {
        public let fd: Int32
        let id: UInt64
        /// False for a library's descriptor (sd-bus, Avahi), which the library closes itself.
        let ownsDescriptor: Bool
        private let loop: EventLoop
        private let closed = Atomic<Bool>(false)

        init(fd: Int32, id: UInt64, ownsDescriptor: Bool, loop: EventLoop) {
            self.fd = fd
            self.id = id
            self.ownsDescriptor = ownsDescriptor
            self.loop = loop
        }

        public var isClosed: Bool { closed.load(ordering: .acquiring) }

        /// What the handler is called for from now on (sd-bus asks for writable only while it has
        /// something to send).
        public func update(_ interest: Interest) {
            guard !isClosed else { return }
            var event = epoll_event()
            event.events = interest.rawValue
            event.data.u64 = id
            _ = epoll_ctl(loop.epoll, EPOLL_CTL_MOD, fd, &event)
        }

        /// Stops the handler and closes the descriptor (when the watch owns it), once, on the
        /// loop: at once when called there (a handler closing its own watch), else as the loop's
        /// next step. Nothing of the watch runs after the close.
        public func close() {
            guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
            // Off the loop the close comes a moment later: a socket of ours is shut down now, so a
            // listener refuses connections from here on (a daemon started again at once on the
            // same Unix path must not find the old one answering). Not a socket: nothing happens.
            if ownsDescriptor && !loop.inLoop { _ = Glibc.shutdown(fd, Int32(SHUT_RDWR)) }
            loop.runOnLoop { [self] in loop.remove(self) }
        }
    }

    private struct Registration {
        let watch: Watch
        let handler: @Sendable (Readiness) -> Void
    }

    private struct State {
        var inbox: [@Sendable () -> Void] = []
        var timed: [UInt64: (atNanos: UInt64, call: @Sendable () -> Void)] = [:]
        var registrations: [UInt64: Registration] = [:]
        var nextID: UInt64 = 1
        var started = false
        /// A wake-up is written and not yet read: more posts need not write again.
        var wakePending = false
    }

    private let name: String
    /// What its deadlines count on; the programs' time too (`wallMillis`, `monotonicMillis`).
    public let clock: any LoopClock
    private let epoll: Int32
    private let wakeup: Int32
    private let state = Locked(State())
    /// The loop's thread, once it runs (0 before).
    private let loopThread = Atomic<UInt>(0)

    /// A loop of its own (tests, with a `ManualClock`); the process uses `shared`.
    public init(name: String, clock: any LoopClock = MonotonicClock()) {
        self.name = name
        self.clock = clock
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        wakeup = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        // Only when the process is out of descriptors at its start: nothing could go on.
        guard epoll >= 0, wakeup >= 0 else { fatalError("\(name): epoll or eventfd failed: \(String(cString: strerror(errno)))") }
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.u64 = 0
        _ = epoll_ctl(epoll, EPOLL_CTL_ADD, wakeup, &event)
        clock.attach { [self] in
            let wake = state.withLock { startAndNoteWake(&$0) }
            if wake { signal() }
        }
    }

    /// True on the loop's thread.
    public var inLoop: Bool { loopThread.load(ordering: .acquiring) == UInt(pthread_self()) }

    /// Runs `work` on the loop's thread, after what is already posted.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        let wake = state.withLock { state -> Bool in
            state.inbox.append(work)
            return startAndNoteWake(&state)
        }
        if wake { signal() }
    }

    /// Runs `call` on the loop's thread once `millis` have passed (monotonic clock).
    @discardableResult
    public func after(millis: UInt64, _ call: @escaping @Sendable () -> Void) -> Deadline {
        let (id, wake) = state.withLock { state -> (UInt64, Bool) in
            let id = state.nextID
            state.nextID += 1
            state.timed[id] = (clock.nowNanos() &+ millis &* 1_000_000, call)
            return (id, startAndNoteWake(&state))
        }
        if wake { signal() }
        return Deadline(id: id)
    }

    /// Drops a scheduled call that has not run yet; nothing wakes for it.
    public func cancel(_ deadline: Deadline) {
        state.withLock { _ = $0.timed.removeValue(forKey: deadline.id) }
    }

    /// Registers `fd`, which the loop owns from here on (the watch closes it). `fd` is made
    /// non-blocking: `handler` reads until EAGAIN, or a bounded amount and then returns (the
    /// descriptor stays ready, so it is called again after the others had their turn).
    public func watch(_ fd: Int32, _ interest: Interest = .readable,
                      handler: @escaping @Sendable (Readiness) -> Void) throws(SystemError) -> Watch {
        let flags = fcntl(fd, F_GETFL)
        if flags >= 0, flags & O_NONBLOCK == 0 { _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
        return try register(fd, interest, owning: true, handler: handler)
    }

    /// Watches a descriptor a library owns and closes (sd-bus's, Avahi's): closing the watch
    /// only stops watching, and must come before the library closes it. Left as the library set it.
    public func watch(borrowing fd: Int32, _ interest: Interest,
                      handler: @escaping @Sendable (Readiness) -> Void) throws(SystemError) -> Watch {
        try register(fd, interest, owning: false, handler: handler)
    }

    private func register(_ fd: Int32, _ interest: Interest, owning: Bool,
                          handler: @escaping @Sendable (Readiness) -> Void) throws(SystemError) -> Watch {
        let watch = state.withLock { state -> Watch in
            let watch = Watch(fd: fd, id: state.nextID, ownsDescriptor: owning, loop: self)
            state.nextID += 1
            state.registrations[watch.id] = Registration(watch: watch, handler: handler)
            return watch
        }
        var event = epoll_event()
        event.events = interest.rawValue
        event.data.u64 = watch.id
        do {
            try systemCall("epoll_ctl(ADD)") { epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event) }
        } catch {
            state.withLock { _ = $0.registrations.removeValue(forKey: watch.id) }
            throw error
        }
        let wake = state.withLock { startAndNoteWake(&$0) }
        if wake { signal() }
        return watch
    }

    private func runOnLoop(_ work: @escaping @Sendable () -> Void) {
        if inLoop { work() } else { execute(work) }
    }

    private func remove(_ watch: Watch) {
        let removed = state.withLock { $0.registrations.removeValue(forKey: watch.id) }
        // The handler may hold the last reference to a borrowed descriptor's owner, which releases
        // the number when it goes: unregister first, so the number is never reused while watched.
        withExtendedLifetime(removed) {
            _ = epoll_ctl(epoll, EPOLL_CTL_DEL, watch.fd, nil)
            if watch.ownsDescriptor { Glibc.close(watch.fd) }
        }
    }

    /// Starts the thread on first use; true when the loop must be woken (it may be asleep in
    /// epoll_wait with an older timeout, or none).
    private func startAndNoteWake(_ state: inout State) -> Bool {
        if !state.started {
            state.started = true
            Threads.start(name) { [self] in run() }
            return false
        }
        guard !inLoop, !state.wakePending else { return false }
        state.wakePending = true
        return true
    }

    private func signal() {
        var one: UInt64 = 1
        _ = Glibc.write(wakeup, &one, 8)
    }

    private func run() -> Never {
        loopThread.store(UInt(pthread_self()), ordering: .releasing)
        var events = [epoll_event](repeating: epoll_event(), count: 64)
        while true {
            let timeout = state.withLock { state -> Int32 in
                if !state.inbox.isEmpty { return 0 }
                guard let earliest = state.timed.values.lazy.map(\.atNanos).min() else { return -1 }
                let now = clock.nowNanos()
                // A manual clock moves only when told, and wakes the loop then.
                if clock.isManual && earliest > now { return -1 }
                // Rounded up: waking a little early would spin until the deadline.
                return earliest <= now ? 0 : Int32(clamping: (earliest - now + 999_999) / 1_000_000)
            }
            let count = epoll_wait(epoll, &events, Int32(events.count), timeout)
            if count > 0 {
                for index in 0..<Int(count) {
                    let event = events[index]
                    if event.data.u64 == 0 {
                        var value: UInt64 = 0
                        _ = Glibc.read(wakeup, &value, 8)
                        state.withLock { $0.wakePending = false }
                        continue
                    }
                    // Looked up now: a handler earlier in this batch may have closed this one.
                    guard let registration = state.withLock({ $0.registrations[event.data.u64] }) else { continue }
                    registration.handler(Readiness(events: event.events, watch: registration.watch))
                }
            }
            // Deadlines after taking the posted work: work posted after the clock moved runs
            // after the deadlines that move made due.
            let posted = state.withLock { state -> [@Sendable () -> Void] in
                defer { state.inbox.removeAll() }
                return state.inbox
            }
            runDueDeadlines()
            posted.forEach { $0() }
        }
    }

    private func runDueDeadlines() {
        let now = clock.nowNanos()
        let due = state.withLock { state -> [(UInt64, @Sendable () -> Void)] in
            let ready = state.timed.filter { $0.value.atNanos <= now }
            for id in ready.keys { state.timed.removeValue(forKey: id) }
            return ready.map { ($0.value.atNanos, $0.value.call) }
        }
        for (_, call) in due.sorted(by: { $0.0 < $1.0 }) { call() }
    }

}

/// The loop as an actor's executor: the daemon's actor runs on the loop's thread, so a request
/// that arrives there is handled without a hand-off to another thread, and the one hand-off a
/// fetch needs (to its thread and back) is the only one (issue 21). As a task's executor
/// preference it also takes what such a task runs outside the actor: a continuation resumed
/// from another thread (a fetch's) comes back to the loop, not by way of the global executor.
extension EventLoop: SerialExecutor, TaskExecutor {
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        execute { [self] in job.runSynchronously(on: asUnownedSerialExecutor()) }
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    public func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }

    /// Work the loop runs (handlers, posted work) is isolated to the actors it executes.
    public func checkIsolated() {
        precondition(inLoop, "\(name): expected to run on the loop's thread")
    }

    public func isIsolatingCurrentContext() -> Bool? { inLoop }
}

/// The clock an event loop's deadlines count on, and the time of whoever runs on that loop:
/// the system's clocks in the programs, one a test moves by hand in the in-process harness.
public protocol LoopClock: Sendable {
    /// Monotonic nanoseconds, for deadlines and durations.
    func nowNanos() -> UInt64
    /// Milliseconds since 1970, for timestamps that cross hosts.
    func wallMillis() -> UInt64
    /// True when time moves only when told to: the loop then waits for a move, not for time.
    var isManual: Bool { get }
    /// Given the loop's wake-up once, when the loop is made; a manual clock calls it at every move.
    func attach(_ wake: @escaping @Sendable () -> Void)
}

extension LoopClock {
    /// Monotonic milliseconds, for durations.
    public func monotonicMillis() -> UInt64 { nowNanos() / 1_000_000 }
}

/// CLOCK_MONOTONIC: a wall clock set back or forward does not move a deadline.
public struct MonotonicClock: LoopClock {
    public init() {}
    public func nowNanos() -> UInt64 { monotonicNanos() }
    public func wallMillis() -> UInt64 { wallClockMillis() }
    public var isManual: Bool { false }
    public func attach(_ wake: @escaping @Sendable () -> Void) {}
}

/// Time that moves only when a test says so (swift-nio's `advanceTime`): deadlines come due
/// by the test's steps, not by waiting.
public final class ManualClock: LoopClock {
    private let state = Locked((nanos: UInt64(0), wakes: [@Sendable () -> Void]()))
    private let startNanos: UInt64
    private let wallStartMillis: UInt64

    /// Starts at `startMillis` on its monotonic scale and at `wallMillis` on the wall (now, unless given).
    public init(startMillis: UInt64 = 0, wallMillis: UInt64 = wallClockMillis()) {
        startNanos = startMillis &* 1_000_000
        wallStartMillis = wallMillis
        state.withLock { $0.nanos = startMillis &* 1_000_000 }
    }

    public func nowNanos() -> UInt64 { state.withLock { $0.nanos } }
    public func wallMillis() -> UInt64 { wallStartMillis &+ (nowNanos() &- startNanos) / 1_000_000 }
    public var isManual: Bool { true }
    public func attach(_ wake: @escaping @Sendable () -> Void) { state.withLock { $0.wakes.append(wake) } }

    /// Moves time on and wakes the loops that count on it; what the move made due runs before
    /// any work posted after this returns.
    public func advance(millis: UInt64) {
        let wakes = state.withLock { state in
            state.nanos &+= millis &* 1_000_000
            return state.wakes
        }
        wakes.forEach { $0() }
    }
}

/// A buffer one watch's handler reads into, allocated once. Unchecked: only that handler
/// touches it, on the loop's thread, one call at a time.
public final class ReadBuffer: @unchecked Sendable {
    public let bytes: UnsafeMutableRawBufferPointer
    public init(bytes count: Int) { bytes = .allocate(byteCount: count, alignment: 8) }
    deinit { bytes.deallocate() }
}
