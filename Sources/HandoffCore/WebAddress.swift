import FoundationEssentials
import Glibc

/// What a web page's address says about where it goes, read as a browser
/// reads it (WHATWG URL: hosts lowercased, IPv4 in any of its spellings,
/// bracketed IPv6), so a peer cannot send this host's browser to its own
/// loopback services or hide a look-alike host behind a user name. Pure.
public enum WebAddress {
    /// The authority's host, lowercased, without brackets or a trailing dot; nil when the text
    /// has no authority.
    public static func host(of text: String) -> String? {
        guard let start = text.firstRange(of: "://") else { return nil }
        let rest = text[start.upperBound...]
        let authority = rest.prefix { !"/?#".contains($0) }
        let hostAndPort = authority.split(separator: "@", omittingEmptySubsequences: false).last.map(String.init) ?? ""
        var host: String
        if hostAndPort.hasPrefix("["), let close = hostAndPort.firstIndex(of: "]") {
            host = String(hostAndPort[hostAndPort.index(after: hostAndPort.startIndex)..<close])
        } else {
            host = String(hostAndPort.prefix { $0 != ":" })
        }
        host = host.lowercased()
        while host.hasSuffix(".") { host.removeLast() }
        return host
    }

    /// Why a peer's web page address is refused, or nil when it may open.
    public static func refusal(_ text: String) -> String? {
        guard let start = text.firstRange(of: "://") else { return "it has no host" }
        // A backslash is a slash to a browser: "http://evil\@bank" must not hide "evil".
        if text.contains("\\") { return "it contains a backslash" }
        let authority = text[start.upperBound...].prefix { !"/?#".contains($0) }
        if authority.contains("@") { return "it carries a user name before its host, which can disguise the host" }
        guard let host = host(of: text), !host.isEmpty else { return "it has no host" }
        if isLoopback(host) { return "it points at this computer itself (\(host))" }
        return nil
    }

    /// localhost and its subdomains, 127.0.0.0/8 and 0.0.0.0/8 in any IPv4 spelling, ::1, ::,
    /// and IPv4-mapped forms of those.
    public static func isLoopback(_ host: String) -> Bool {
        if host == "localhost" || host.hasSuffix(".localhost") { return true }
        if let address = ipv4(host) { return address >> 24 == 127 || address >> 24 == 0 }
        var bytes = [UInt8](repeating: 0, count: 16)
        let plain = host.split(separator: "%").first.map(String.init) ?? host
        guard inet_pton(AF_INET6, plain, &bytes) == 1 else { return false }
        if bytes[0..<15].allSatisfy({ $0 == 0 }) && (bytes[15] == 1 || bytes[15] == 0) { return true }
        let mapped = bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF
        let compatible = bytes[0..<12].allSatisfy { $0 == 0 }
        return (mapped || compatible) && (bytes[12] == 127 || bytes[12] == 0)
    }

    /// A host as the WHATWG IPv4 parser reads it: one to four parts, each decimal, 0x hex or
    /// 0-led octal, the last filling the remaining bytes ("2130706433", "0x7f.1", "127.1").
    public static func ipv4(_ host: String) -> UInt32? {
        var parts = host.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        if parts.last == "" { parts.removeLast() }
        guard (1...4).contains(parts.count) else { return nil }
        var numbers: [UInt64] = []
        for part in parts {
            guard !part.isEmpty else { return nil }
            let lower = part.lowercased()
            let value: UInt64?
            if lower.hasPrefix("0x") {
                value = lower.count == 2 ? 0 : UInt64(lower.dropFirst(2), radix: 16)
            } else if lower.count > 1, lower.hasPrefix("0") {
                value = UInt64(lower.dropFirst(), radix: 8)
            } else {
                value = UInt64(lower, radix: 10)
            }
            guard let value, value <= UInt64(UInt32.max) else { return nil }
            numbers.append(value)
        }
        guard numbers.dropLast().allSatisfy({ $0 <= 255 }) else { return nil }
        let last = numbers.last!
        guard last < UInt64(1) << (8 * (5 - numbers.count)) else { return nil }
        var address = last
        for (index, number) in numbers.dropLast().enumerated() { address += number << (8 * (3 - index)) }
        return UInt32(address)
    }

    /// The host to show wherever an offer is shown: ASCII as it is, else its punycode
    /// form ("xn--..."), so a look-alike in another script cannot pass for a familiar name.
    public static func displayHost(of text: String) -> String? {
        guard let host = host(of: text) else { return nil }
        return host.split(separator: ".", omittingEmptySubsequences: false)
            .map { label in label.unicodeScalars.allSatisfy(\.isASCII) ? String(label) : "xn--" + Punycode.encode(String(label)) }
            .joined(separator: ".")
    }
}

/// RFC 3492 Punycode encoding of one label's code points (no IDNA mapping: for display only).
enum Punycode {
    static func encode(_ label: String) -> String {
        let input = label.unicodeScalars.map(\.value)
        var output = input.filter { $0 < 0x80 }.map { Character(Unicode.Scalar($0)!) }.map(String.init).joined()
        let basic = output.unicodeScalars.count
        var handled = basic
        if basic > 0 { output += "-" }
        var n: UInt32 = 0x80, delta: UInt32 = 0, bias: UInt32 = 72
        func digit(_ d: UInt32) -> Character { Character(Unicode.Scalar(d < 26 ? d + 97 : d + 22)!) }
        func adapt(_ delta: UInt32, _ count: UInt32, _ first: Bool) -> UInt32 {
            var delta = first ? delta / 700 : delta / 2
            delta += delta / count
            var k: UInt32 = 0
            while delta > 455 { delta /= 35; k += 36 }
            return k + 36 * delta / (delta + 38)
        }
        while handled < input.count {
            guard let m = input.filter({ $0 >= n }).min() else { break }
            let (product, overflow) = (m - n).multipliedReportingOverflow(by: UInt32(handled + 1))
            guard !overflow else { return label }
            delta &+= product
            n = m
            for c in input {
                if c < n { delta &+= 1 }
                if c == n {
                    var q = delta, k: UInt32 = 36
                    while true {
                        let t = k <= bias ? 1 : (k >= bias + 26 ? 26 : k - bias)
                        if q < t { break }
                        output.append(digit(t + (q - t) % (36 - t)))
                        q = (q - t) / (36 - t)
                        k += 36
                    }
                    output.append(digit(q))
                    bias = adapt(delta, UInt32(handled + 1), handled == basic)
                    delta = 0
                    handled += 1
                }
            }
            delta &+= 1
            n += 1
        }
        return output
    }
}
