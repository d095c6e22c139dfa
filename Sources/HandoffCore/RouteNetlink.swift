/// The few route netlink messages handoffd reads to tell why a peer cannot be
/// reached (Docs/CONDITIONS.md, "Layer 3 evidence"): a route lookup for the
/// peer's address, the route table's default gateways, and the kernel's
/// neighbour table (ARP for IPv4, neighbour discovery for IPv6). Pure: it
/// encodes requests and decodes replies; the socket is HandoffTransport's.
/// Netlink is in the host's byte order (rtnetlink(7)); the attributes' own
/// values (addresses) are in network order.
public enum RouteNetlink {
    public static let getRoute: UInt16 = 26   // RTM_GETROUTE
    public static let newRoute: UInt16 = 24   // RTM_NEWROUTE
    public static let getNeighbour: UInt16 = 30  // RTM_GETNEIGH
    public static let newNeighbour: UInt16 = 28  // RTM_NEWNEIGH
    public static let error: UInt16 = 2       // NLMSG_ERROR
    public static let done: UInt16 = 3        // NLMSG_DONE
    static let request: UInt16 = 0x1          // NLM_F_REQUEST
    static let dump: UInt16 = 0x300           // NLM_F_ROOT | NLM_F_MATCH

    public static let familyIPv4: UInt8 = 2   // AF_INET
    public static let familyIPv6: UInt8 = 10  // AF_INET6

    /// One message of a reply, its payload after the 16-byte header.
    public struct Message: Sendable, Equatable {
        public var type: UInt16
        public var sequence: UInt32
        public var payload: [UInt8]
    }

    public struct Route: Sendable, Equatable {
        public var family: UInt8
        public var destinationLength: UInt8
        public var table: UInt32
        public var gateway: [UInt8]?
        public var outputInterface: UInt32?
        /// RTNH_F_LINKDOWN: the kernel keeps the route, but its interface has no carrier.
        public var linkDown = false
    }

    public struct Neighbour: Sendable, Equatable {
        public var family: UInt8
        public var interface: UInt32
        public var state: NeighbourState
        public var address: [UInt8]
        /// Centiseconds (USER_HZ) since its link layer last confirmed it; nil when the kernel did not say.
        public var confirmedCentisecondsAgo: UInt32?
        /// Its link-layer address is known: it answered at least once (an entry still being
        /// resolved for the first time has none, and a confirmation time the kernel made up).
        public var hasLinkAddress = false
    }

    // MARK: Requests

