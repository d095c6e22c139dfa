import Dispatch

/// One named thread that runs the work given to it in order: a serial queue
/// whose thread shows in /proc by its name (libdispatch's workers do not) and
/// ends when the worker is closed or released.
public final class SerialWorker: Sendable {
    private struct State {
        var work: [@Sendable () -> Void] = []
        var closed = false
    }
    private let state = Locked(State())
    /// One signal per job and one for close: a semaphore starts no thread of its own.
    private let ready = DispatchSemaphore(value: 0)

    public init(name: String) {
        Threads.start(name) { [state, ready] in
            while true {
                ready.wait()
                let next = state.withLock { state -> (job: (@Sendable () -> Void)?, closed: Bool) in
                    (state.work.isEmpty ? nil : state.work.removeFirst(), state.closed)
                }
                if let job = next.job {
                    job()
                } else if next.closed {
                    return
                }
            }
        }
    }

    deinit { close() }

    /// Runs `work` after everything given before it. Dropped once the worker is closed.
    public func async(_ work: @escaping @Sendable () -> Void) {
        let accepted = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.work.append(work)
            return true
        }
        if accepted { ready.signal() }
    }

    /// The thread ends once the work already given is done.
    public func close() {
        state.withLock { $0.closed = true }
        ready.signal()
    }
}
