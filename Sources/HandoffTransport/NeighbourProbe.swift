import Glibc
import HandoffRuntime
import HandoffCore

/// Why a silent peer's addresses cannot be reached, as the kernel sees it: is
/// there a route, and does the address answer on the link (ARP for IPv4,
/// neighbour discovery for IPv6)? The kernel's tables are read over route
/// netlink; the only packets are this probe's own connection attempts to the
/// peer's transfer port, which make the kernel ask the link. An entry the
/// kernel confirmed before the probe began proves nothing about now, so only
/// an answer during the probe counts, and the kernel's own verdict (FAILED)
/// is awaited up to `waitMillis`.
public enum NeighbourProbe {
    /// `startedMillis`: when probing this peer began (monotonic), so answers to the port
    /// probe's own connection attempts count. `answeredAfterWallMillis`: an answer the kernel
    /// confirmed after this (wall clock) counts too, however long before the probe.
    public static func examine(hosts: [String], port: UInt16, startedMillis: UInt64, answeredAfterWallMillis: UInt64? = nil,
                               waitMillis: Int) -> ConditionEvidence.Layer3? {
        guard let netlink = RouteSocket() else { return nil }
        var noRoute: String?
        var onLink: [Target] = []
        for host in hosts {
            guard let (family, address, scope) = parse(host) else { continue }
            switch netlink.lookupRoute(family: family, address: address, interface: scope) {
            case let .failure(error):
                if error.number == ENETUNREACH || error.number == EHOSTUNREACH { noRoute = noRoute ?? host }
            case let .success(route):
                // Behind a router: the neighbour table says nothing about it.
                guard route.gateway == nil, let interface = route.outputInterface ?? scope else { continue }
                onLink.append(Target(host: host, family: family, address: address, interface: interface))
            }
        }
        guard !onLink.isEmpty else { return noRoute.map { .noRoute(host: $0) } }

        // Attempts that keep the kernel using (so re-checking) each entry while we watch.
        let attempts = onLink.map { Attempt(host: $0.host, port: port) }
        defer { attempts.forEach { $0.close() } }
        let deadline = startedMillis + UInt64(max(waitMillis, 0))
        var silent = Set<String>()
        while true {
            let now = monotonicMillis()
            let asked = now &- startedMillis
            for attempt in attempts where attempt.answered() { return .answers(host: attempt.host) }
            for family in Set(onLink.map(\.family)) {
                for entry in netlink.neighbours(family: family) {
                    guard let target = onLink.first(where: { $0.matches(entry) }) else { continue }
                    switch entry.state {
                    case .answered, .asking:
                        // Confirmed since the probe began, or since the peer's silence began (centiseconds ago).
                        guard entry.hasLinkAddress, let ago = entry.confirmedCentisecondsAgo.map({ UInt64($0) * 10 }) else { break }
                        if entry.state == .answered && ago <= asked { return .answers(host: target.host) }
                        if let after = answeredAfterWallMillis, wallClockMillis() &- ago > after { return .answers(host: target.host) }
                    case .silent: silent.insert(target.host)
                    case .none: break
                    }
                }
            }
            for attempt in attempts where attempt.unreachable() { silent.insert(attempt.host) }
            if silent.count == onLink.count || now >= deadline { break }
            usleep(200_000)
        }
        guard silent.count == onLink.count, let first = onLink.first else { return nil }
        // Its own family's gateway first; a host with an IPv4 gateway only reaches it just the same.
        let families = [first.family] + [RouteNetlink.familyIPv4, RouteNetlink.familyIPv6].filter { $0 != first.family }
        let gateways = families.compactMap { netlink.defaultGateway(family: $0) }
        let gateway = gateways.first { $0.answeredSecondsAgo != nil } ?? gateways.first
        return .silent(host: first.host, gateway: gateway?.address, gatewayAnsweredSecondsAgo: gateway?.answeredSecondsAgo)
    }

    struct Target {
        var host: String
        var family: UInt8
        var address: [UInt8]
        var interface: UInt32

        func matches(_ entry: RouteNetlink.Neighbour) -> Bool {
            entry.family == family && entry.interface == interface && entry.address == address
        }
    }

    /// (family, address bytes, zone's interface index) of a numeric host such as "fe80::1%eth0".
    static func parse(_ host: String) -> (UInt8, [UInt8], UInt32?)? {
        let parts = host.split(separator: "%", maxSplits: 1).map(String.init)
        guard let bare = parts.first else { return nil }
        let scope = parts.count == 2 ? if_nametoindex(parts[1]) : 0
        var v4 = in_addr()
        if inet_pton(AF_INET, bare, &v4) == 1 {
            return (RouteNetlink.familyIPv4, withUnsafeBytes(of: &v4) { Array($0) }, nil)
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, bare, &v6) == 1 {
            return (RouteNetlink.familyIPv6, withUnsafeBytes(of: &v6) { Array($0) }, scope == 0 ? nil : scope)
        }
        return nil
    }