    /// A lookup of the route the kernel would use for `address` (RTM_GETROUTE with RTA_DST,
    /// and RTA_OIF for a scoped link-local address). Nothing is sent on the network.
    public static func routeLookup(family: UInt8, address: [UInt8], interface: UInt32?, sequence: UInt32) -> [UInt8] {
        var body: [UInt8] = [family, UInt8(address.count * 8), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
        appendAttribute(&body, type: 1, address)  // RTA_DST
        if let interface { appendAttribute(&body, type: 4, native(interface)) }  // RTA_OIF
        return message(type: getRoute, flags: request, sequence: sequence, body: body)
    }

    /// Every route of one family (for the default gateways).
    public static func routeDump(family: UInt8, sequence: UInt32) -> [UInt8] {
        message(type: getRoute, flags: request | dump, sequence: sequence, body: [family] + [UInt8](repeating: 0, count: 11))
    }

    /// Every neighbour entry of one family.
    public static func neighbourDump(family: UInt8, sequence: UInt32) -> [UInt8] {
        message(type: getNeighbour, flags: request | dump, sequence: sequence, body: [family] + [UInt8](repeating: 0, count: 11))
    }

    // MARK: Replies

    /// Splits one datagram of a reply into messages; a length that runs past the end is an error.
    public static func messages(in datagram: [UInt8]) throws(WireError) -> [Message] {
        var found: [Message] = []
        var offset = 0
        while datagram.count - offset >= 16 {
            let length = Int(readNative32(datagram, offset))
            guard length >= 16, length <= datagram.count - offset else { throw .truncated(needed: length, available: datagram.count - offset) }
            found.append(Message(type: readNative16(datagram, offset + 4), sequence: readNative32(datagram, offset + 8),
                                 payload: Array(datagram[(offset + 16)..<(offset + length)])))
            offset += aligned(length)
        }
        return found
    }

    /// The errno of an NLMSG_ERROR (0: an acknowledgement). The kernel sends -errno; the
    /// negation wraps, so a value no kernel sends (INT32_MIN) stays an error instead of a trap.
    public static func errorNumber(_ message: Message) -> Int32? {
        guard message.type == error, message.payload.count >= 4 else { return nil }
        return 0 &- Int32(bitPattern: readNative32(message.payload, 0))
    }

    public static func route(_ message: Message) -> Route? {
        guard message.type == newRoute, message.payload.count >= 12 else { return nil }
        let p = message.payload
        var route = Route(family: p[0], destinationLength: p[1], table: UInt32(p[4]), gateway: nil, outputInterface: nil,
                          linkDown: readNative32(p, 8) & 0x10 != 0)
        for (type, value) in attributes(p, from: 12) {
            switch type {
            case 4 where value.count == 4: route.outputInterface = readNative32(value, 0)   // RTA_OIF
            case 5 where value.count == 4 || value.count == 16: route.gateway = value       // RTA_GATEWAY
            case 15 where value.count == 4: route.table = readNative32(value, 0)            // RTA_TABLE
            default: break
            }
        }
        return route
    }

    public static func neighbour(_ message: Message) -> Neighbour? {
        guard message.type == newNeighbour, message.payload.count >= 12 else { return nil }
        let p = message.payload
        var address: [UInt8]?
        var confirmed: UInt32?
        var linkAddress = false
        for (type, value) in attributes(p, from: 12) {
            switch type {
            case 1 where value.count == 4 || value.count == 16: address = value   // NDA_DST
            case 2 where !value.isEmpty: linkAddress = true                       // NDA_LLADDR
            case 3 where value.count >= 4: confirmed = readNative32(value, 0)     // NDA_CACHEINFO.ndm_confirmed
            default: break
            }
        }
        guard let address else { return nil }
        return Neighbour(family: p[0], interface: readNative32(p, 4), state: NeighbourState(bits: readNative16(p, 8)),
                         address: address, confirmedCentisecondsAgo: confirmed, hasLinkAddress: linkAddress)
    }

    // MARK: Bytes

    private static func message(type: UInt16, flags: UInt16, sequence: UInt32, body: [UInt8]) -> [UInt8] {
        native(UInt32(16 + body.count)) + native(type) + native(flags) + native(sequence) + native(UInt32(0)) + body
    }

    private static func appendAttribute(_ body: inout [UInt8], type: UInt16, _ value: [UInt8]) {
        body += native(UInt16(4 + value.count)) + native(type) + value
        body += [UInt8](repeating: 0, count: aligned(value.count) - value.count)
    }

    /// (type, value) of each well-formed attribute from `start`; stops at the first malformed one.
    private static func attributes(_ bytes: [UInt8], from start: Int) -> [(UInt16, [UInt8])] {
        var found: [(UInt16, [UInt8])] = []
        var offset = start
        while bytes.count - offset >= 4 {
            let length = Int(readNative16(bytes, offset))
            guard length >= 4, length <= bytes.count - offset else { break }
            found.append((readNative16(bytes, offset + 2) & 0x3fff, Array(bytes[(offset + 4)..<(offset + length)])))
            offset += aligned(length)
        }
        return found
    }

    private static func aligned(_ length: Int) -> Int { (length + 3) & ~3 }

    static func native<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        withUnsafeBytes(of: value) { Array($0) }
    }

    static func readNative16(_ bytes: [UInt8], _ offset: Int) -> UInt16 {
        var value: UInt16 = 0
        withUnsafeMutableBytes(of: &value) { $0.copyBytes(from: bytes[offset..<(offset + 2)]) }
        return value
    }

    static func readNative32(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        var value: UInt32 = 0
        withUnsafeMutableBytes(of: &value) { $0.copyBytes(from: bytes[offset..<(offset + 4)]) }
        return value
    }
}

/// What the kernel's neighbour entry says of an address on the link (the NUD_* bits).
public enum NeighbourState: Sendable, Equatable {
    /// Its link layer answered (REACHABLE, PERMANENT, NOARP), or did before and is not
    /// being asked now (STALE).
    case answered
    /// Being asked right now (INCOMPLETE, DELAY, PROBE): wait for the kernel's verdict.
    case asking
    /// Asked, and no answer came (FAILED).
    case silent
    case none

    public init(bits: UInt16) {
        if bits & 0x20 != 0 { self = .silent }                    // FAILED
        else if bits & (0x01 | 0x08 | 0x10) != 0 { self = .asking } // INCOMPLETE, DELAY, PROBE
        else if bits & (0x02 | 0x04 | 0x40 | 0x80) != 0 { self = .answered } // REACHABLE, STALE, NOARP, PERMANENT
        else { self = .none }
    }
}
