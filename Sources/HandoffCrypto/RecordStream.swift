import CSodium
import Glibc
import HandoffCore

/// The ciphers a version 5 hello offers for the records after the handshake (Docs/PROTOCOL.md, "Records").
public struct RecordCiphers: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let xchacha20poly1305 = RecordCiphers(rawValue: 1 << 0)
    public static let aes256gcm = RecordCiphers(rawValue: 1 << 1)

    /// What this host runs: AES-256-GCM (OpenSSL) only where the CPU has AES and carry-less
    /// multiply instructions, where it is the faster of the two; XChaCha20-Poly1305 (libsodium)
    /// everywhere. `HANDOFF_RECORD_CIPHERS=xchacha20poly1305` in the environment forces the
    /// fallback (Docs/SECURITY.md), so one machine can run both.
    public static let available: RecordCiphers = {
        Sodium.ensureReady()
        return offered(cpuHasAES: !AESGCM.engines.isEmpty, environment: getenv(forcedVariable).map { String(cString: $0) })
    }()

    public static let forcedVariable = "HANDOFF_RECORD_CIPHERS"

    /// What a host offers, given its CPU and the value of `HANDOFF_RECORD_CIPHERS` (nil when unset).
    public static func offered(cpuHasAES: Bool, environment: String?) -> RecordCiphers {
        if environment == "xchacha20poly1305" { return .xchacha20poly1305 }
        return cpuHasAES ? [.xchacha20poly1305, .aes256gcm] : .xchacha20poly1305
    }
}

/// The cipher a handshake settled on.
public enum RecordCipher: UInt8, Sendable, CustomStringConvertible {
    case xchacha20poly1305 = 1
    case aes256gcm = 2

    /// The server's choice from what the client offered and what it runs itself: AES-256-GCM
    /// when both have it, else XChaCha20-Poly1305 (every version 5 hello offers it).
    public static func choose(offered: RecordCiphers, supported: RecordCiphers) -> RecordCipher {
        offered.intersection(supported).contains(.aes256gcm) ? .aes256gcm : .xchacha20poly1305
    }

    public var description: String {
        switch self {
        case .xchacha20poly1305: "XChaCha20-Poly1305"
        case .aes256gcm: "AES-256-GCM"
        }
    }
}

/// One direction of a channel's records, under the cipher the handshake chose.
/// Both ciphers add 17 bytes to a record and start from a 24-byte header sent
/// first, so the framing around them is the same.
public enum RecordStream: Sendable {
    case xchacha20poly1305(SecretStream)
    case aes256gcm(AESGCMStream)

    public static let headerBytes = 24
    public static let overheadBytes = 17
    public static let tagMessage: UInt8 = 0
    public static let tagPush: UInt8 = 1

    /// Starts the sending direction; the header goes to the peer first.
    public static func sender(_ cipher: RecordCipher, key: [UInt8]) -> (RecordStream, header: [UInt8]) {
        switch cipher {
        case .xchacha20poly1305:
            let (stream, header) = SecretStream.sender(key: key)
            return (.xchacha20poly1305(stream), header)
        case .aes256gcm:
            let header = Random.bytes(headerBytes)
            return (.aes256gcm(AESGCMStream(key: key, header: header)), header)
        }
    }

    public static func receiver(_ cipher: RecordCipher, key: [UInt8], header: [UInt8]) -> RecordStream? {
        guard header.count == headerBytes, key.count == AEAD.keyBytes else { return nil }
        switch cipher {
        case .xchacha20poly1305: return SecretStream.receiver(key: key, header: header).map { .xchacha20poly1305($0) }
        case .aes256gcm: return .aes256gcm(AESGCMStream(key: key, header: header))
        }
    }

    /// Encrypts `plaintext` into `output`, which must hold `plaintext.count + overheadBytes` bytes;
    /// false, and nothing to send, once the direction's key has sealed all it may (`AESGCMStream.recordLimit`).
    public func push(_ plaintext: UnsafeRawBufferPointer, tag: UInt8, into output: UnsafeMutableRawPointer) -> Bool {
        switch self {
        case let .xchacha20poly1305(stream):
            stream.push(plaintext, tag: tag, into: output)
            return true
        case let .aes256gcm(stream):
            return stream.push(plaintext, tag: tag, into: output)
        }
    }

    /// Decrypts into `output` (room for `ciphertext.count - overheadBytes` bytes); the tag, or nil if inauthentic.
    public func pull(_ ciphertext: UnsafeRawBufferPointer, into output: UnsafeMutableRawPointer) -> UInt8? {
        switch self {
        case let .xchacha20poly1305(stream): stream.pull(ciphertext, into: output)
        case let .aes256gcm(stream): stream.pull(ciphertext, into: output)
        }
    }

