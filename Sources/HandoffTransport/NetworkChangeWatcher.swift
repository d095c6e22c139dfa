import CLinux
import FoundationEssentials
import Glibc

/// Says when a network link or address changes (route netlink: a cable pulled,
/// Wi-Fi joined, an address added or gone), so handoffd announces from its new
/// address and drops a dead one at once instead of at the next keepalive. One
/// thread blocks in poll on the netlink socket and a stop pipe, with no
/// timeout: nothing wakes while the network is still. It owns both and closes
/// them once, when it ends. A burst of messages (one change is several) gives
/// one call, once it has been quiet for `settleMillis`.
public final class NetworkChangeWatcher: Sendable {
    /// The stop pipe's write end, owned by `stop`, which closes it once (nil after).
    private let stopWrite: Locked<Int32?>
    public static let settleMillis: Int32 = 100

    /// nil when route netlink cannot be opened (then the daemon's periodic check is all there is).
    public init?(onChange: @escaping @Sendable () -> Void) {
        let netlink = handoff_netlink_route_changes()
        guard netlink >= 0 else { return nil }
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            close(netlink)
            return nil
        }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        stopWrite = Locked(ends[1])
        let stopRead = ends[0]
        Threads.start("netlink") {
            defer {
                close(netlink)
                close(stopRead)
            }
            var buffer = [UInt8](repeating: 0, count: 16 * 1024)
            func drain() { _ = buffer.withUnsafeMutableBytes { recv(netlink, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) } }
            while true {
                var fds = [pollfd(fd: netlink, events: Int16(POLLIN), revents: 0), pollfd(fd: stopRead, events: Int16(POLLIN), revents: 0)]
                let ready = poll(&fds, 2, -1)
                if ready < 0 && errno == EINTR { continue }
                guard ready > 0, fds[1].revents == 0 else { return }
                // ENOBUFS (the kernel dropped messages for a slow reader) also means something changed.
                drain()
                // The rest of the burst: read until quiet, unless told to stop.
                while true {
                    fds[0].revents = 0
                    fds[1].revents = 0
                    guard poll(&fds, 2, Self.settleMillis) > 0 else { break }
                    if fds[1].revents != 0 { return }
                    drain()
                }
                onChange()
            }
        }
    }

    /// Wakes the thread, which closes its descriptors as it ends.
    public func stop() {
        stopWrite.withLock { end in
            guard let fd = end else { return }
            close(fd)
            end = nil
        }
    }
}
