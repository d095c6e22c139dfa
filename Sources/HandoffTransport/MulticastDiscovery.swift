import FoundationEssentials
import Glibc
import HandoffRuntime
import HandoffCore

/// Signed announcements over link-local UDP multicast, IPv4 and IPv6. This is
/// the path that works with no Avahi and no Bluetooth, on any shared link.
public final class MulticastDiscovery: DiscoveryPath {
    public struct Configuration: Sendable {
        /// Unassigned in IANA's link-local block; never routed beyond the link.
        public var ipv4Group = "224.0.0.199"
        public var ipv6Group = "ff02::4846"
        public var port: UInt16 = 47180
        /// nil: every up, multicast-capable, non-loopback interface.
        public var interface: String?

        public init() {}
    }

    public let name = DiscoveryPathName.multicast
    private let configuration: Configuration
    private let sockets = Locked(Sockets())

    struct Sockets: ~Copyable {
        var ipv4: Int32 = -1
        var ipv6: Int32 = -1
        var interfaces: [(name: String, index: UInt32)] = []
        var problems: [String] = []
        /// The sockets as the event loop holds them: closing these closes the sockets.
        var watches: [EventLoop.Watch] = []
        /// What refreshInterfaces() last saw (nil before the first look).
        var addresses: [String]?
    }

    public init(configuration: Configuration) {
        self.configuration = configuration
    }

    public let abilities: PathAbilities = [.find, .reachEveryone]

    public var health: PathHealth {
        sockets.withLock { sockets in
            let names = sockets.interfaces.map(\.name).joined(separator: ",")
            var families: [String] = []
            if sockets.ipv4 >= 0 { families.append(configuration.ipv4Group) }
            if sockets.ipv6 >= 0 { families.append(configuration.ipv6Group) }
            let problems = sockets.problems.isEmpty ? "" : "; " + sockets.problems.joined(separator: "; ")
            if families.isEmpty { return PathHealth(.failed(.noSocket), "no multicast socket" + problems) }
            if names.isEmpty {
                return PathHealth(.waiting, "listening on port \(configuration.port); no network interface is up yet: joining \(families.joined(separator: " and ")) when one is" + problems)
            }
            return PathHealth(.working, "joined \(families.joined(separator: " and ")) port \(configuration.port) on \(names)" + problems)
        }
    }

    public func networkChanged() -> Bool? { refreshInterfaces() }

    public func start(observer: @escaping @Sendable (DiscoveryObservation) -> Void) throws(HandoffError) {
        let interfaces = try Self.multicastInterfaces(named: configuration.interface)
        var problems: [String] = []
        let ipv4: Int32
        let ipv6: Int32
        do throws(SystemError) {
            ipv4 = try openIPv4(interfaces: interfaces)
        } catch {
            ipv4 = -1
            problems.append("IPv4: \(error)")
        }
        do throws(SystemError) {
            ipv6 = try openIPv6(interfaces: interfaces)
        } catch {
            ipv6 = -1
            problems.append("IPv6: \(error)")
        }
        guard ipv4 >= 0 || ipv6 >= 0 else {
            throw HandoffError(.network, "Could not join the multicast groups: \(problems.joined(separator: "; ")).",
                               fix: "Check that the interface is up and has an address, and that port \(configuration.port)/udp is free.")
        }
        let watches = DatagramSocket.startReceiving(on: [ipv4, ipv6], path: .multicast, observer: observer)
        sockets.withLock {
            $0.ipv4 = ipv4
            $0.ipv6 = ipv6
            $0.interfaces = interfaces
            $0.problems = problems
            $0.watches = watches
        }
    }

    /// Datagrams routed by multicast go to both groups (a peer may have either
    /// family switched off); sealed ones are readable only by their recipient.
    public func announce(_ datagrams: [OutgoingAnnouncement]) {
        let mine = datagrams.filter { $0.route == .multicast }
        guard !mine.isEmpty else { return }
        sockets.withLock { sockets in
            for interface in sockets.interfaces {
                for datagram in mine {
                    if sockets.ipv4 >= 0 { sendIPv4(datagram.bytes, fd: sockets.ipv4, interface: interface.index) }
                    if sockets.ipv6 >= 0 { sendIPv6(datagram.bytes, fd: sockets.ipv6, interface: interface.index) }
                }
            }
        }
    }