    /// The sealed record, for tests and the fuzz targets; channels use the buffer form, which
    /// reports a used-up key instead of stopping here.
    public func push(_ plaintext: [UInt8], tag: UInt8) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: plaintext.count + Self.overheadBytes)
        let sealed = plaintext.withUnsafeBytes { input in out.withUnsafeMutableBytes { push(input, tag: tag, into: $0.baseAddress!) } }
        precondition(sealed, "the direction's key has sealed all it may")
        return out
    }

    /// The plaintext and its tag; nil if the record is not the next authentic one.
    public func pull(_ ciphertext: [UInt8]) -> (plaintext: [UInt8], tag: UInt8)? {
        guard ciphertext.count >= Self.overheadBytes else { return nil }
        var out = [UInt8](repeating: 0, count: max(ciphertext.count - Self.overheadBytes, 1))
        let tag = ciphertext.withUnsafeBytes { input in out.withUnsafeMutableBytes { pull(input, into: $0.baseAddress!) } }
        guard let tag else { return nil }
        return (Array(out.prefix(ciphertext.count - Self.overheadBytes)), tag)
    }
}

/// One direction of AES-256-GCM records (Docs/PROTOCOL.md, "Records"): the record
/// key is BLAKE2b-256 keyed with the direction's session key over
/// "handoff/aes-records/v5" || header; record n has nonce 4 zero bytes || n
/// (u64 BE), starting at 0. A record is tag (1, in the clear) || ciphertext ||
/// GCM tag (16), with the tag byte as associated data, so a dropped, reordered,
/// replayed or altered record, or a changed tag, fails to decrypt. A direction's key
/// seals at most `recordLimit` records (each at most 1 MiB, far below GCM's message
/// limit): past it push refuses and pull fails, so no nonce is ever used twice.
public final class AESGCMStream: @unchecked Sendable {
    // @unchecked Sendable: each direction of a channel is used by one thread at a time
    // (the channel's reader or its writer), never concurrently.
    static let context = Array("handoff/aes-records/v5".utf8)
    /// 2^32 records, as NIST SP 800-38D bounds the invocations of one key; 4 PiB at 1 MiB a record.
    public static let recordLimit: UInt64 = 1 << 32
    private let cipher: AESGCM
    private var counter: UInt64

    init(key: [UInt8], header: [UInt8], startingAt counter: UInt64 = 0) {
        var recordKey = Blake2b.keyed(Self.context + header, key: key)
        defer { Sodium.wipe(&recordKey) }
        guard let cipher = AESGCM(key: recordKey) else { preconditionFailure("AES-256-GCM chosen on a host without AES instructions") }
        self.cipher = cipher
        self.counter = counter
    }

    /// A stream whose key has already sealed `counter` records: the limit's test.
    public static func resumed(key: [UInt8], header: [UInt8], at counter: UInt64) -> RecordStream {
        .aes256gcm(AESGCMStream(key: key, header: header, startingAt: counter))
    }

    /// The next record's nonce; the counter moves on only past an authentic record.
    private var nonce: [UInt8] {
        var nonce = [UInt8](repeating: 0, count: 12)
        withUnsafeBytes(of: counter.bigEndian) { nonce.replaceSubrange(4..<12, with: $0) }
        return nonce
    }

    func push(_ plaintext: UnsafeRawBufferPointer, tag: UInt8, into output: UnsafeMutableRawPointer) -> Bool {
        guard counter < Self.recordLimit else { return false }
        let nonce = self.nonce
        counter += 1
        var associated = tag
        output.storeBytes(of: tag, as: UInt8.self)
        return withUnsafeBytes(of: &associated) { associated in
            nonce.withUnsafeBytes { nonce in
                cipher.seal(plaintext, associated: associated, nonce: nonce, into: output + 1, tag: output + 1 + plaintext.count)
            }
        }
    }

    func pull(_ ciphertext: UnsafeRawBufferPointer, into output: UnsafeMutableRawPointer) -> UInt8? {
        guard ciphertext.count >= RecordStream.overheadBytes, counter < Self.recordLimit else { return nil }
        let length = ciphertext.count - RecordStream.overheadBytes
        var tag = ciphertext[0]
        let body = UnsafeRawBufferPointer(rebasing: ciphertext[1..<(1 + length)])
        let gcmTag = UnsafeRawBufferPointer(rebasing: ciphertext[(1 + length)...])
        let authentic = withUnsafeBytes(of: &tag) { associated in
            nonce.withUnsafeBytes { nonce in cipher.open(body, tag: gcmTag, associated: associated, nonce: nonce, into: output) }
        }
        guard authentic else { return nil }
        counter += 1
        return tag
    }
}
