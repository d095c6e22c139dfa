import HandoffCore

/// Seals a signed announcement to one paired peer and opens sealed ones.
/// Every key comes from the pair's seal chain key for the period, K(e)
/// (`SealChain`), under its own context:
///
///     hint     = BLAKE2b-64(key = K(e), "handoff/seal-hint/v3" || sender public key || minute u64)
///     seal key = BLAKE2b-256(key = K(e), "handoff/seal-key/v2" || sender public key)
///     datagram = "HNDF" 2 1 || hint || nonce (24 random bytes)
///                || XChaCha20-Poly1305(seal key, nonce, associated data = the 38 bytes before,
///                                      plaintext = the signed v1 announcement)
///
/// `minute` is floor(unix seconds / 60), inside period e (a period is 15
/// minutes). The hint lets the recipient find the pair with one table lookup
/// (it tables every minute of the periods it accepts); it changes every
/// minute and differs per pair and direction, so to anyone else it is a
/// random number.
public enum AnnouncementSeal {
    static let hintContext = Array("handoff/seal-hint/v3".utf8)
    static let keyContext = Array("handoff/seal-key/v2".utf8)
    public static let minutesPerPeriod: UInt64 = 15

    public static func hint(periodKey: [UInt8], sender: DeviceKey, minute: UInt64) -> [UInt8] {
        var message = ByteWriter()
        message.write(hintContext + sender.bytes)
        message.write(minute)
        return Blake2b.keyed(message.bytes, key: periodKey, outputBytes: SealedAnnouncement.hintBytes)
    }

    /// The minutes of `epoch`, whose hints a recipient tables.
    public static func minutes(of epoch: UInt64) -> ClosedRange<UInt64> {
        let (first, overflow) = epoch.multipliedReportingOverflow(by: minutesPerPeriod)
        return overflow ? 0...0 : first...(first + minutesPerPeriod - 1)
    }

    static func sealKey(periodKey: [UInt8], sender: DeviceKey) -> [UInt8] {
        Blake2b.keyed(keyContext + sender.bytes, key: periodKey)
    }

    public static func seal(_ inner: [UInt8], periodKey: [UInt8], sender: DeviceKey, minute: UInt64,
                            nonce: [UInt8] = Random.bytes(SealedAnnouncement.nonceBytes)) -> [UInt8] {
        let header = SealedAnnouncement.header(hint: hint(periodKey: periodKey, sender: sender, minute: minute), nonce: nonce)
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
