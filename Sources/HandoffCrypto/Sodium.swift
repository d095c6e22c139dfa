import CSodium
import HandoffCore

/// libsodium needs one initialisation before use; Swift runs a global's
/// initialiser exactly once, thread-safely, which is what sodium_init wants.
private let sodiumReady: Bool = sodium_init() >= 0

enum Sodium {
    static func ensureReady() {
        precondition(sodiumReady, "libsodium failed to initialise")
    }

    static func randomBytes(_ count: Int) -> [UInt8] {
        ensureReady()
        var bytes = [UInt8](repeating: 0, count: count)
        randombytes_buf(&bytes, count)
        return bytes
    }

    /// Overwrites secret bytes so they do not linger in freed memory.
    static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { sodium_memzero($0.baseAddress, $0.count) }
    }
}

public enum Random {
    public static func bytes(_ count: Int) -> [UInt8] { Sodium.randomBytes(count) }
}

/// BLAKE2b (libsodium's crypto_generichash).
public enum Blake2b {
    public static func digest(_ message: [UInt8], outputBytes: Int = 32) -> [UInt8] {
        Sodium.ensureReady()
        var out = [UInt8](repeating: 0, count: outputBytes)
        _ = crypto_generichash(&out, outputBytes, message, UInt64(message.count), nil, 0)
        return out
    }

    /// BLAKE2b over bytes that arrive in pieces (crypto_generichash init/update/final):
    /// a payload is hashed record by record as it is received, never as one buffer at the end.
    /// Used by one thread at a time; the state lives in memory aligned as libsodium requires.
    public final class Hasher: @unchecked Sendable {
        // Swift does not import the 64-byte-aligned state struct: libsodium's calls take it opaquely.
        private let memory: UnsafeMutableRawPointer
        private var state: OpaquePointer { OpaquePointer(memory) }
        private let outputBytes: Int
        private var finished = false

        public init(outputBytes: Int = 32) {
            Sodium.ensureReady()
            self.outputBytes = outputBytes
            memory = UnsafeMutableRawPointer.allocate(byteCount: crypto_generichash_statebytes(), alignment: 64)
            _ = crypto_generichash_init(state, nil, 0, outputBytes)
        }

        deinit {
            sodium_memzero(memory, crypto_generichash_statebytes())
            memory.deallocate()
        }

        public func update(_ bytes: UnsafeRawBufferPointer) {
            precondition(!finished, "a finished hasher takes no more bytes")
            guard let base = bytes.baseAddress, bytes.count > 0 else { return }
            _ = crypto_generichash_update(state, base.assumingMemoryBound(to: UInt8.self), UInt64(bytes.count))
        }

        public func update(_ bytes: [UInt8]) { bytes.withUnsafeBytes { update($0) } }

        /// The digest; the hasher takes nothing after it.
        public func finish() -> [UInt8] {
            precondition(!finished, "a hasher finishes once")
            finished = true
            var out = [UInt8](repeating: 0, count: outputBytes)
            _ = crypto_generichash_final(state, &out, outputBytes)
            return out
        }
    }
}

/// Constant-time comparison, for digests and tags.
public func constantTimeEqual(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
    guard lhs.count == rhs.count else { return false }
    Sodium.ensureReady()
    return sodium_memcmp(lhs, rhs, lhs.count) == 0
}

/// Overwrites a secret the caller is done with (libsodium's sodium_memzero, which the compiler cannot drop).
public func wipe(_ bytes: inout [UInt8]) { Sodium.wipe(&bytes) }