    public func stop() {
        sockets.withLock { sockets in
            sockets.watches.forEach { $0.close() }
            sockets.watches = []
            sockets.ipv4 = -1
            sockets.ipv6 = -1
        }
    }

    private func joinIPv4(fd: Int32, interface: (name: String, index: UInt32)) throws(SystemError) {
        let request = ip_mreqn(imr_multiaddr: try Self.ipv4Address(configuration.ipv4Group), imr_address: in_addr(s_addr: INADDR_ANY),
                               imr_ifindex: Int32(interface.index))
        try setOption(fd, Int32(IPPROTO_IP), IP_ADD_MEMBERSHIP, request, "IP_ADD_MEMBERSHIP on \(interface.name)")
    }

    private func joinIPv6(fd: Int32, interface: (name: String, index: UInt32)) throws(SystemError) {
        let request = ipv6_mreq(ipv6mr_multiaddr: try Self.ipv6Address(configuration.ipv6Group), ipv6mr_interface: interface.index)
        try setOption(fd, Int32(IPPROTO_IPV6), IPV6_ADD_MEMBERSHIP, request, "IPV6_ADD_MEMBERSHIP on \(interface.name)")
    }

    /// Follows interfaces that come and go (Wi-Fi connecting after login, a dock):
    /// joins the groups on new ones, forgets vanished ones (only without --interface).
    /// Returns true when an interface, its link state or its addresses changed since
    /// the last call: peers must then learn this host's address again (first contact).
    @discardableResult
    public func refreshInterfaces() -> Bool {
        let addresses = Self.addressFingerprint(named: configuration.interface)
        let changed = sockets.withLock { sockets in
            defer { sockets.addresses = addresses }
            return sockets.addresses != nil && sockets.addresses != addresses
        }
        guard configuration.interface == nil, let current = try? Self.multicastInterfaces(named: nil) else { return changed }
        sockets.withLock { sockets in
            sockets.interfaces.removeAll { old in !current.contains { $0.name == old.name && $0.index == old.index } }
            for interface in current where !sockets.interfaces.contains(where: { $0.name == interface.name && $0.index == interface.index }) {
                var joined = false
                if sockets.ipv4 >= 0, (try? joinIPv4(fd: sockets.ipv4, interface: interface)) != nil { joined = true }
                if sockets.ipv6 >= 0, (try? joinIPv6(fd: sockets.ipv6, interface: interface)) != nil { joined = true }
                if joined { sockets.interfaces.append(interface) }
            }
        }
        return changed
    }

    /// Non-loopback interfaces (or the named one) that are up, have a carrier and an IP
    /// address: none means this host has no network link (cable out, Wi-Fi off).
    public static func linksUp(named wanted: String?) -> [String] {
        InterfaceTable.read().linksUp(named: wanted)
    }

