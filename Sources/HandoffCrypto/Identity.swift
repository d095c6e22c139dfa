import CSodium
import HandoffCore

/// This device's Ed25519 key pair. The secret never leaves this type.
public final class Identity: MessageSigning, @unchecked Sendable {
    public static let seedBytes = 32
    public let publicKey: DeviceKey
    /// The static X25519 public key paired devices agree keys with (`agreementSecret()`).
    public let agreementKey: [UInt8]
    // @unchecked Sendable: written once in init, only read afterwards (by libsodium), wiped and freed in
    // deinit: sharing the class across threads is therefore safe. A raw buffer
    // rather than an array so that no copy of the secret escapes the wipe.
    private let secretKey: UnsafeMutableBufferPointer<UInt8>

    /// A fresh key pair from libsodium's CSPRNG.
    public convenience init() {
        var seed = Random.bytes(Self.seedBytes)
        try! self.init(seed: seed)
        Sodium.wipe(&seed)
    }

    /// Derives the key pair from a 32-byte seed (what the identity file stores).
    public init(seed: [UInt8]) throws(HandoffError) {
        guard seed.count == Self.seedBytes else {
            throw HandoffError(.identity, "The identity seed must be \(Self.seedBytes) bytes, found \(seed.count).",
                               fix: "Restore the identity file from a backup, or move it away to create a new identity (peers must trust the new one).")
        }
        Sodium.ensureReady()
        var publicBytes = [UInt8](repeating: 0, count: Int(crypto_sign_PUBLICKEYBYTES))
        var secretBytes = [UInt8](repeating: 0, count: Int(crypto_sign_SECRETKEYBYTES))
        _ = crypto_sign_seed_keypair(&publicBytes, &secretBytes, seed)
        publicKey = DeviceKey(bytes: publicBytes)!
        secretKey = .allocate(capacity: secretBytes.count)
        _ = secretKey.initialize(from: secretBytes)
        Sodium.wipe(&secretBytes)
        var agreement = Self.derive(Self.agreementContext, seed: seed)
        defer { Sodium.wipe(&agreement) }
        var agreementPublic = [UInt8](repeating: 0, count: X25519.keyBytes)
        crypto_scalarmult_base(&agreementPublic, agreement)
        agreementKey = agreementPublic
    }

    deinit {
        sodium_memzero(secretKey.baseAddress, secretKey.count)
        secretKey.deallocate()
    }

    /// The seed is the first half of libsodium's 64-byte secret key.
    public var seed: [UInt8] { Array(secretKey[0..<Self.seedBytes]) }

    public var deviceID: DeviceID { Ed25519.deviceID(of: publicKey) }

    static let agreementContext = Array("handoff/x25519-static/v1".utf8)
    static let discoveryContext = Array("handoff/discovery-secret/v1".utf8)

    /// A key of its own derived from the seed: one secret to keep (the identity
    /// file), yet the signing key is never reused for Diffie-Hellman.
    private static func derive(_ context: [UInt8], seed: [UInt8]) -> [UInt8] {
        Blake2b.keyed(context, key: seed)
    }

    private func derive(_ context: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        _ = crypto_generichash(&out, out.count, context, UInt64(context.count), secretKey.baseAddress, Self.seedBytes)
        return out
    }

    /// The static X25519 secret for key agreement with paired devices (Docs/SECURITY.md, "Keys").
    /// Derived on each use so that only the seed stays in memory.
    func agreementSecret() -> [UInt8] { derive(Self.agreementContext) }

    /// The secret this device's discovery tokens are keyed with; only paired devices receive it.
    public func discoverySecret() -> [UInt8] { derive(Self.discoveryContext) }

    public func signature(for message: [UInt8]) -> [UInt8] {
        var signature = [UInt8](repeating: 0, count: Int(crypto_sign_BYTES))
        _ = crypto_sign_detached(&signature, nil, message, UInt64(message.count), secretKey.baseAddress!)
        return signature
    }
}

/// Ed25519 verification and fingerprints.
public struct Ed25519: SignatureVerifying {
    public init() { Sodium.ensureReady() }

    public func isValid(signature: [UInt8], message: [UInt8], key: DeviceKey) -> Bool {
        guard signature.count == Int(crypto_sign_BYTES) else { return false }
        return crypto_sign_verify_detached(signature, message, UInt64(message.count), key.bytes) == 0
    }

    /// The device id people compare: BLAKE2b-256 of the public key, shortened by DeviceID.
    public static func deviceID(of key: DeviceKey) -> DeviceID {
        DeviceID(fingerprint: Blake2b.digest(Array("handoff/device-id/v1".utf8) + key.bytes))!
    }
}
