import CSodium
import HandoffCore

/// X25519 for the two key agreements Handoff makes: static-static between
/// paired devices (the pair key, from each device's agreement key) and
/// ephemeral-ephemeral in every transfer handshake (forward secrecy).
public enum X25519 {
    public static let keyBytes = 32

    /// Diffie-Hellman; nil when the result is all zeros (a low-order peer key).
    public static func sharedSecret(secret: [UInt8], publicKey: [UInt8]) -> [UInt8]? {
        guard secret.count == keyBytes, publicKey.count == keyBytes else { return nil }
        var out = [UInt8](repeating: 0, count: keyBytes)
        return crypto_scalarmult(&out, secret, publicKey) == 0 ? out : nil
    }
}

/// A one-use X25519 key pair for a handshake; the secret is wiped on release.
public final class EphemeralKey: @unchecked Sendable {
    // @unchecked Sendable: immutable after init, used by one handshake on one thread.
    public let publicKey: [UInt8]
    private var secret: [UInt8]

    public init() {
        secret = Random.bytes(X25519.keyBytes)
        var publicBytes = [UInt8](repeating: 0, count: X25519.keyBytes)
        crypto_scalarmult_base(&publicBytes, secret)
        publicKey = publicBytes
    }

    /// For test vectors only: a fixed secret.
    public init(secret: [UInt8]) {
        precondition(secret.count == X25519.keyBytes)
        self.secret = secret
        var publicBytes = [UInt8](repeating: 0, count: X25519.keyBytes)
        crypto_scalarmult_base(&publicBytes, secret)
        publicKey = publicBytes
    }

    deinit { Sodium.wipe(&secret) }

    public func sharedSecret(with peer: [UInt8]) -> [UInt8]? {
        X25519.sharedSecret(secret: secret, publicKey: peer)
    }
}

extension Identity {
    /// Static-static key agreement with a paired device, bound to both identities:
    /// BLAKE2b-256(key = X25519(our agreement secret, their agreement key),
    ///             "handoff/pair-key/v2" || lower identity key || higher identity key).
    /// Both sides compute the same root; nobody else can. It is never used
    /// directly: `PairSecrets` derives a key per use from it.
    public func pairKey(with peer: DeviceKey, agreementKey theirs: [UInt8]) -> [UInt8]? {
        var secret = agreementSecret()
        defer { Sodium.wipe(&secret) }
        guard var shared = X25519.sharedSecret(secret: secret, publicKey: theirs) else { return nil }
        defer { Sodium.wipe(&shared) }
        let (low, high) = publicKey.bytes.lexicographicallyPrecedes(peer.bytes)
            ? (publicKey.bytes, peer.bytes) : (peer.bytes, publicKey.bytes)
        return Blake2b.keyed(Array("handoff/pair-key/v2".utf8) + low + high, key: shared)
    }
}

extension Blake2b {
    /// Keyed BLAKE2b (a MAC / KDF), libsodium's crypto_generichash with a key.
    public static func keyed(_ message: [UInt8], key: [UInt8], outputBytes: Int = 32) -> [UInt8] {
        Sodium.ensureReady()
        var out = [UInt8](repeating: 0, count: outputBytes)
        _ = crypto_generichash(&out, outputBytes, message, UInt64(message.count), key, key.count)
        return out
    }
}

/// XChaCha20-Poly1305 (IETF AEAD): seals announcements and handshake messages.
public enum AEAD {
    public static let keyBytes = 32
    public static let nonceBytes = 24
    public static let tagBytes = 16

    public static func seal(_ plaintext: [UInt8], key: [UInt8], nonce: [UInt8], associatedData: [UInt8]) -> [UInt8] {
        precondition(key.count == keyBytes && nonce.count == nonceBytes)
        Sodium.ensureReady()
        var out = [UInt8](repeating: 0, count: plaintext.count + tagBytes)
        var length: UInt64 = 0
        _ = crypto_aead_xchacha20poly1305_ietf_encrypt(&out, &length, plaintext, UInt64(plaintext.count),
                                                       associatedData, UInt64(associatedData.count), nil, nonce, key)
        return out
    }

    /// nil if the ciphertext, nonce or associated data was altered, or the key is wrong.
    public static func open(_ ciphertext: [UInt8], key: [UInt8], nonce: [UInt8], associatedData: [UInt8]) -> [UInt8]? {
        guard key.count == keyBytes, nonce.count == nonceBytes, ciphertext.count >= tagBytes else { return nil }
        Sodium.ensureReady()
        var out = [UInt8](repeating: 0, count: ciphertext.count - tagBytes)
        var length: UInt64 = 0
        let status = crypto_aead_xchacha20poly1305_ietf_decrypt(&out, &length, nil, ciphertext, UInt64(ciphertext.count),
                                                                associatedData, UInt64(associatedData.count), nonce, key)
        return status == 0 ? out : nil
    }
}

/// One direction of libsodium's secretstream (XChaCha20-Poly1305 with an
/// internal counter): every message is authenticated and numbered, so a
/// dropped, reordered, replayed or altered record fails to decrypt. Channels
/// use it through `RecordStream`.
public final class SecretStream: @unchecked Sendable {
    // @unchecked Sendable: each direction of a channel is used by one thread at a time
    // (the channel's reader or its writer), never concurrently.
    public static let headerBytes = 24
    public static let overheadBytes = 17

    private var state = crypto_secretstream_xchacha20poly1305_state()

    private init() {}

    deinit {
        withUnsafeMutableBytes(of: &state) { sodium_memzero($0.baseAddress, $0.count) }
    }

    /// Starts the sending direction; the header goes to the peer first.
    public static func sender(key: [UInt8]) -> (SecretStream, header: [UInt8]) {
        Sodium.ensureReady()
        let stream = SecretStream()
        var header = [UInt8](repeating: 0, count: headerBytes)
        _ = crypto_secretstream_xchacha20poly1305_init_push(&stream.state, &header, key)
        return (stream, header)
    }

    public static func receiver(key: [UInt8], header: [UInt8]) -> SecretStream? {
        guard header.count == headerBytes, key.count == AEAD.keyBytes else { return nil }
        Sodium.ensureReady()
        let stream = SecretStream()
        guard crypto_secretstream_xchacha20poly1305_init_pull(&stream.state, header, key) == 0 else { return nil }
        return stream
    }

    /// Encrypts `plaintext` into `output`, which must hold `plaintext.count + overheadBytes` bytes.
    /// For large transfers: no intermediate arrays.
    public func push(_ plaintext: UnsafeRawBufferPointer, tag: UInt8, into output: UnsafeMutableRawPointer) {
        var length: UInt64 = 0
        _ = crypto_secretstream_xchacha20poly1305_push(&state, output.assumingMemoryBound(to: UInt8.self), &length,
                                                       plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self),
                                                       UInt64(plaintext.count), nil, 0, tag)
    }

    /// Decrypts into `output` (room for `ciphertext.count - overheadBytes` bytes); the tag, or nil if inauthentic.
    public func pull(_ ciphertext: UnsafeRawBufferPointer, into output: UnsafeMutableRawPointer) -> UInt8? {
        guard ciphertext.count >= Self.overheadBytes else { return nil }
        var length: UInt64 = 0
        var tag: UInt8 = 0
        let status = crypto_secretstream_xchacha20poly1305_pull(&state, output.assumingMemoryBound(to: UInt8.self), &length, &tag,
                                                                ciphertext.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                                                UInt64(ciphertext.count), nil, 0)
        return status == 0 ? tag : nil
    }
}
