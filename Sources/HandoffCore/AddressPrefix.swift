import Glibc

/// The network an address belongs to, as far as a bound on "one source" goes: its IPv4 /24 or
/// its IPv6 /64 (IPv4-mapped addresses count as IPv4; a zone is part of a link-local prefix).
/// IPv4 link-local (169.254/16) is one network: every address in it is on the link.
/// One host easily has many addresses in one such network (IPv6 privacy addresses, aliases),
/// seldom in many.
public enum AddressPrefix {
    /// "192.168.1/24", "2001:db8:0:1/64", "fe80:0:0:0/64%eth0"; nil for something that is not a numeric address.
    public static func of(_ host: String) -> String? {
        let parts = host.split(separator: "%", maxSplits: 1)
        guard let plain = parts.first.map(String.init) else { return nil }
        let zone = parts.count == 2 ? "%" + parts[1] : ""
        var v4 = in_addr()
        if inet_pton(AF_INET, plain, &v4) == 1 {
            return ipv4Prefix(UInt32(bigEndian: v4.s_addr))
        }
        var bytes = [UInt8](repeating: 0, count: 16)
        guard inet_pton(AF_INET6, plain, &bytes) == 1 else { return nil }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
            return ipv4Prefix(bytes[12...15].reduce(0) { $0 << 8 | UInt32($1) })
        }
        let groups = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
        return groups.joined(separator: ":") + "/64" + (bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80 ? zone : "")
    }

    private static func ipv4Prefix(_ address: UInt32) -> String {
        if address >> 16 == 0xA9FE { return "169.254/16" }
        return "\(address >> 24).\(address >> 16 & 0xFF).\(address >> 8 & 0xFF)/24"
    }
}
