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
}

/// Constant-time comparison, for digests and tags.
public func constantTimeEqual(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
    guard lhs.count == rhs.count else { return false }
    Sodium.ensureReady()
    return sodium_memcmp(lhs, rhs, lhs.count) == 0
}

/// Overwrites a secret the caller is done with (libsodium's sodium_memzero, which the compiler cannot drop).
public func wipe(_ bytes: inout [UInt8]) { Sodium.wipe(&bytes) }
