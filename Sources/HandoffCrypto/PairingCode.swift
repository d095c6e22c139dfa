import HandoffCore

/// Numeric comparison, as Bluetooth pairing does it: the responder commits to
/// its nonce before seeing the initiator's, so a man in the middle running two
/// handshakes cannot steer the two codes to match (1 chance in a million).
///
///     commitment = BLAKE2b-256("handoff/pair-commit/v1" || responder nonce)
///     code       = u32(BLAKE2b-256("handoff/pair-code/v2" || transcript hash
///                                  || initiator key || responder key
///                                  || initiator nonce || responder nonce)[0..<4]) mod 1 000 000
///
/// Both identity keys are hashed in explicitly: equal codes mean both screens
/// saw the same two keys, not only the same transcript.
public enum PairingCode {
    public static func commitment(to nonce: [UInt8]) -> [UInt8] {
        Blake2b.digest(Array("handoff/pair-commit/v1".utf8) + nonce)
    }

    /// Six digits, e.g. "042917".
    public static func code(transcriptHash: [UInt8], initiator: DeviceKey, responder: DeviceKey,
                            initiatorNonce: [UInt8], responderNonce: [UInt8]) -> String {
        let digest = Blake2b.digest(Array("handoff/pair-code/v2".utf8) + transcriptHash + initiator.bytes + responder.bytes
                                    + initiatorNonce + responderNonce)
        let value = digest[0..<4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } % 1_000_000
        let digits = String(value)
        return String(repeating: "0", count: 6 - digits.count) + digits
    }
}
