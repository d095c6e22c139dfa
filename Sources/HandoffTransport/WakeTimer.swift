import Foundation
import Glibc
import Synchronization

/// One re-armable deadline, served by a thread blocked in poll() on a pipe with
/// the deadline as its timeout. Not Task.sleep or a dispatch timer: on Linux
/// libdispatch re-arms its timerfd every second while a long timer is pending,
/// so an idle daemon woke once a second for nothing (Docs/PERFORMANCE.md). This
/// thread wakes only when the deadline passes or is moved.
public final class WakeTimer: Sendable {
    private let readEnd: Int32
    private let writeEnd: Int32
    /// Monotonic milliseconds of the armed deadline; nil: none.
    private let deadline = Locked<UInt64?>(nil)
    private let stopped = Atomic<Bool>(false)

    /// Starts the thread; `fire` runs on it each time an armed deadline passes.
    public init(name: String, fire: @escaping @Sendable () -> Void) throws(SystemError) {
        var ends: [Int32] = [-1, -1]
        _ = try systemCall("pipe") { pipe(&ends) }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        _ = fcntl(ends[1], F_SETFL, O_NONBLOCK)
        readEnd = ends[0]
        writeEnd = ends[1]
        let thread = Thread { [self] in
            // This thread owns both ends and closes them once, when it ends.
            defer {
                close(readEnd)
                close(writeEnd)
            }
            var byte = [UInt8](repeating: 0, count: 64)
            while !stopped.load(ordering: .acquiring) {
                let now = monotonicMillis()
                let timeout = deadline.withLock { $0.map { $0 > now ? Int32(clamping: $0 - now) : 0 } ?? -1 }
                var watched = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
                let ready = poll(&watched, 1, timeout)
                if ready > 0 {
                    // Re-armed (or stopping): look at the deadline again.
                    _ = read(readEnd, &byte, byte.count)
                    continue
                }
                guard ready == 0, !stopped.load(ordering: .acquiring) else { continue }
                let due = deadline.withLock { armed -> Bool in
                    guard let at = armed, at <= monotonicMillis() else { return false }
                    armed = nil
                    return true
                }
                if due { fire() }
            }
        }
        thread.name = name
        thread.start()
    }

    /// Fires once, `millis` from now, replacing any deadline armed before.
    /// `arm` and `stop` are called by one owner (the daemon's actor), never concurrently.
    public func arm(afterMillis millis: UInt64) {
        guard !stopped.load(ordering: .acquiring) else { return }
        deadline.withLock { $0 = monotonicMillis() &+ millis }
        nudge()
    }

    /// Ends the thread (it closes the pipe); nothing fires after this.
    public func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        nudge()
    }

    private func nudge() {
        var one: UInt8 = 1
        _ = write(writeEnd, &one, 1)
    }
}
