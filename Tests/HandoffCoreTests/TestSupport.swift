import HandoffCore
import HandoffCrypto
import Testing

// Shared by the codec tests: hex literals, a deterministic RNG and the hostile-input corpora.

/// Bytes from hex written in a test; spaces and newlines are ignored so vectors can be laid out by field.
func hex(_ text: String) -> [UInt8] {
    let compact = text.filter { !$0.isWhitespace }
    guard let bytes = Hex.decode(compact) else { preconditionFailure("bad hex literal in a test: \(text)") }
    return bytes
}

/// SplitMix64 (Steele, Lea, Flood 2014): tiny, seedable, and the same on every platform,
/// so a failing garbage input can be reproduced from its seed and index.
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

/// `count` random byte strings of random length up to `maxLength`.
func randomGarbage(seed: UInt64, count: Int = 2000, maxLength: Int = 300) -> [[UInt8]] {
    var rng = SplitMix64(seed: seed)
    return (0..<count).map { _ in rng.bytes(Int.random(in: 0...maxLength, using: &rng)) }
}

/// Near-misses of a valid encoding: random bytes overwritten, cut short, or extended.
/// These get past the magic and version checks, so they reach the deeper parsing paths.
func mutations(of valid: [UInt8], seed: UInt64, count: Int = 2000) -> [[UInt8]] {
    var rng = SplitMix64(seed: seed)
    return (0..<count).map { _ in
        var bytes = valid
        for _ in 0...Int.random(in: 0...3, using: &rng) where !bytes.isEmpty {
            let index = Int.random(in: 0..<bytes.count, using: &rng)
            switch Int.random(in: 0..<4, using: &rng) {
            case 0: bytes[index] = UInt8.random(in: 0...255, using: &rng)
            case 1: bytes[index] ^= 1 << UInt8.random(in: 0...7, using: &rng)
            case 2: bytes.removeSubrange(index...)
            default: bytes.insert(contentsOf: rng.bytes(Int.random(in: 1...8, using: &rng)), at: index)
            }
        }
        return bytes
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

/// The RFC 8032 section 7.1 test 1 key, used for every signed vector.
let rfcSeed = hex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
let rfcPublicKey = hex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
/// The RFC 8032 section 7.1 test 2 key, the second party in transfer vectors.
let rfcSeed2 = hex("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb")
let rfcPublicKey2 = hex("3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c")

func rfcIdentity() -> Identity { try! Identity(seed: rfcSeed) }
func rfcIdentity2() -> Identity { try! Identity(seed: rfcSeed2) }

/// The inputs shared by the activity, summary, announcement and transfer vectors
/// (also written out in Vectors.md).
enum VectorInputs {
    static let timestamp: UInt64 = 1_700_000_000_000
    static let expires: UInt64 = 1_700_000_600_000

    static var activity: Activity {
        Activity(type: "org.example.reader.document", title: "Chapter 1",
                 userInfo: ["page": .integer(42), "font": .double(1.5)],
                 targetContentIdentifier: "document:moby-dick",
                 webpageURL: "https://example.org/moby-dick",
                 expiresAtMillis: expires, sequence: timestamp)
    }

    static let payload = hex("""
        01 1b 6f72672e6578616d706c652e7265616465722e646f63756d656e74
        0009 43686170746572 2031
        07
        0012 646f63756d656e743a6d6f62792d6469636b
        001d 68747470733a2f2f6578616d706c652e6f72672f6d6f62792d6469636b
        0000018bcfee8fc0
        0000018bcfe56800
        09 00000002 0004 666f6e74 03 3ff8000000000000 0004 70616765 02 000000000000002a
        """)

    static let payloadDigest = hex("2c8c27a5487834f63e6f0f7ba5d822ac8b52fdbe39ab20af91d104f3ccfcb951")

    static var summary: Summary {
        Summary(senderKey: DeviceKey(bytes: rfcPublicKey)!, senderName: "alpha",
                activityType: "org.example.reader.document", title: "Chapter 1",
                payloadSize: UInt32(payload.count), payloadDigest: payloadDigest,
                sequence: timestamp, timestampMillis: timestamp, expiresAtMillis: expires)
    }

    static let summaryBody = hex("""
        01
        d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a
        05 616c706861
        1b 6f72672e6578616d706c652e7265616465722e646f63756d656e74
        0009 436861707465722031
        0000008f
        2c8c27a5487834f63e6f0f7ba5d822ac8b52fdbe39ab20af91d104f3ccfcb951
        0000018bcfe56800
        0000018bcfe56800
        0000018bcfee8fc0
        """)

    static let summarySignature = hex("""
        3e78fe458468f6175ef42693d062b28231a0ec1582d039202bdb449231c42b45
        24ddc6c707a608a1b01d43dc710ca4481616215cdfd723e8cf6ef6f1e071b805
        """)

    static var signedSummary: SignedSummary {
        SignedSummary(summary: summary, body: summaryBody, signature: summarySignature)
    }
}