    static func format(_ address: [UInt8]) -> String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = address.count == 4 ? AF_INET : AF_INET6
        let ok = address.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &text, socklen_t(text.count)) } != nil
        return ok ? String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "?"
    }

    /// A non-blocking connection attempt, owned here and closed once.
    final class Attempt {
        let host: String
        private var fd: Int32 = -1

        init(host: String, port: UInt16) {
            self.host = host
            guard let address = try? SocketAddress(host: host, port: port) else { return }
            fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard fd >= 0 else { return }
            _ = address.withSockaddr { Glibc.connect(fd, $0, $1) }
        }

        /// The attempt's outcome once it has one (SO_ERROR reads once: the kernel clears it).
        private var outcome: Int32?

        private func state() -> Int32? {
            if let outcome { return outcome }
            guard fd >= 0 else { return nil }
            var ready = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            guard poll(&ready, 1, 0) > 0 else { return nil }
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
            outcome = error
            return error
        }

        /// Connected, or reset: something at that address answered.
        func answered() -> Bool {
            guard let error = state() else { return false }
            return error == 0 || error == ECONNREFUSED
        }

        /// The kernel gave up asking the link for it.
        func unreachable() -> Bool {
            guard let error = state() else { return false }
            return error == EHOSTUNREACH
        }

        func close() {
            if fd >= 0 { Glibc.close(fd) }
            fd = -1
        }
    }
}

/// Which interface the kernel would use toward a host, and whether it has a carrier now:
/// a connection tries live links first, and a transfer over a link that went away moves.
public enum RouteCheck {
    public struct Way: Sendable, Equatable {
        public var interface: String
        public var linkDown: Bool
    }

    public static func way(toward host: String) -> Way? {
        guard let socket = RouteSocket(), let (family, address, scope) = NeighbourProbe.parse(host),
              case let .success(route) = socket.lookupRoute(family: family, address: address, interface: scope),
              let index = route.outputInterface else { return nil }
        var name = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
        guard if_indextoname(index, &name) != nil else { return nil }
        return Way(interface: String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self), linkDown: route.linkDown)
    }

    /// `hosts` with those the kernel has no live route to (no carrier, no route) moved last, in order
    /// otherwise. A host on a connected subnet is judged from `interfaces` (no carrier on its link);
    /// only the others cost a route lookup, and every accept's fetch asks first.
    public static func liveFirst(_ hosts: [String], interfaces: InterfaceTable? = nil) -> [String] {
        guard hosts.count > 1 else { return hosts }
        var socket: RouteSocket?
        let live = hosts.map { host in
            if let onLink = interfaces?.onLink(host) { return onLink.running }
            if socket == nil { socket = RouteSocket() }
            guard let socket, let (family, address, scope) = NeighbourProbe.parse(host),
                  case let .success(route) = socket.lookupRoute(family: family, address: address, interface: scope) else { return false }
            return route.outputInterface != nil && !route.linkDown
        }
        return zip(hosts, live).filter(\.1).map(\.0) + zip(hosts, live).filter { !$0.1 }.map(\.0)
    }
}

/// A route netlink socket for requests, owned by one probe and closed when it ends.
final class RouteSocket {
    private let fd: Int32
    private var sequence: UInt32 = 0

    init?() {
        fd = socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)  // NETLINK_ROUTE
        guard fd >= 0 else { return nil }
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    func lookupRoute(family: UInt8, address: [UInt8], interface: UInt32?) -> Result<RouteNetlink.Route, RouteError> {
        sequence &+= 1
        guard let replies = exchange(RouteNetlink.routeLookup(family: family, address: address, interface: interface, sequence: sequence), dump: false) else {
            return .failure(RouteError(number: EIO))
        }
        for message in replies {
            if let number = RouteNetlink.errorNumber(message), number != 0 { return .failure(RouteError(number: number)) }
            if let route = RouteNetlink.route(message) { return .success(route) }
        }
        return .failure(RouteError(number: EIO))
    }

    func neighbours(family: UInt8) -> [RouteNetlink.Neighbour] {
        sequence &+= 1
        return (exchange(RouteNetlink.neighbourDump(family: family, sequence: sequence), dump: true) ?? []).compactMap(RouteNetlink.neighbour)
    }

    /// The main table's default gateway and how long ago its link layer last answered.
    func defaultGateway(family: UInt8) -> (address: String, answeredSecondsAgo: UInt32?)? {
        sequence &+= 1
        let routes = (exchange(RouteNetlink.routeDump(family: family, sequence: sequence), dump: true) ?? []).compactMap(RouteNetlink.route)
        guard let route = routes.first(where: { $0.destinationLength == 0 && $0.table == 254 && $0.gateway != nil }),
              let gateway = route.gateway else { return nil }
        let entry = neighbours(family: family).first { neighbour in
            neighbour.address == gateway && (route.outputInterface.map { neighbour.interface == $0 } ?? true)
        }
        let answered = entry.flatMap { $0.state == .silent ? nil : $0.confirmedCentisecondsAgo.map { $0 / 100 } }
        return (NeighbourProbe.format(gateway), answered)
    }

    /// Sends one request and reads its replies (a dump until NLMSG_DONE); bounded in datagrams.
    private func exchange(_ request: [UInt8], dump: Bool) -> [RouteNetlink.Message]? {
        guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, 0) }) == request.count else { return nil }
        var found: [RouteNetlink.Message] = []
        var buffer = [UInt8](repeating: 0, count: 32 * 1024)
        for _ in 0..<256 {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0, let messages = try? RouteNetlink.messages(in: Array(buffer[0..<count])) else { return nil }
            for message in messages where message.sequence == sequence {
                if message.type == RouteNetlink.done { return found }
                found.append(message)
                if message.type == RouteNetlink.error || !dump { return found }
            }
        }
        return found
    }
}

struct RouteError: Error {
    var number: Int32
}
