import HandoffCore

/// Seals a signed announcement to one paired peer and opens sealed ones.
/// Every key comes from the pair's seal chain key for the period, K(e)
/// (`SealChain`), under its own context:
///
///     hint     = BLAKE2b-64(key = K(e), "handoff/seal-hint/v2" || sender public key)
///     seal key = BLAKE2b-256(key = K(e), "handoff/seal-key/v2" || sender public key)
///     datagram = "HNDF" 2 1 || hint || nonce (24 random bytes)
///                || XChaCha20-Poly1305(seal key, nonce, associated data = the 38 bytes before,
///                                      plaintext = the signed v1 announcement)
///
/// The hint lets the recipient find the pair with one table lookup; it changes
/// every period (15 minutes) and differs per pair and direction, so to anyone
/// else it is a random number.
public enum AnnouncementSeal {
    static let hintContext = Array("handoff/seal-hint/v2".utf8)
    static let keyContext = Array("handoff/seal-key/v2".utf8)

    public static func hint(periodKey: [UInt8], sender: DeviceKey) -> [UInt8] {
        Blake2b.keyed(hintContext + sender.bytes, key: periodKey, outputBytes: SealedAnnouncement.hintBytes)
    }

    static func sealKey(periodKey: [UInt8], sender: DeviceKey) -> [UInt8] {
        Blake2b.keyed(keyContext + sender.bytes, key: periodKey)
    }

    public static func seal(_ inner: [UInt8], periodKey: [UInt8], sender: DeviceKey,
                            nonce: [UInt8] = Random.bytes(SealedAnnouncement.nonceBytes)) -> [UInt8] {
        let header = SealedAnnouncement.header(hint: hint(periodKey: periodKey, sender: sender), nonce: nonce)
        var key = sealKey(periodKey: periodKey, sender: sender)
        defer { Sodium.wipe(&key) }
        return header + AEAD.seal(inner, key: key, nonce: nonce, associatedData: header)
    }

    /// The inner signed announcement, or nil if it does not decrypt with the period's key for `sender`.
    public static func open(_ sealed: SealedAnnouncement, periodKey: [UInt8], sender: DeviceKey) -> [UInt8]? {
        var key = sealKey(periodKey: periodKey, sender: sender)
        defer { Sodium.wipe(&key) }
        return AEAD.open(sealed.ciphertext, key: key, nonce: sealed.nonce, associatedData: sealed.header)
    }
}
