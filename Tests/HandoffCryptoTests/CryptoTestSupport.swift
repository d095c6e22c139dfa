import HandoffCore
import HandoffCrypto

// Shared by the crypto tests: hex literals, the RFC keys of the vectors, a
// seedable RNG and bit flips. (HandoffCoreTests has its own copy: test targets
// cannot share files.)

/// Bytes from hex written in a test; spaces and newlines are ignored so vectors can be laid out by field.
func hex(_ text: String) -> [UInt8] {
    let compact = text.filter { !$0.isWhitespace }
    guard let bytes = Hex.decode(compact) else { preconditionFailure("bad hex literal in a test: \(text)") }
    return bytes
}

/// The RFC 8032 section 7.1 test 1 key ("A", the sender, the server of a transfer).
let rfcSeed = hex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
let rfcPublicKey = hex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
/// The RFC 8032 section 7.1 test 2 key ("B", the receiver, the client of a transfer).
let rfcSeed2 = hex("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb")
let rfcPublicKey2 = hex("3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c")

func rfcIdentity() -> Identity { try! Identity(seed: rfcSeed) }
func rfcIdentity2() -> Identity { try! Identity(seed: rfcSeed2) }

/// RFC 7748 section 6.1: the X25519 key pairs of Alice and Bob, and what they share.
enum RFC7748 {
    static let alicePrivate = hex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a")
    static let alicePublic = hex("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a")
    static let bobPrivate = hex("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb")
    static let bobPublic = hex("de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f")
    static let shared = hex("4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742")
}

/// SplitMix64 (Steele, Lea, Flood 2014): seedable and the same on every platform.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func bytes(_ count: Int) -> [UInt8] {
        (0..<count).map { _ in UInt8(truncatingIfNeeded: next()) }
    }
}

/// Every bit of `bytes` flipped in turn.
func singleBitFlips(of bytes: [UInt8]) -> [[UInt8]] {
    var out: [[UInt8]] = []
    out.reserveCapacity(bytes.count * 8)
    for index in bytes.indices {
        for bit in 0..<8 {
            var copy = bytes
            copy[index] ^= 1 << UInt8(bit)
            out.append(copy)
        }
    }
    return out
}
