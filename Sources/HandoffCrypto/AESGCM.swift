import CAESGCM
import CSodium

/// AES-256-GCM under one key, with 96-bit nonces. Two implementations of the same standard
/// cipher: `vector` (Sources/CAESGCM: VAES and VPCLMULQDQ, two blocks an instruction) where the
/// CPU has those instructions, else libsodium's (AES-NI, one block). Either end of a channel
/// opens what the other sealed, whichever each runs.
public final class AESGCM: @unchecked Sendable {
    // @unchecked Sendable: the key schedule is written once in init and only read after.
    public enum Engine: Sendable, CustomStringConvertible {
        case vector, sodium

        public var description: String {
            switch self {
            case .vector: "VAES"
            case .sodium: "libsodium"
            }
        }
    }

    public static let keyBytes = 32
    public static let nonceBytes = 12
    public static let tagBytes = 16

    /// What this CPU runs, fastest first; empty without AES-NI.
    public static let engines: [Engine] = {
        Sodium.ensureReady()
        guard crypto_aead_aes256gcm_is_available() == 1 else { return [] }
        return handoff_aesgcm_available() == 1 ? [.vector, .sodium] : [.sodium]
    }()

    public let engine: Engine
    private let state: UnsafeMutableRawPointer
    private let stateBytes: Int

    /// Nil when `engine` does not run on this CPU.
    public init?(key: [UInt8], engine: Engine? = nil) {
        guard key.count == Self.keyBytes, let engine = engine ?? Self.engines.first, Self.engines.contains(engine) else { return nil }
        self.engine = engine
        switch engine {
        case .vector:
            stateBytes = handoff_aesgcm_context_bytes()
            state = .allocate(byteCount: stateBytes, alignment: handoff_aesgcm_context_alignment())
            handoff_aesgcm_init(OpaquePointer(state), key)
        case .sodium:
            stateBytes = crypto_aead_aes256gcm_statebytes()
            state = .allocate(byteCount: stateBytes, alignment: 16)
            _ = crypto_aead_aes256gcm_beforenm(state.assumingMemoryBound(to: crypto_aead_aes256gcm_state.self), key)
        }
    }

    deinit {
        sodium_memzero(state, stateBytes)
        state.deallocate()
    }

    /// An empty buffer may have no address; the C code reads none of its bytes.
    private static func bytes(_ buffer: UnsafeRawBufferPointer) -> UnsafePointer<UInt8> {
        buffer.baseAddress.map { $0.assumingMemoryBound(to: UInt8.self) } ?? UnsafePointer(bitPattern: 1)!
    }

    /// Writes `plaintext.count` bytes of ciphertext at `output` (which may be the plaintext's
    /// own bytes) and the tag at `tag`.
    public func seal(_ plaintext: UnsafeRawBufferPointer, associated: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer,
                     into output: UnsafeMutableRawPointer, tag: UnsafeMutableRawPointer) {
        precondition(nonce.count == Self.nonceBytes)
        let input = Self.bytes(plaintext)
        let associatedBytes = Self.bytes(associated)
        let nonceBytes = nonce.baseAddress!.assumingMemoryBound(to: UInt8.self)
        switch engine {
        case .vector:
            handoff_aesgcm_seal(OpaquePointer(state), output.assumingMemoryBound(to: UInt8.self), tag.assumingMemoryBound(to: UInt8.self),
                                input, plaintext.count, associatedBytes, associated.count, nonceBytes)
        case .sodium:
            _ = crypto_aead_aes256gcm_encrypt_detached_afternm(output.assumingMemoryBound(to: UInt8.self), tag.assumingMemoryBound(to: UInt8.self),
                                                                nil, input, UInt64(plaintext.count), associatedBytes, UInt64(associated.count),
                                                                nil, nonceBytes, state.assumingMemoryBound(to: crypto_aead_aes256gcm_state.self))
        }
    }

    /// Writes the plaintext at `output` and returns true when `tag` is authentic; false, and
    /// nothing of the plaintext, when it is not.
    public func open(_ ciphertext: UnsafeRawBufferPointer, tag: UnsafeRawBufferPointer, associated: UnsafeRawBufferPointer,
                     nonce: UnsafeRawBufferPointer, into output: UnsafeMutableRawPointer) -> Bool {
        precondition(nonce.count == Self.nonceBytes)
        guard tag.count == Self.tagBytes else { return false }
        let input = Self.bytes(ciphertext)
        let tagBytes = Self.bytes(tag)
        let associatedBytes = Self.bytes(associated)
        let nonceBytes = nonce.baseAddress!.assumingMemoryBound(to: UInt8.self)
        switch engine {
        case .vector:
            return handoff_aesgcm_open(OpaquePointer(state), output.assumingMemoryBound(to: UInt8.self), input, ciphertext.count,
                                       tagBytes, associatedBytes, associated.count, nonceBytes) == 0
        case .sodium:
            return crypto_aead_aes256gcm_decrypt_detached_afternm(output.assumingMemoryBound(to: UInt8.self), nil, input,
                                                                   UInt64(ciphertext.count), tagBytes, associatedBytes,
                                                                   UInt64(associated.count), nonceBytes,
                                                                   state.assumingMemoryBound(to: crypto_aead_aes256gcm_state.self)) == 0
        }
    }
}
