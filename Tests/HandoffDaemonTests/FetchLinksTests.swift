import Glibc
@testable import HandoffDaemon
@testable import HandoffTransport
import Testing

/// Loopback only: a connection goes out on `lo`, which a cut keeps or not by name.
@Suite struct FetchLinksTests {
    /// A TCP connection to a listener on 127.0.0.1 (the listener's descriptor is closed at the end).
    private func loopbackConnection() throws -> (StreamConnection, Int32) {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: 0, sin_addr: in_addr(s_addr: UInt32(0x7f00_0001).bigEndian),
                                  sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
        listen(listener, 1)
        let connection = try StreamConnection.connect(to: try SocketAddress(host: "127.0.0.1", port: UInt16(bigEndian: address.sin_port)), timeoutMillis: 1000)
        return (connection, listener)
    }

    @Test func aLinkThatWentAwayCutsItsFetchesAndOnlyThose() throws {
        let (connection, listener) = try loopbackConnection()
        defer { close(listener) }
        let links = FetchLinks()
        let id = links.register(connection)
        #expect(links.cut(keeping: ["lo", "eth0"]) == 0)
        #expect(!connection.isClosed)
        #expect(links.cut(keeping: ["eth0"]) == 1)
        #expect(connection.isClosed)
        links.unregister(id)
        #expect(links.cut(keeping: []) == 0)
    }

    @Test func liveRoutesComeFirstAndOrderIsKeptOtherwise() {
        #expect(RouteCheck.way(toward: "127.0.0.1") == .init(interface: "lo", linkDown: false))
        #expect(RouteCheck.liveFirst(["127.0.0.1", "127.0.0.2"]) == ["127.0.0.1", "127.0.0.2"])
        // No route at all (an address of no family the kernel routes here) goes last.
        #expect(RouteCheck.liveFirst(["not-an-address", "127.0.0.1"]) == ["127.0.0.1", "not-an-address"])
    }
}
