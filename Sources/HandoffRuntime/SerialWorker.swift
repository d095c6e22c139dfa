/// One named thread that runs the work given to it in order: a serial queue
/// whose thread shows in /proc by its name (libdispatch's workers do not) and
/// ends when the worker is closed or released.
public final class SerialWorker: Sendable {
    private struct State {
        var work: [@Sendable () -> Void] = []
        var closed = false
    }
    private let state = Locked(State())

    public init(name: String) {
        Threads.start(name) { [state] in
            while true {
                // The next job, or nil once closed with nothing left.
                let next = state.wait(until: { !$0.work.isEmpty || $0.closed }) { state in
                    state.work.isEmpty ? nil : state.work.removeFirst()
                }
                guard let job = next ?? nil else { return }
                job()
            }
        }
    }

    deinit { close() }

    /// Runs `work` after everything given before it. Dropped once the worker is closed.
    public func async(_ work: @escaping @Sendable () -> Void) {
        state.withLockWakingWaiters { state in
            guard !state.closed else { return }
            state.work.append(work)
        }
    }

    /// The thread ends once the work already given is done.
    public func close() {
        state.withLockWakingWaiters { $0.closed = true }
    }
}
