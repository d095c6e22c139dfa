import FoundationEssentials
import Glibc
import HandoffTransport
import HandoffRuntime

/// Runs async work from a plain thread (socket threads) and waits for it.
/// Only ever called from threads we created, never from the cooperative pool,
/// so blocking here cannot starve Swift concurrency.
func waitFor<T: Sendable>(_ operation: @escaping @Sendable () async -> T) -> T {
    let result = Locked<T?>(nil)
    let done = Signals(value: 0)
    Task {
        let value = await operation()
        result.withLock { $0 = value }
        done.signal()
    }
    done.wait()
    return result.withLock { $0! }
}

/// Runs blocking work (a socket exchange) on a thread of its own and awaits it,
/// so an actor never blocks the cooperative pool while a peer is slow.
func onThread<T: Sendable>(name: String, _ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Threads.start(name) { continuation.resume(returning: work()) }
    }
}
