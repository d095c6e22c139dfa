import FoundationEssentials
import Glibc
import HandoffRuntime
import HandoffCore

/// Sealed announcements sent straight to a paired device once its address is
/// known (from its own announcements, or from mDNS before it is heard), and
/// received from them, over UDP on the transfer port number. This is what
/// keeps a paired host quiet on a crowded link (no multicast copies at rest),
/// and what lets two hosts hand off with multicast filtered as long as mDNS works.
public final class UnicastAnnouncer: DiscoveryPath {
    public let name = DiscoveryPathName.unicast
    private let port: UInt16
    private let state_ = Locked(State())

    struct State: ~Copyable {
        var ipv4: Int32 = -1
        var ipv6: Int32 = -1
        var sent = 0
        /// The sockets as the event loop holds them: closing these closes the sockets.
        var watches: [EventLoop.Watch] = []
    }

    public init(port: UInt16) {
        self.port = port
    }

    /// Whether `port`/udp can be bound now on at least one family (as `start` needs): the
    /// daemon picks its transfer port so that the same number is free on UDP too.
    public static func canBind(port: UInt16) -> Bool {
        var free = false
        for family in [AF_INET, AF_INET6] {
            if let fd = try? DatagramSocket.open(family: family, port: port, shared: false) {
                close(fd)
                free = true
            }
        }
        return free
    }

    public let abilities: PathAbilities = [.find, .sendStraight]

    public var health: PathHealth {
        state_.withLock { state in
            state.ipv6 < 0 && state.ipv4 < 0 ? PathHealth(.failed(.noSocket), "closed")
                : PathHealth(.working, "udp port \(port); \(state.sent) announcement(s) sent straight to paired devices")
        }
    }

    public func start(observer: @escaping @Sendable (DiscoveryObservation) -> Void) throws(HandoffError) {
        // Either family alone will do (a kernel with IPv6 switched off, say).
        var failures: [String] = []
        func open(_ family: Int32) -> Int32 {
            do {
                return try DatagramSocket.open(family: family, port: port, shared: false)
            } catch {
                failures.append("\(error)")
                return -1
            }
        }
        let ipv4 = open(AF_INET)
        let ipv6 = open(AF_INET6)
        guard ipv4 >= 0 || ipv6 >= 0 else {
            throw HandoffError(.network, "Cannot open \(port)/udp for announcements from mDNS peers: \(failures.joined(separator: "; ")).",
                               fix: "Stop the program using \(port)/udp or pass another --port.")
        }
        let watches = DatagramSocket.startReceiving(on: [ipv4, ipv6], path: .unicast, observer: observer)
        state_.withLock {
            $0.ipv4 = ipv4
            $0.ipv6 = ipv6
            $0.watches = watches
        }
    }

    /// Sends each datagram routed by unicast to its one address; the rest are other paths'.
    public func announce(_ datagrams: [OutgoingAnnouncement]) {
        let mine = datagrams.compactMap { datagram -> (SocketAddress, [UInt8])? in
            guard case let .unicast(host, port) = datagram.route, let address = try? SocketAddress(host: host, port: port) else { return nil }
            return (address, datagram.bytes)
        }
        guard !mine.isEmpty else { return }
        state_.withLock { state in
            for (address, bytes) in mine {
                let fd = address.family == AF_INET6 ? state.ipv6 : state.ipv4
                if fd >= 0 {
                    DatagramSocket.send(bytes, fd: fd, to: address)
                    state.sent += 1
                }
            }
        }
    }

    public func stop() {
        state_.withLock { state in
            state.watches.forEach { $0.close() }
            state.watches = []
            state.ipv4 = -1
            state.ipv6 = -1
        }
    }
}
