import Glibc
@testable import HandoffTransport
import Testing

@Suite struct InterfaceTableTests {
    static let up = Int32(IFF_UP) | Int32(IFF_RUNNING)
    static let table = InterfaceTable(addresses: [
        .init(interface: "lo", flags: up | Int32(IFF_LOOPBACK), address: [127, 0, 0, 1], netmask: [255, 0, 0, 0]),
        .init(interface: "eth0", flags: up, address: [192, 168, 1, 20], netmask: [255, 255, 255, 0]),
        // No carrier: up, not running (a cable pulled keeps the address and the route).
        .init(interface: "eth1", flags: Int32(IFF_UP), address: [10, 77, 0, 2], netmask: [255, 255, 255, 0]),
        .init(interface: "wlan0", flags: up, address: [10, 77, 0, 9], netmask: [255, 255, 0, 0]),
        .init(interface: "wg0", flags: up, address: [10, 9, 0, 1], netmask: [255, 255, 255, 255]),
    ])

    @Test func linksUpAreRunningAndNotLoopbackUnlessNamed() {
        #expect(Self.table.linksUp(named: nil) == ["eth0", "wg0", "wlan0"])
        #expect(Self.table.linksUp(named: "lo") == ["lo"])
        #expect(Self.table.linksUp(named: "eth1") == [])
    }

    @Test func aPeerOnAConnectedSubnetIsReachedThroughItsLink() {
        #expect(Self.table.onLink("192.168.1.7")! == ("eth0", true))
        // The longest prefix wins, as in the routing table: 10.77.0.0/24 on eth1 (no carrier) over /16 on wlan0.
        #expect(Self.table.onLink("10.77.0.3")! == ("eth1", false))
        #expect(Self.table.onLink("10.77.5.3")! == ("wlan0", true))
        #expect(Self.table.onLink("fe80::1%eth1")! == ("eth1", false))
        // Not on a connected subnet (a host address is not one): only the routing table knows.
        #expect(Self.table.onLink("10.9.0.2") == nil)
        #expect(Self.table.onLink("8.8.8.8") == nil)
        #expect(Self.table.onLink("fe80::1%nosuch") == nil)
        #expect(Self.table.onLink("not an address") == nil)
        // Two links on the same subnet: the routes' metrics decide, which only the routing table knows.
        let docked = InterfaceTable(addresses: Self.table.addresses + [
            .init(interface: "enx0", flags: Self.up, address: [192, 168, 1, 30], netmask: [255, 255, 255, 0]),
        ])
        #expect(docked.onLink("192.168.1.7") == nil)
    }

    @Test func liveFirstMovesAHostWithoutCarrierLast() {
        #expect(RouteCheck.liveFirst(["10.77.0.3", "192.168.1.7"], interfaces: Self.table) == ["192.168.1.7", "10.77.0.3"])
        #expect(RouteCheck.liveFirst(["fe80::1%eth1", "10.77.5.3"], interfaces: Self.table) == ["10.77.5.3", "fe80::1%eth1"])
    }

    @Test func theMachinesOwnTableHasLoopback() {
        let table = InterfaceTable.read()
        #expect(table.linksUp(named: "lo") == ["lo"])
        #expect(table.onLink("127.0.0.2")?.interface == "lo")
    }

    /// Kept only while a watcher invalidates it; a read that raced an invalidation is not kept.
    @Test func theCacheKeepsATableOnlyWhileWatched() {
        let cache = InterfaceCache()
        _ = cache.current()
        #expect(!cache.isHeld)
        cache.invalidate(watched: true)
        _ = cache.current()
        #expect(cache.isHeld)
        cache.invalidate()
        #expect(!cache.isHeld)
        _ = cache.current()
        #expect(cache.isHeld)
        cache.invalidate(watched: false)
        _ = cache.current()
        #expect(!cache.isHeld)
    }

    @Test func aWatcherHoldsTheCacheUntilItStops() throws {
        let cache = InterfaceCache()
        let watcher = try #require(NetworkChangeWatcher(interfaces: cache) {})
        _ = cache.current()
        #expect(cache.isHeld)
        watcher.stop()
        #expect(!cache.isHeld)
    }
}