    /// Every non-loopback interface (or the named one) with its running flag and
    /// addresses, sorted: equal strings mean nothing a peer could notice changed.
    static func addressFingerprint(named wanted: String?) -> [String] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return [] }
        defer { freeifaddrs(list) }
        var found: [String] = []
        var cursor = list
        while let entry = cursor {
            cursor = entry.pointee.ifa_next
            let flags = Int32(entry.pointee.ifa_flags)
            let name = String(cString: entry.pointee.ifa_name)
            guard flags & Int32(IFF_LOOPBACK) == 0, wanted == nil || wanted == name else { continue }
            var text = "\(name) up=\(flags & Int32(IFF_UP) != 0) running=\(flags & Int32(IFF_RUNNING) != 0)"
            if let address = entry.pointee.ifa_addr {
                let family = Int32(address.pointee.sa_family)
                if family == AF_INET || family == AF_INET6 {
                    let length = socklen_t(family == AF_INET ? MemoryLayout<sockaddr_in>.size : MemoryLayout<sockaddr_in6>.size)
                    var buffer = [CChar](repeating: 0, count: Int(NI_MAXHOST))
                    if getnameinfo(address, length, &buffer, socklen_t(buffer.count), nil, 0, NI_NUMERICHOST) == 0 {
                        text += " " + String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                    }
                }
            }
            found.append(text)
        }
        return found.sorted()
    }

    // MARK: - IPv4

    private func openIPv4(interfaces: [(name: String, index: UInt32)]) throws(SystemError) -> Int32 {
        let fd = try DatagramSocket.open(family: AF_INET, port: configuration.port, shared: true)
        do throws(SystemError) {
            for interface in interfaces { try joinIPv4(fd: fd, interface: interface) }
            try setOption(fd, Int32(IPPROTO_IP), IP_MULTICAST_TTL, Int32(1), "setsockopt(IP_MULTICAST_TTL)")
            try setOption(fd, Int32(IPPROTO_IP), IP_MULTICAST_LOOP, Int32(0), "setsockopt(IP_MULTICAST_LOOP)")
            return fd
        } catch {
            close(fd)
            throw error
        }
    }

    private func sendIPv4(_ datagram: [UInt8], fd: Int32, interface: UInt32) {
        let choose = ip_mreqn(imr_multiaddr: in_addr(s_addr: INADDR_ANY), imr_address: in_addr(s_addr: INADDR_ANY),
                              imr_ifindex: Int32(interface))
        guard (try? setOption(fd, Int32(IPPROTO_IP), IP_MULTICAST_IF, choose, "IP_MULTICAST_IF")) != nil,
              let group = try? Self.ipv4Address(configuration.ipv4Group) else { return }
        var destination = sockaddr_in()
        destination.sin_family = sa_family_t(AF_INET)
        destination.sin_port = configuration.port.bigEndian
        destination.sin_addr = group
        _ = datagram.withUnsafeBytes { raw in
            withUnsafePointer(to: &destination) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, raw.baseAddress, raw.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
    }

    // MARK: - IPv6

    private func openIPv6(interfaces: [(name: String, index: UInt32)]) throws(SystemError) -> Int32 {
        let fd = try DatagramSocket.open(family: AF_INET6, port: configuration.port, shared: true)
        do throws(SystemError) {
            for interface in interfaces { try joinIPv6(fd: fd, interface: interface) }
            try setOption(fd, Int32(IPPROTO_IPV6), IPV6_MULTICAST_HOPS, Int32(1), "setsockopt(IPV6_MULTICAST_HOPS)")
            try setOption(fd, Int32(IPPROTO_IPV6), IPV6_MULTICAST_LOOP, Int32(0), "setsockopt(IPV6_MULTICAST_LOOP)")
            return fd
        } catch {
            close(fd)
            throw error
        }
    }

    private func sendIPv6(_ datagram: [UInt8], fd: Int32, interface: UInt32) {
        guard let group = try? Self.ipv6Address(configuration.ipv6Group) else { return }
        var destination = sockaddr_in6()
        destination.sin6_family = sa_family_t(AF_INET6)
        destination.sin6_port = configuration.port.bigEndian
        destination.sin6_addr = group
        // The scope id picks the link for a link-local group.
        destination.sin6_scope_id = interface
        _ = datagram.withUnsafeBytes { raw in
            withUnsafePointer(to: &destination) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, raw.baseAddress, raw.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        }
    }

    // MARK: - Helpers

    static func ipv4Address(_ text: String) throws(SystemError) -> in_addr {
        var address = in_addr()
        guard inet_pton(AF_INET, text, &address) == 1 else { throw SystemError("inet_pton(\(text))", errno: EINVAL) }
        return address
    }

    static func ipv6Address(_ text: String) throws(SystemError) -> in6_addr {
        var address = in6_addr()
        guard inet_pton(AF_INET6, text, &address) == 1 else { throw SystemError("inet_pton(\(text))", errno: EINVAL) }
        return address
    }

    /// The named interface, or every interface that is up, multicast-capable and not loopback.
    static func multicastInterfaces(named wanted: String?) throws(HandoffError) -> [(name: String, index: UInt32)] {
        if let wanted {
            let index = if_nametoindex(wanted)
            guard index != 0 else {
                throw HandoffError(.network, "There is no network interface named '\(wanted)'.",
                                   fix: "Pick one from 'ip link' or leave out --interface to use every multicast-capable interface.")
            }
            return [(wanted, index)]
        }
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return [] }
        defer { freeifaddrs(list) }
        var found: [(name: String, index: UInt32)] = []
        var cursor = list
        while let entry = cursor {
            let flags = Int32(entry.pointee.ifa_flags)
            let name = String(cString: entry.pointee.ifa_name)
            if flags & Int32(IFF_UP) != 0, flags & Int32(IFF_MULTICAST) != 0,
               flags & Int32(IFF_LOOPBACK) == 0, !found.contains(where: { $0.name == name }) {
                found.append((name, if_nametoindex(name)))
            }
            cursor = entry.pointee.ifa_next
        }
        // None up yet is not an error: refreshInterfaces() joins them when they come.
        return found
    }
}
