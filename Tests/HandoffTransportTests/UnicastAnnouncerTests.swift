import Glibc
import HandoffCore
@testable import HandoffTransport
import HandoffRuntime
import Testing

/// Attack regression (issue 22, 3): another account bound 47181/udp after handoffd, with
/// SO_REUSEADDR, and received the sealed datagrams meant for it. The unicast port is now
/// exclusive; only the multicast port is shared (each listener gets its own copy there).
@Suite struct UnicastAnnouncerTests {
    /// Binds like the squatter did: SO_REUSEADDR (and SO_REUSEPORT) on the same port.
    func squat(_ port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(fd) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }

    func freePort() throws -> UInt16 {
        for _ in 0..<50 {
            let port = UInt16.random(in: 20_000...60_000)
            if UnicastAnnouncer.canBind(port: port) { return port }
        }
        throw SystemError("no free port", errno: EADDRINUSE)
    }

    @Test func nobodyCanBindTheUnicastPortAfterUs() throws {
        let port = try freePort()
        let announcer = UnicastAnnouncer(port: port)
        try announcer.start { _ in }
        defer { announcer.stop() }
        #expect(!squat(port))
        #expect(!UnicastAnnouncer.canBind(port: port))
    }

    @Test func theMulticastPortStaysShared() throws {
        let port = try freePort()
        let first = try DatagramSocket.open(family: AF_INET, port: port, shared: true)
        defer { close(first) }
        let second = try DatagramSocket.open(family: AF_INET, port: port, shared: true)
        close(second)
    }
}
