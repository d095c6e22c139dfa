import Glibc
import HandoffRuntime

/// The host's interfaces and their addresses, as getifaddrs lists them: which links are up,
/// and which interface reaches a peer on a connected subnet. Read once per network change
/// (`NetworkChangeWatcher.interfaces`), since getifaddrs is a netlink dump of every address and
/// each accept asks before it fetches.
public struct InterfaceTable: Sendable, Equatable {
    struct Address: Sendable, Equatable {
        var interface: String
        var flags: Int32
        /// 4 or 16 bytes, and the netmask of the same length.
        var address: [UInt8]
        var netmask: [UInt8]
    }

    var addresses: [Address]

    init(addresses: [Address]) {
        self.addresses = addresses
    }

    public static func read() -> InterfaceTable {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return InterfaceTable(addresses: []) }
        defer { freeifaddrs(list) }
        var found: [Address] = []
        var cursor = list
        while let entry = cursor {
            cursor = entry.pointee.ifa_next
            guard let address = entry.pointee.ifa_addr, let bytes = Self.bytes(of: address) else { continue }
            let netmask = entry.pointee.ifa_netmask.flatMap(Self.bytes(of:)) ?? [UInt8](repeating: 0xFF, count: bytes.count)
            found.append(Address(interface: String(cString: entry.pointee.ifa_name), flags: Int32(entry.pointee.ifa_flags),
                                 address: bytes, netmask: netmask.count == bytes.count ? netmask : [UInt8](repeating: 0xFF, count: bytes.count)))
        }
        return InterfaceTable(addresses: found)
    }

    private static func bytes(of address: UnsafeMutablePointer<sockaddr>) -> [UInt8]? {
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            return address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                withUnsafeBytes(of: v4.pointee.sin_addr) { Array($0) }
            }
        case AF_INET6:
            return address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                withUnsafeBytes(of: v6.pointee.sin6_addr) { Array($0) }
            }
        default:
            return nil
        }
    }

    /// Interfaces that are up, running and hold an IPv4 or IPv6 address (or only `wanted`).
    /// Loopback counts only when it is the interface handoffd was told to use (tests, one machine).
    public func linksUp(named wanted: String?) -> [String] {
        Set(addresses.filter { entry in
            (entry.flags & Int32(IFF_LOOPBACK) == 0 || wanted == entry.interface) && entry.flags & Int32(IFF_UP) != 0
                && entry.flags & Int32(IFF_RUNNING) != 0 && (wanted == nil || wanted == entry.interface)
        }.map(\.interface)).sorted()
    }

    /// The interface a peer on a connected subnet is reached through (an IPv6 link-local host names
    /// it as its zone), and whether that link has a carrier; nil for a host on no connected subnet,
    /// which only the routing table can answer.
    public func onLink(_ host: String) -> (interface: String, running: Bool)? {
        let parts = host.split(separator: "%", maxSplits: 1)
        if parts.count == 2 {
            let zone = String(parts[1])
            guard let flags = addresses.first(where: { $0.interface == zone })?.flags else { return nil }
            return (zone, flags & Int32(IFF_RUNNING) != 0)
        }
        var bytes: [UInt8]
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, host, &v4) == 1 {
            bytes = withUnsafeBytes(of: &v4) { Array($0) }
        } else if inet_pton(AF_INET6, host, &v6) == 1 {
            bytes = withUnsafeBytes(of: &v6) { Array($0) }
        } else {
            return nil
        }
        // The longest prefix wins, as it would in the routing table; a host address itself is not a subnet.
        let matches = addresses.filter { entry in
            entry.address.count == bytes.count && entry.netmask.contains { $0 != 0xFF }
                && zip(zip(entry.address, entry.netmask), bytes).allSatisfy { pair, byte in pair.0 & pair.1 == byte & pair.1 }
        }
        guard let longest = matches.map({ Self.prefixLength($0.netmask) }).max() else { return nil }
        // Two links on the same subnet (Wi-Fi and a dock's Ethernet): the routes' metrics decide, which only the routing table knows.
        let best = matches.filter { Self.prefixLength($0.netmask) == longest }
        guard Set(best.map(\.interface)).count == 1, let chosen = best.first else { return nil }
        return (chosen.interface, chosen.flags & Int32(IFF_RUNNING) != 0)
    }

    private static func prefixLength(_ netmask: [UInt8]) -> Int {
        netmask.reduce(0) { $0 + $1.nonzeroBitCount }
    }
}

/// The interface table, read again only after route netlink said a link or an address changed
/// (`NetworkChangeWatcher` invalidates it on each message, before its settle delay). Without a
/// watcher every read is fresh. `generation` counts invalidations, so a read that raced one
/// does not keep what it read before it.
public final class InterfaceCache: Sendable {
    private struct State {
        var watched = false
        var generation: UInt64 = 0
        var table: InterfaceTable?
    }

    private let state = Locked(State())

    public init() {}

    public func current() -> InterfaceTable {
        let (watched, generation, known) = state.withLock { ($0.watched, $0.generation, $0.table) }
        if let known { return known }
        let fresh = InterfaceTable.read()
        if watched { state.withLock { if $0.generation == generation { $0.table = fresh } } }
        return fresh
    }

    /// Whether a table is kept now (tests).
    var isHeld: Bool { state.withLock { $0.table != nil } }

    func invalidate(watched: Bool? = nil) {
        state.withLock { state in
            if let watched { state.watched = watched }
            state.generation &+= 1
            state.table = nil
        }
    }
}
