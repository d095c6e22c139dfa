import CLinux
import FoundationEssentials
import Glibc
import HandoffRuntime

/// Says when a network link or address changes (route netlink: a cable pulled,
/// Wi-Fi joined, an address added or gone), so handoffd announces from its new
/// address and drops a dead one at once instead of at the next keepalive. The
/// event loop owns the netlink socket: nothing wakes while the network is still.
/// A burst of messages (one change is several) gives one call, once it has been
/// quiet for `settleMillis`.
public final class NetworkChangeWatcher: Sendable {
    private struct State {
        var watch: EventLoop.Watch?
        var settle: EventLoop.Deadline?
    }

    private let state = Locked(State())
    private let interfaces: InterfaceCache?
    private let loop: EventLoop
    public static let settleMillis: UInt64 = 100

    /// nil when route netlink cannot be opened (then the daemon's periodic check is all there is).
    /// `onChange` runs on the loop's thread and must not block. `interfaces` is kept only while
    /// this watches, and read again after every message.
    public init?(loop: EventLoop = .shared, interfaces: InterfaceCache? = nil, onChange: @escaping @Sendable () -> Void) {
        self.loop = loop
        self.interfaces = interfaces
        let netlink = handoff_netlink_route_changes()
        guard netlink >= 0 else { return nil }
        let buffer = ReadBuffer(bytes: 16 * 1024)
        let watch: EventLoop.Watch
        do {
            let (shared, interfaces) = (state, interfaces)
            watch = try loop.watch(netlink) { _ in
                // ENOBUFS (the kernel dropped messages for a slow reader) also means something changed.
                while recv(netlink, buffer.bytes.baseAddress, buffer.bytes.count, Int32(MSG_DONTWAIT)) > 0 || errno == EINTR {}
                // At once, not after the settle delay: the interfaces are evidence an accept reads.
                interfaces?.invalidate()
                // The rest of the burst moves the call on until the link has been quiet.
                shared.withLock { state in
                    guard state.watch.map({ !$0.isClosed }) ?? true else { return }
                    if let settle = state.settle { loop.cancel(settle) }
                    state.settle = loop.after(millis: Self.settleMillis) {
                        let current = shared.withLock { state -> Bool in
                            state.settle = nil
                            return state.watch.map { !$0.isClosed } ?? false
                        }
                        if current { onChange() }
                    }
                }
            }
        } catch {
            close(netlink)
            return nil
        }
        state.withLock { $0.watch = watch }
        interfaces?.invalidate(watched: true)
    }

    /// No call after this; the loop closes the socket.
    public func stop() {
        interfaces?.invalidate(watched: false)
        state.withLock { state in
            state.watch?.close()
            if let settle = state.settle { loop.cancel(settle) }
            state.settle = nil
        }
    }
}
