import FoundationEssentials
import Glibc
import HandoffRuntime
import HandoffCore

/// Helpers shared by the UDP paths (multicast and unicast announcements).
enum DatagramSocket {
    /// A UDP socket bound to `port` on every address of `family` (IPv6 only for AF_INET6).
    /// `shared`: the multicast port, which every handoffd on this machine (any account) binds
    /// and where each gets its own copy. A unicast port is never shared: with SO_REUSEADDR,
    /// another account could bind it afterwards and take the datagrams meant for us.
    static func open(family: Int32, port: UInt16, shared: Bool) throws(SystemError) -> Int32 {
        let fd = try systemCall("socket(UDP)") { socket(family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
        do throws(SystemError) {
            if shared {
                try setOption(fd, SOL_SOCKET, SO_REUSEADDR, Int32(1), "setsockopt(SO_REUSEADDR)")
                try setOption(fd, SOL_SOCKET, SO_REUSEPORT, Int32(1), "setsockopt(SO_REUSEPORT)")
            }
            if family == AF_INET6 { try setOption(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, Int32(1), "setsockopt(IPV6_V6ONLY)") }
            // Room for a burst (a flood from strangers) before a paired device's datagram is dropped;
            // the kernel caps it at net.core.rmem_max, which is no reason to fail.
            try? setOption(fd, SOL_SOCKET, SO_RCVBUF, Int32(1 << 20), "setsockopt(SO_RCVBUF)")
            try bindAnyAddress(fd, family: family, port: port, "bind(udp port \(port))")
            return fd
        } catch {
            close(fd)
            throw error
        }
    }

    /// Datagrams read per readiness before the loop serves its other descriptors: a flood on one
    /// socket cannot starve the rest (the socket stays ready, so the loop comes back to it).
    static let datagramsPerTurn = 64

    /// Hands the datagrams waiting on a non-blocking socket, each with its numeric source host,
    /// at most `datagramsPerTurn`. Datagrams larger than an announcement arrive cut short and are
    /// then refused as malformed.
    static func receiveWaiting(fd: Int32, into buffer: UnsafeMutableRawBufferPointer, deliver: ([UInt8], String) -> Void) {
        for _ in 0..<datagramsPerTurn {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let received = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    recvfrom(fd, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT), $0, &length)
                }
            }
            if received < 0 && errno == EINTR { continue }
            // EAGAIN: nothing more waits. An empty datagram is nothing to hand on.
            guard received >= 0 else { return }
            if received > 0 { deliver(Array(buffer[0..<received]), SocketAddress(storage: storage, length: length).host) }
        }
    }

    /// Hands each socket to the event loop, which calls `observer` with announcements arriving
    /// by `path`. The loop owns the sockets from here on: closing the returned watches closes
    /// them, once, after their last read, so their numbers are never reused while read.
    static func startReceiving(on fds: [Int32], path: DiscoveryPathName, loop: EventLoop = .shared,
                               observer: @escaping @Sendable (DiscoveryObservation) -> Void) -> [EventLoop.Watch] {
        fds.filter { $0 >= 0 }.compactMap { fd in
            let buffer = ReadBuffer(bytes: Announcement.maximumBytes + 1)
            do {
                return try loop.watch(fd) { _ in
                    receiveWaiting(fd: fd, into: buffer.bytes) { bytes, host in
                        observer(.announcement(bytes: bytes, fromHost: host, path: path))
                    }
                }
            } catch {
                close(fd)
                return nil
            }
        }
    }

    static func send(_ datagram: [UInt8], fd: Int32, to address: SocketAddress) {
        _ = datagram.withUnsafeBytes { raw in
            address.withSockaddr { sendto(fd, raw.baseAddress, raw.count, 0, $0, $1) }
        }
    }
}
