import Glibc
import HandoffRuntime

/// Where a bus connection meets an event loop, for the one owner that uses the connection on
/// the loop's thread (sd-bus is not thread-safe). After everything that used the bus the owner
/// dispatches and calls `rearm`; the loop then calls the owner's turn when the socket is ready
/// for what sd-bus wants (reading, and writing while it has queued output) or its timeout is due.
public struct BusOnLoop {
    private var watch: EventLoop.Watch?
    private var deadline: EventLoop.Deadline?

    public init() {}

    /// Messages dispatched per turn before the loop serves its other descriptors.
    public static let messagesPerTurn = 64

    /// Dispatches what arrived, at most `messagesPerTurn`, stopping early once `keepGoing` says
    /// no (a callback dropped the connection). True when more may wait: sd-bus has read those
    /// already, so the socket will not say so, and the owner posts another turn.
    public static func dispatch(_ bus: BusConnection, while keepGoing: () -> Bool) throws(BusError) -> Bool {
        for _ in 0..<messagesPerTurn {
            guard try bus.process(), keepGoing() else { return false }
        }
        return true
    }

    /// Asks `loop` to call `turn` when `bus` next needs it; false when its socket cannot be watched.
    public mutating func rearm(_ bus: BusConnection, on loop: EventLoop, turn: @escaping @Sendable () -> Void) -> Bool {
        var interest: EventLoop.Interest = []
        if bus.events & Int16(POLLIN) != 0 { interest.insert(.readable) }
        if bus.events & Int16(POLLOUT) != 0 { interest.insert(.writable) }
        if let watch {
            watch.update(interest)
        } else {
            guard let made = try? loop.watch(borrowing: bus.fileDescriptor, interest, handler: { _ in turn() }) else { return false }
            watch = made
        }
        if let deadline { loop.cancel(deadline) }
        deadline = bus.timeoutMillis.map { loop.after(millis: UInt64($0), turn) }
        return true
    }

    /// Stops watching, on the loop, before the connection is closed (sd-bus closes the socket).
    public mutating func release(on loop: EventLoop) {
        watch?.close()
        watch = nil
        if let deadline { loop.cancel(deadline) }
        deadline = nil
    }
}
