/// An Ed25519 public key: the identity of a device.
public struct DeviceKey: Hashable, Sendable, CustomStringConvertible {
    public static let byteCount = 32
    public let bytes: [UInt8]

    public init?(bytes: [UInt8]) {
        guard bytes.count == Self.byteCount else { return nil }
        self.bytes = bytes
    }

    public init?(hex: String) {
        guard let raw = Hex.decode(hex) else { return nil }
        self.init(bytes: raw)
    }

    public var hex: String { Hex.encode(bytes) }
    public var description: String { hex }
}

/// Signs with this device's secret key. Implemented over libsodium in HandoffCrypto.
public protocol MessageSigning: Sendable {
    var publicKey: DeviceKey { get }
    func signature(for message: [UInt8]) -> [UInt8]
}

/// Checks Ed25519 signatures. Implemented over libsodium in HandoffCrypto.
public protocol SignatureVerifying: Sendable {
    func isValid(signature: [UInt8], message: [UInt8], key: DeviceKey) -> Bool
}

public enum SignatureSize {
    public static let ed25519 = 64
}

/// Domain-separation prefixes: a signature made for one message kind never
/// verifies as another.
public enum SigningContext {
    public static let summary = Array("handoff/summary/v1".utf8)
    public static let announcement = Array("handoff/announce/v1".utf8)
}

public enum Hex {
    public static func encode(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    public static func decode(_ text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 2 == 0 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count / 2)
        var index = 0
        while index < chars.count {
            guard let high = nibble(chars[index]), let low = nibble(chars[index + 1]) else { return nil }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }
}
