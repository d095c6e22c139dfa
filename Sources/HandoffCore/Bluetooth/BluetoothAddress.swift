/// A 48-bit Bluetooth device address, kept most significant byte first (as
/// people write it: "C0:11:22:33:44:55"); HCI carries it little-endian.
public struct BluetoothAddress: Hashable, Sendable, CustomStringConvertible {
    public let bytes: [UInt8]

    public init?(bytes: [UInt8]) {
        guard bytes.count == 6 else { return nil }
        self.bytes = bytes
    }

    public init?(littleEndian: [UInt8]) {
        self.init(bytes: littleEndian.reversed())
    }

    public var littleEndianBytes: [UInt8] { bytes.reversed() }

    public var description: String {
        bytes.map { byte in
            let digits = Array("0123456789ABCDEF")
            return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0f)]])
        }.joined(separator: ":")
    }

    /// A non-resolvable private address (Core Vol 6, Part B, 1.3.2.2): the two
    /// top bits 00, the rest random, not all zeros or ones. Derived from the
    /// beacon token so it rotates with it and links nothing across rotations.
    public static func nonResolvablePrivate(from seed: [UInt8]) -> BluetoothAddress {
        var bytes = Array(seed.prefix(6))
        while bytes.count < 6 { bytes.append(0x5A) }
        bytes[0] &= 0x3F
        let rest = bytes[1...].reduce(UInt64(bytes[0])) { $0 << 8 | UInt64($1) }
        if rest == 0 { bytes[5] = 1 }
        if rest == 0x3F_FFFF_FFFF_FF { bytes[5] = 0xFE }
        return BluetoothAddress(bytes: bytes)!
    }
}
