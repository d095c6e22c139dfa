/// One re-armable deadline on `EventLoop`: nothing wakes the process for it
/// until it is due. Not Task.sleep or a dispatch timer: on Linux libdispatch
/// keeps a one-second timer running once its global queues have been used, so
/// an idle daemon woke once a second for nothing (Docs/PERFORMANCE.md).
public final class WakeTimer: Sendable {
    private struct State {
        var armed: EventLoop.Deadline?
        /// Bumped by every arm and stop, so a call already on its way for an older deadline does nothing.
        var generation: UInt64 = 0
        var stopped = false
    }

    private let state = Locked(State())
    private let fire: @Sendable () -> Void
    private let loop: EventLoop

    /// `fire` runs on the loop's thread (it must not block) each time an armed deadline passes.
    public init(loop: EventLoop = .shared, fire: @escaping @Sendable () -> Void) {
        self.loop = loop
        self.fire = fire
    }

    /// Fires once, `millis` from now, replacing any deadline armed before.
    public func arm(afterMillis millis: UInt64) {
        state.withLock { state in
            guard !state.stopped else { return }
            if let old = state.armed { loop.cancel(old) }
            state.generation &+= 1
            let generation = state.generation
            state.armed = loop.after(millis: millis) { [self] in
                let current = self.state.withLock { state -> Bool in
                    guard state.generation == generation, !state.stopped else { return false }
                    state.armed = nil
                    return true
                }
                if current { self.fire() }
            }
        }
    }

    /// Nothing fires after this.
    public func stop() {
        state.withLock { state in
            state.stopped = true
            state.generation &+= 1
            if let old = state.armed { loop.cancel(old) }
            state.armed = nil
        }
    }
}
