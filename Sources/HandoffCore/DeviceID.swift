/// The short fingerprint people compare: the first 80 bits of BLAKE2b-256 of
/// the public key, in Crockford base32 (no I, L, O, U), grouped 4-4-4-4.
/// The hashing lives in HandoffCrypto; this type only formats and parses.
public struct DeviceID: Hashable, Sendable, CustomStringConvertible, Comparable {
    public static let fingerprintByteCount = 10
    private static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ")

    /// 16 base32 characters, no separators.
    public let compact: String

    public init?(fingerprint: [UInt8]) {
        guard fingerprint.count >= Self.fingerprintByteCount else { return nil }
        var bits: UInt64 = 0
        var bitCount = 0
        var text = ""
        for byte in fingerprint.prefix(Self.fingerprintByteCount) {
            bits = (bits << 8) | UInt64(byte)
            bitCount += 8
            while bitCount >= 5 {
                bitCount -= 5
                text.append(Self.alphabet[Int((bits >> UInt64(bitCount)) & 0x1f)])
            }
        }
        compact = text
    }

    /// Accepts what a person types: any case, dashes or spaces anywhere, and
    /// the letters Crockford maps (O to 0, I and L to 1).
    public init?(parsing text: String) {
        guard let normalized = Self.normalize(text), normalized.count == 16 else { return nil }
        compact = normalized
    }

    /// Normalizes a full or partial id for prefix matching; nil if it holds a character outside the alphabet.
    public static func normalize(_ text: String) -> String? {
        var out = ""
        for char in text.uppercased() {
            switch char {
            case "-", " ": continue
            case "O": out.append("0")
            case "I", "L": out.append("1")
            default:
                guard alphabet.contains(char) else { return nil }
                out.append(char)
            }
        }
        return out
    }

    /// Grouped for reading aloud: `K7QM-2XPA-9D3F-H6RT`.
    public var description: String {
        var groups: [Substring] = []
        var rest = Substring(compact)
        while !rest.isEmpty {
            groups.append(rest.prefix(4))
            rest = rest.dropFirst(4)
        }
        return groups.joined(separator: "-")
    }

    public static func < (lhs: DeviceID, rhs: DeviceID) -> Bool { lhs.compact < rhs.compact }
}
