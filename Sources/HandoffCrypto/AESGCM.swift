import CCrypto
import CSodium

/// AES-256-GCM under one key, with 96-bit nonces, from a vetted library only: OpenSSL 3's EVP
/// interface (the records' engine: AES-NI and VAES where the CPU has them) or libsodium's
/// (AES-NI). Both are standard GCM, so either end of a channel opens what the other sealed.
/// Offered only where the CPU has AES and carry-less multiply instructions; elsewhere the
/// records use XChaCha20-Poly1305 (`RecordCiphers.available`).
public final class AESGCM: @unchecked Sendable {
    // @unchecked Sendable: each instance is used by one thread at a time (a channel direction's
    // reader or writer); the contexts are written in init and by each call, never concurrently.
    public enum Engine: Sendable, CustomStringConvertible {
        case openssl, sodium

        public var description: String {
            switch self {
            case .openssl: "OpenSSL"
            case .sodium: "libsodium"
            }
        }
    }

    public static let keyBytes = 32
    public static let nonceBytes = 12
    public static let tagBytes = 16
    /// NIST SP 800-38D: at most 2^39 - 256 bits in one message.
    public static let maximumMessageBytes = (1 << 36) - 32

    /// What this CPU runs, the records' engine first; empty without AES-NI and PCLMULQDQ
    /// (libsodium's check of the CPU, which is also where OpenSSL would fall back to tables).
    public static let engines: [Engine] = {
        Sodium.ensureReady()
        return crypto_aead_aes256gcm_is_available() == 1 ? [.openssl, .sodium] : []
    }()

    public let engine: Engine
    private let sealing: OpaquePointer?
    private let opening: OpaquePointer?
    private let sodiumState: UnsafeMutableRawPointer?

    /// Nil when `engine` does not run on this CPU or the library refuses the key.
    public init?(key: [UInt8], engine: Engine? = nil) {
        guard key.count == Self.keyBytes, let engine = engine ?? Self.engines.first, Self.engines.contains(engine) else { return nil }
        self.engine = engine
        switch engine {
        case .openssl:
            guard let sealing = EVP_CIPHER_CTX_new() else { return nil }
            guard let opening = EVP_CIPHER_CTX_new() else {
                EVP_CIPHER_CTX_free(sealing)
                return nil
            }
            self.sealing = sealing
            self.opening = opening
            sodiumState = nil
            guard EVP_EncryptInit_ex(sealing, EVP_aes_256_gcm(), nil, key, nil) == 1,
                  EVP_DecryptInit_ex(opening, EVP_aes_256_gcm(), nil, key, nil) == 1 else { return nil }
        case .sodium:
            sealing = nil
            opening = nil
            let state = UnsafeMutableRawPointer.allocate(byteCount: crypto_aead_aes256gcm_statebytes(), alignment: 16)
            sodiumState = state
            _ = crypto_aead_aes256gcm_beforenm(state.assumingMemoryBound(to: crypto_aead_aes256gcm_state.self), key)
        }
    }

    deinit {
        // EVP_CIPHER_CTX_free cleanses the key schedule before it frees it.
        EVP_CIPHER_CTX_free(sealing)
        EVP_CIPHER_CTX_free(opening)
        if let sodiumState {
            sodium_memzero(sodiumState, crypto_aead_aes256gcm_statebytes())
            sodiumState.deallocate()
        }
    }

    /// An empty buffer may have no address; the libraries read none of its bytes.
    private static func bytes(_ buffer: UnsafeRawBufferPointer) -> UnsafePointer<UInt8> {
        buffer.baseAddress.map { $0.assumingMemoryBound(to: UInt8.self) } ?? UnsafePointer(bitPattern: 1)!
    }

    private static func withinLimits(_ message: Int, associated: Int) -> Bool {
        message <= maximumMessageBytes && message <= Int(Int32.max) && associated <= Int(Int32.max)
    }

    /// Writes `plaintext.count` bytes of ciphertext at `output` (which may be the plaintext's
    /// own bytes) and the tag at `tag`; false, and nothing to send, past GCM's message limit.
    @discardableResult
    public func seal(_ plaintext: UnsafeRawBufferPointer, associated: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer,
                     into output: UnsafeMutableRawPointer, tag: UnsafeMutableRawPointer) -> Bool {
        precondition(nonce.count == Self.nonceBytes)
        guard Self.withinLimits(plaintext.count, associated: associated.count) else { return false }
        let input = Self.bytes(plaintext)
        let associatedBytes = Self.bytes(associated)
        let nonceBytes = nonce.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let out = output.assumingMemoryBound(to: UInt8.self)
        if let sealing {
            var written: Int32 = 0
            return EVP_EncryptInit_ex(sealing, nil, nil, nil, nonceBytes) == 1
                && EVP_EncryptUpdate(sealing, nil, &written, associatedBytes, Int32(associated.count)) == 1
                && EVP_EncryptUpdate(sealing, out, &written, input, Int32(plaintext.count)) == 1
                && EVP_EncryptFinal_ex(sealing, out + Int(written), &written) == 1
                && EVP_CIPHER_CTX_ctrl(sealing, EVP_CTRL_GCM_GET_TAG, Int32(Self.tagBytes), tag) == 1
        }
        return crypto_aead_aes256gcm_encrypt_detached_afternm(out, tag.assumingMemoryBound(to: UInt8.self), nil, input, UInt64(plaintext.count),
                                                              associatedBytes, UInt64(associated.count), nil, nonceBytes,
                                                              sodiumState!.assumingMemoryBound(to: crypto_aead_aes256gcm_state.self)) == 0
    }

    /// Writes the plaintext at `output` and returns true when `tag` is authentic; false, and
    /// `output` zeroed, when it is not.
    public func open(_ ciphertext: UnsafeRawBufferPointer, tag: UnsafeRawBufferPointer, associated: UnsafeRawBufferPointer,
                     nonce: UnsafeRawBufferPointer, into output: UnsafeMutableRawPointer) -> Bool {
        precondition(nonce.count == Self.nonceBytes)
        guard tag.count == Self.tagBytes, Self.withinLimits(ciphertext.count, associated: associated.count) else { return false }
        let input = Self.bytes(ciphertext)
        let associatedBytes = Self.bytes(associated)
        let nonceBytes = nonce.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let out = output.assumingMemoryBound(to: UInt8.self)
        guard let opening else {
            return crypto_aead_aes256gcm_decrypt_detached_afternm(out, nil, input, UInt64(ciphertext.count), Self.bytes(tag), associatedBytes,
                                                                   UInt64(associated.count), nonceBytes,
                                                                   sodiumState!.assumingMemoryBound(to: crypto_aead_aes256gcm_state.self)) == 0
        }
        // EVP writes the plaintext before it checks the tag (it copies the tag it is given):
        // a refused record's bytes are wiped.
        var written: Int32 = 0
        let authentic = EVP_DecryptInit_ex(opening, nil, nil, nil, nonceBytes) == 1
            && EVP_DecryptUpdate(opening, nil, &written, associatedBytes, Int32(associated.count)) == 1
            && EVP_DecryptUpdate(opening, out, &written, input, Int32(ciphertext.count)) == 1
            && EVP_CIPHER_CTX_ctrl(opening, EVP_CTRL_GCM_SET_TAG, Int32(Self.tagBytes), UnsafeMutableRawPointer(mutating: tag.baseAddress!)) == 1
            && EVP_DecryptFinal_ex(opening, out + Int(written), &written) == 1
        if !authentic { sodium_memzero(output, ciphertext.count) }
        return authentic
    }
}
