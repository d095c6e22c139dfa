import HandoffTransport
import HandoffRuntime

/// What wakes the daemon besides its sockets' threads: the one timer, route netlink, the
/// `.desktop` directories' watcher, the discovery inbox and the local API listener. Each is
/// started once by `Daemon.start` and stopped once by `shutdown` (`stopAll`).
struct EventSources {
    var timer: WakeTimer?
    /// When the timer fires next (monotonic ms; .max: not armed).
    private(set) var wakeAtMillis: UInt64 = .max
    /// Route netlink: a link or address change is handled at once, not at the next tick.
    var networkWatcher: NetworkChangeWatcher?
    var desktopWatcher: DesktopFileWatcher?
    var inbox: ObservationInbox?
    var localAPI: StreamListener?

    /// The timer fired: nothing is armed until the next `arm`.
    mutating func fired() {
        wakeAtMillis = .max
    }

    /// Arms the timer for `target` unless it already fires sooner: nothing wakes the
    /// daemon when nothing is due, and a later deadline never delays an earlier one.
    mutating func arm(at target: UInt64, nowMillis now: UInt64) {
        guard target < wakeAtMillis, let timer else { return }
        wakeAtMillis = target
        timer.arm(afterMillis: target &- now)
    }

    func stopAll() {
        timer?.stop()
        desktopWatcher?.stop()
        networkWatcher?.stop()
        localAPI?.stop()
        inbox?.close()
    }
}
