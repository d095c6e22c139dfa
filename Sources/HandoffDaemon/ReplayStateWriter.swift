import HandoffCore
import HandoffRuntime

/// Writes the replay state off the event loop. A write is a temporary file, fsync, rename and
/// fsync of the directory: a few milliseconds on an SSD, far more on a slow disk, during which
/// the loop (and with it the actor, the local API and discovery) would wait. New high-water
/// marks come with every change a peer announces, so they are written on a pooled thread.
/// Each write is the whole state, so one still waiting is replaced by a newer one, and one
/// write runs at a time: the file never goes back to an older state.
final class ReplayStateWriter: Sendable {
    typealias Write = @Sendable (ReplayState) throws(HandoffError) -> Void
    typealias Written = @Sendable (Result<ReplayState, HandoffError>) -> Void

    private struct Queue {
        var pending: (state: ReplayState, written: Written)?
        var writing = false
    }
    private let queue = Locked(Queue())
    private let write: Write

    init(write: @escaping Write) {
        self.write = write
    }

    convenience init(directory: StateDirectory) {
        self.init { state throws(HandoffError) in try state.save(to: directory) }
    }

    /// Writes `state` on a pooled thread after the write under way, if any; `written` is
    /// called there with the outcome. A state given before this one and not yet started is
    /// never written (`written` is not called for it).
    func writeLater(_ state: ReplayState, written: @escaping Written) {
        let start = queue.withLock { queue in
            queue.pending = (state, written)
            guard !queue.writing else { return false }
            queue.writing = true
            return true
        }
        if start { writePending() }
    }

    /// On a pooled thread, writes what is pending until nothing is.
    private func writePending() {
        Threads.start("state writer") { [self] in
            while let (state, written) = takePending() {
                do throws(HandoffError) {
                    try write(state)
                    written(.success(state))
                } catch {
                    written(.failure(error))
                }
            }
        }
    }

    /// The next state to write; nil (and no longer writing) when there is none.
    private func takePending() -> (ReplayState, Written)? {
        queue.withLockWakingWaiters { queue in
            guard let next = queue.pending else {
                queue.writing = false
                return nil
            }
            queue.pending = nil
            return next
        }
    }

    /// Writes `state` on the calling thread once the write under way has finished, and drops
    /// any state still waiting (this one is newer): for what must be on disk before the daemon
    /// goes on (a sequence reservation, about once an hour; the state at shutdown). The actor
    /// calls it and waits, as it waited for every write before; `written` callbacks never wait
    /// for the actor, so the write under way always finishes.
    func writeNow(_ state: ReplayState) throws(HandoffError) {
        // Dropped first, so the write under way is not followed by a state this one replaces.
        queue.withLock { $0.pending = nil }
        _ = queue.wait(until: { !$0.writing }) { $0.writing = true }
        defer {
            // A state given meanwhile from another thread is written after this one.
            let more = queue.withLockWakingWaiters { queue in
                if queue.pending == nil { queue.writing = false }
                return queue.pending != nil
            }
            if more { writePending() }
        }
        try write(state)
    }
}
