import Foundation
import Glibc
import HandoffCore
import Synchronization

/// Signed announcements sent straight to peers whose address came from mDNS,
/// and received from them, over UDP on the transfer port number. This is
/// what lets two hosts hand off with multicast announcements switched off
/// (or filtered by the network) as long as mDNS works.
public final class UnicastAnnouncer: DiscoveryPath {
    public let name = DiscoveryPathName.unicast.rawValue
    private let port: UInt16
    private let state_ = Locked(State())
    private let running = Atomic<Bool>(false)

    struct State: ~Copyable {
        var ipv4: Int32 = -1
        var ipv6: Int32 = -1
        var targets: [DeviceKey: [SocketAddress]] = [:]
    }

    public init(port: UInt16) {
        self.port = port
    }

    public var state: String {
        state_.withLock { state in
            state.ipv6 < 0 && state.ipv4 < 0 ? "closed"
                : "udp port \(port); sending to \(state.targets.values.map(\.count).reduce(0, +)) address(es) of \(state.targets.count) paired device(s) found by mDNS"
        }
    }

    public func start(observer: @escaping @Sendable (DiscoveryObservation) -> Void) throws(HandoffError) {
        // Either family alone will do (a kernel with IPv6 switched off, say).
        var failures: [String] = []
        func open(_ family: Int32) -> Int32 {
            do {
                return try DatagramSocket.open(family: family, port: port, reusePort: false)
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
        state_.withLock {
            $0.ipv4 = ipv4
            $0.ipv6 = ipv6
        }
        running.store(true, ordering: .releasing)
        DatagramSocket.startReceiving(on: [ipv4, ipv6], path: .unicast,
                                      isRunning: { [self] in running.load(ordering: .acquiring) }, observer: observer)
    }

    /// Where each paired device can be reached: the addresses mDNS resolved for it.
    public func setTargets(_ targets: [(key: DeviceKey, host: String, port: UInt16)]) {
        var addresses: [DeviceKey: [SocketAddress]] = [:]
        for target in targets {
            if let address = try? SocketAddress(host: target.host, port: target.port) { addresses[target.key, default: []].append(address) }
        }
        state_.withLock { $0.targets = addresses }
    }

    /// Each sealed datagram goes only to its recipient's addresses; beacons are not sent this way.
    public func announce(_ datagrams: [OutgoingAnnouncement]) {
        state_.withLock { state in
            for datagram in datagrams {
                guard let recipient = datagram.recipient else { continue }
                for target in state.targets[recipient] ?? [] {
                    let fd = target.family == AF_INET6 ? state.ipv6 : state.ipv4
                    if fd >= 0 { DatagramSocket.send(datagram.bytes, fd: fd, to: target) }
                }
            }
        }
    }

    public func stop() {
        running.store(false, ordering: .releasing)
        state_.withLock { state in
            for fd in [state.ipv4, state.ipv6] where fd >= 0 { DatagramSocket.wake(fd) }
            state.ipv4 = -1
            state.ipv6 = -1
        }
    }
}
