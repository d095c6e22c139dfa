import Glibc
import HandoffCore
@testable import HandoffTransport
import HandoffRuntime
import Testing

/// Loopback only: the kernel's route and neighbour tables are read, nothing leaves this host.
@Suite struct NeighbourProbeTests {
    @Test func theKernelRoutesLoopbackWithoutAGateway() throws {
        let socket = try #require(RouteSocket())
        guard case let .success(route) = socket.lookupRoute(family: RouteNetlink.familyIPv4, address: [127, 0, 0, 1], interface: nil) else {
            Issue.record("no route to 127.0.0.1")
            return
        }
        #expect(route.gateway == nil)
        #expect(route.outputInterface == 1)  // lo
        _ = socket.neighbours(family: RouteNetlink.familyIPv4)  // a dump ends (NLMSG_DONE) rather than hanging
    }

    /// A reset is an answer from the address, whatever the tables say.
    @Test func anAddressThatResetsAnswers() throws {
        // A port taken and given back: nothing listens there, so the kernel resets.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: 0, sin_addr: in_addr(s_addr: UInt32(0x7f00_0001).bigEndian), sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        close(fd)
        let port = UInt16(bigEndian: address.sin_port)
        let verdict = NeighbourProbe.examine(hosts: ["127.0.0.1"], port: port, startedMillis: monotonicMillis(), waitMillis: 2_000)
        #expect(verdict == .answers(host: "127.0.0.1"))
    }

    @Test func hostsParseWithTheirZone() throws {
        let (family, address, zone) = try #require(NeighbourProbe.parse("::1%lo"))
        #expect(family == RouteNetlink.familyIPv6)
        #expect(address == [UInt8](repeating: 0, count: 15) + [1])
        #expect(zone == 1)
        #expect(NeighbourProbe.parse("169.254.10.1")?.1 == [169, 254, 10, 1])
        #expect(NeighbourProbe.parse("laptop-a") == nil)
        #expect(NeighbourProbe.format([169, 254, 0, 1]) == "169.254.0.1")
    }
}

/// Loopback only: every address is tried at once, and each says how it ended.
@Suite struct ConnectOutcomesTests {
    @Test func eachAddressSaysHowItsAttemptEnded() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: 0, sin_addr: in_addr(s_addr: UInt32(0x7f00_0001).bigEndian),
                                  sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
        listen(listener, 4)
        let port = UInt16(bigEndian: address.sin_port)
        // 127.0.0.1 listens; ::1 does not (a reset); the third is no address at all.
        let outcomes = StreamConnection.connectOutcomes(hosts: ["127.0.0.1", "::1", "laptop-a"], port: port, timeoutMillis: 2000)
        #expect(outcomes["127.0.0.1"] == 0)
        #expect(outcomes["::1"] == ECONNREFUSED)
        #expect(outcomes["laptop-a"] == EINVAL)
    }
}
