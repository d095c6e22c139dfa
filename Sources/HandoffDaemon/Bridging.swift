import FoundationEssentials
import Glibc
import HandoffTransport
import HandoffRuntime

/// Runs blocking work (a socket exchange) on a pooled thread and awaits it, so an
/// actor never blocks while a peer is slow. It starts from the caller's actor, and in a
/// task that prefers the loop (`onActor(async:)`) the result comes back in one hand-off.
func onThread<T: Sendable>(name: String, isolation: isolated (any Actor)? = #isolation,
                           _ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation(isolation: isolation) { continuation in
        Threads.start(name) { continuation.resume(returning: work()) }
    }
}

extension Daemon {
    /// Work for the actor from the loop's handlers or any other thread, in the order posted: a step
    /// of the loop of its own (never inside the caller's step), with no task and, from the loop, no
    /// other thread.
    nonisolated func onActor(_ work: @escaping @Sendable (isolated Daemon) -> Void) {
        loop.execute { [self] in assumeIsolated(work) }
    }

    /// `onActor` for async work: a task that starts on the actor and prefers the loop for what it
    /// runs outside the actor, so the continuation of an `onThread` comes straight back.
    nonisolated func onActor(async work: @escaping @Sendable (isolated Daemon) async -> Void) {
        onActor { daemon in daemon.startTask(work) }
    }

    private func startTask(_ work: @escaping @Sendable (isolated Daemon) async -> Void) {
        Task(executorPreference: loop) { await work(self) }
    }

    /// Runs `work` on the actor and waits for it, from a thread of ours (a connection's, a
    /// fetch's), never the loop's: one hand-off each way.
    nonisolated func onActorWaiting<T: Sendable>(_ work: @escaping @Sendable (isolated Daemon) -> T) -> T {
        waitingForTheActor { finish in onActor { finish(work($0)) } }
    }

    /// `onActorWaiting` for async work (a pairing that waits for our user's decision).
    nonisolated func onActorWaiting<T: Sendable>(async work: @escaping @Sendable (isolated Daemon) async -> T) -> T {
        waitingForTheActor { finish in onActor(async: { finish(await work($0)) }) }
    }

    /// Starts work that hands its result to `finish`, and waits for that on this (plain) thread.
    private nonisolated func waitingForTheActor<T: Sendable>(_ start: (@escaping @Sendable (T) -> Void) -> Void) -> T {
        precondition(!loop.inLoop, "waiting for the actor on its own thread")
        let result = Locked<T?>(nil)
        let done = Signals(value: 0)
        start { value in
            result.withLock { $0 = value }
            done.signal()
        }
        done.wait()
        return result.withLock { $0! }
    }
}
