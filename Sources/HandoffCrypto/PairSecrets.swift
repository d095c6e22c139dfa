import HandoffCore

/// The keys a pair of devices derives from its pair key, one per use, so no
/// key serves two purposes (Docs/SECURITY.md, "Keys"):
///
///     handshake hint key = BLAKE2b-256(key = pair key, "handoff/hs-hint-key/v3")
///     handshake PSK      = BLAKE2b-256(key = pair key, "handoff/hs-psk/v3")
public struct PairSecrets: Sendable, Equatable {
    public let handshakeHintKey: [UInt8]
    public let handshakePSK: [UInt8]

    public init(pairKey: [UInt8]) {
        handshakeHintKey = Blake2b.keyed(Array("handoff/hs-hint-key/v3".utf8), key: pairKey)
        handshakePSK = Blake2b.keyed(Array("handoff/hs-psk/v3".utf8), key: pairKey)
    }
}

/// The one-way chain of per-period keys a pair seals its announcements with.
/// Seeded at pairing from the pairing handshake's ephemeral secret, so the
/// identity keys alone never give it:
///
///     K(first) = BLAKE2b-256(key = handshake exporter key, "handoff/seal-chain/v1")
///     K(e + 1) = BLAKE2b-256(key = K(e), "handoff/seal-chain-step/v1")
///
/// A device keeps only the key of the oldest period it still accepts and
/// overwrites it as periods pass: whoever later steals its state directory can
/// compute the keys of that period and the following ones, never earlier ones.
public struct SealChain: Sendable, Equatable {
    public private(set) var epoch: UInt64
    public private(set) var key: [UInt8]
    /// About 30 years of 15-minute periods: more steps than this means a broken clock or file.
    public static let maximumSteps: UInt64 = 1 << 20
    static let seedContext = Array("handoff/seal-chain/v1".utf8)
    static let stepContext = Array("handoff/seal-chain-step/v1".utf8)

    public init?(epoch: UInt64, key: [UInt8]) {
        guard key.count == AEAD.keyBytes else { return nil }
        self.epoch = epoch
        self.key = key
    }

    public static func seed(exporterKey: [UInt8], epoch: UInt64) -> SealChain {
        SealChain(epoch: epoch, key: Blake2b.keyed(seedContext, key: exporterKey))!
    }

    static func step(_ key: [UInt8]) -> [UInt8] { Blake2b.keyed(stepContext, key: key) }

    /// The key of period `target`; nil for a period before the kept one (erased) or absurdly far ahead.
    public func key(at target: UInt64) -> [UInt8]? {
        guard target >= epoch, target - epoch <= Self.maximumSteps else { return nil }
        var current = key
        for _ in 0..<(target - epoch) { current = Self.step(current) }
        return current
    }

    /// Moves the kept key forward to `target`, forgetting the earlier ones; false if nothing changed.
    public mutating func advance(to target: UInt64) -> Bool {
        guard target > epoch, let next = key(at: target) else { return false }
        Sodium.wipe(&key)
        key = next
        epoch = target
        return true
    }
}
