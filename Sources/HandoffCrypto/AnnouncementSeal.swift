import HandoffCore

/// Seals a signed announcement to one paired peer and opens sealed ones.
///
///     hint  = BLAKE2b-64(key = pair key, "handoff/hint/v1" || sender public key || period u64)
///     datagram = "HNDF" 2 1 || hint || nonce (24 random bytes)
///                || XChaCha20-Poly1305(pair key, nonce, associated data = the 38 bytes before,
///                                      plaintext = the signed v1 announcement)
///
/// The hint lets the recipient find the pair key with one table lookup; it
/// changes every period (15 minutes) and differs per pair and direction, so
/// to anyone else it is a random number.
public enum AnnouncementSeal {
    static let hintContext = Array("handoff/hint/v1".utf8)

    public static func hint(pairKey: [UInt8], sender: DeviceKey, epoch: UInt64) -> [UInt8] {
        var message = ByteWriter()
        message.write(hintContext)
        message.write(sender.bytes)
        message.write(epoch)
        return Blake2b.keyed(message.bytes, key: pairKey, outputBytes: SealedAnnouncement.hintBytes)
    }

    public static func seal(_ inner: [UInt8], pairKey: [UInt8], sender: DeviceKey, epoch: UInt64,
                            nonce: [UInt8] = Random.bytes(SealedAnnouncement.nonceBytes)) -> [UInt8] {
        let hint = hint(pairKey: pairKey, sender: sender, epoch: epoch)
        let header = SealedAnnouncement.header(hint: hint, nonce: nonce)
        return header + AEAD.seal(inner, key: pairKey, nonce: nonce, associatedData: header)
    }

    /// The inner signed announcement, or nil if it does not decrypt with `pairKey`.
    public static func open(_ sealed: SealedAnnouncement, pairKey: [UInt8]) -> [UInt8]? {
        AEAD.open(sealed.ciphertext, key: pairKey, nonce: sealed.nonce, associatedData: sealed.header)
    }
}
