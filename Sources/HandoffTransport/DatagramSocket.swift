import FoundationEssentials
import Glibc
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

    /// Receives datagrams until `isRunning` turns false, handing each with its numeric source host.
    /// Blocks in recvfrom with no timeout, so an idle daemon never wakes up here; the
    /// path's stop() shuts the socket down, which ends the wait.
    /// Datagrams larger than an announcement arrive cut short and are then refused as malformed.
    static func receiveLoop(fd: Int32, isRunning: () -> Bool, deliver: ([UInt8], String) -> Void) {
        var buffer = [UInt8](repeating: 0, count: Announcement.maximumBytes + 1)
        while isRunning() {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let received = buffer.withUnsafeMutableBytes { raw in
                withUnsafeMutablePointer(to: &storage) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        recvfrom(fd, raw.baseAddress, raw.count, 0, $0, &length)
                    }
                }
            }
            guard received > 0 else { continue }
            deliver(Array(buffer[0..<received]), SocketAddress(storage: storage, length: length).host)
        }
    }

    /// One receive thread per open socket, each handing announcements to `observer` as arriving by `path`.
    /// Each thread owns its socket from here on and closes it when it ends: nothing
    /// else may close it, so its number is never reused while the thread reads it.
    static func startReceiving(on fds: [Int32], path: DiscoveryPathName, isRunning: @escaping @Sendable () -> Bool,
                               observer: @escaping @Sendable (DiscoveryObservation) -> Void) {
        for fd in fds where fd >= 0 {
            Threads.start("\(path.rawValue) receive") {
                defer { close(fd) }
                receiveLoop(fd: fd, isRunning: isRunning) { bytes, host in
                    observer(.announcement(bytes: bytes, fromHost: host, path: path))
                }
            }
        }
    }

    /// Ends a receive thread's wait; the thread closes the socket.
    static func wake(_ fd: Int32) {
        shutdown(fd, Int32(SHUT_RDWR))
    }

    static func send(_ datagram: [UInt8], fd: Int32, to address: SocketAddress) {
        _ = datagram.withUnsafeBytes { raw in
            address.withSockaddr { sendto(fd, raw.baseAddress, raw.count, 0, $0, $1) }
        }
    }
}
