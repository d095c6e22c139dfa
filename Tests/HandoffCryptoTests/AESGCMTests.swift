import HandoffCrypto
import Testing

/// Both AES-256-GCM engines (OpenSSL's EVP, the records' engine, and libsodium's) against the
/// standard's vectors and against each other: two vetted libraries must seal the same bytes and
/// each open what the other sealed.
@Suite struct AESGCMTests {
    static let engines = AESGCM.engines

    /// McGrew and Viega, "The Galois/Counter Mode of Operation", test cases 13-16 (AES-256).
    static let vectors: [(key: String, nonce: String, plaintext: String, associated: String, ciphertext: String, tag: String)] = [
        (String(repeating: "00", count: 32), String(repeating: "00", count: 12), "", "", "", "530f8afbc74536b9a963b4f1c4cb738b"),
        (String(repeating: "00", count: 32), String(repeating: "00", count: 12), String(repeating: "00", count: 16), "",
         "cea7403d4d606b6e074ec5d3baf39d18", "d0d1c8a799996bf0265b98b5d48ab919"),
        ("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308", "cafebabefacedbaddecaf888",
         "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255",
         "",
         "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662898015ad",
         "b094dac5d93471bdec1a502270e3cc6c"),
        ("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308", "cafebabefacedbaddecaf888",
         "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39",
         "feedfacedeadbeeffeedfacedeadbeefabaddad2",
         "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662",
         "76fc6ece0f4e1768cddf8853bb2d551b"),
    ]

    static func seal(_ cipher: AESGCM, _ plaintext: [UInt8], associated: [UInt8], nonce: [UInt8]) -> (ciphertext: [UInt8], tag: [UInt8]) {
        var ciphertext = [UInt8](repeating: 0, count: max(plaintext.count, 1))
        var tag = [UInt8](repeating: 0, count: AESGCM.tagBytes)
        plaintext.withUnsafeBytes { input in
            associated.withUnsafeBytes { associated in
                nonce.withUnsafeBytes { nonce in
                    ciphertext.withUnsafeMutableBytes { output in
                        tag.withUnsafeMutableBytes { cipher.seal(input, associated: associated, nonce: nonce, into: output.baseAddress!, tag: $0.baseAddress!) }
                    }
                }
            }
        }
        return (Array(ciphertext.prefix(plaintext.count)), tag)
    }

    /// The plaintext, or nil when refused; `output` shows what was left in the buffer.
    static func open(_ cipher: AESGCM, _ ciphertext: [UInt8], tag: [UInt8], associated: [UInt8], nonce: [UInt8],
                     output: inout [UInt8]) -> [UInt8]? {
        output = [UInt8](repeating: 0xAA, count: max(ciphertext.count, 1))
        let opened = ciphertext.withUnsafeBytes { input in
            tag.withUnsafeBytes { tag in
                associated.withUnsafeBytes { associated in
                    nonce.withUnsafeBytes { nonce in
                        output.withUnsafeMutableBytes { cipher.open(input, tag: tag, associated: associated, nonce: nonce, into: $0.baseAddress!) }
                    }
                }
            }
        }
        return opened ? Array(output.prefix(ciphertext.count)) : nil
    }

    @Test(.enabled(if: !engines.isEmpty), arguments: engines)
    func theStandardsVectors(engine: AESGCM.Engine) throws {
        for vector in Self.vectors {
            let cipher = try #require(AESGCM(key: hex(vector.key), engine: engine))
            let sealed = Self.seal(cipher, hex(vector.plaintext), associated: hex(vector.associated), nonce: hex(vector.nonce))
            #expect(sealed.ciphertext == hex(vector.ciphertext))
            #expect(sealed.tag == hex(vector.tag))
            var output: [UInt8] = []
            #expect(Self.open(cipher, hex(vector.ciphertext), tag: hex(vector.tag), associated: hex(vector.associated),
                              nonce: hex(vector.nonce), output: &output) == hex(vector.plaintext))
        }
    }

    /// Every length across the block and eight-block edges and the last partial block, and large
    /// records: the same bytes from both engines, each opening the other's, any one flipped bit refused.
    @Test(.enabled(if: engines.contains(.openssl)))
    func openSSLSealsAndOpensAsLibsodiumDoes() throws {
        var random = SplitMix64(seed: 0x6763_6d5f_7665_6374)
        let lengths = Array(0...300) + [1_023, 1_024, 1_025, 4_096 + 17, 65_536 + 127, 1 << 20]
        for length in lengths {
            let key = (0..<32).map { _ in UInt8.random(in: 0...255, using: &random) }
            let nonce = (0..<12).map { _ in UInt8.random(in: 0...255, using: &random) }
            let associated = (0..<Int.random(in: 0...40, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            let plaintext = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
            let openssl = try #require(AESGCM(key: key, engine: .openssl))
            let sodium = try #require(AESGCM(key: key, engine: .sodium))
            let ours = Self.seal(openssl, plaintext, associated: associated, nonce: nonce)
            let theirs = Self.seal(sodium, plaintext, associated: associated, nonce: nonce)
            #expect(ours.ciphertext == theirs.ciphertext, "length \(length)")
            #expect(ours.tag == theirs.tag, "length \(length)")
            var output: [UInt8] = []
            #expect(Self.open(openssl, theirs.ciphertext, tag: theirs.tag, associated: associated, nonce: nonce, output: &output) == plaintext)
            #expect(Self.open(sodium, ours.ciphertext, tag: ours.tag, associated: associated, nonce: nonce, output: &output) == plaintext)
            guard length % 37 == 0 || length > 300 else { continue }
            // A flipped bit anywhere: ciphertext, tag, associated data or nonce.
            var ciphertext = ours.ciphertext, tag = ours.tag, flippedAssociated = associated, flippedNonce = nonce
            if length > 0 { ciphertext[Int.random(in: 0..<length, using: &random)] ^= 1 << UInt8.random(in: 0...7, using: &random) }
            tag[Int.random(in: 0..<16, using: &random)] ^= 0x10
            if !associated.isEmpty { flippedAssociated[0] ^= 0x80 }
            flippedNonce[11] ^= 1
            for (body, gcmTag, data, iv) in [(ciphertext, ours.tag, associated, nonce), (ours.ciphertext, tag, associated, nonce),
                                             (ours.ciphertext, ours.tag, flippedAssociated, nonce), (ours.ciphertext, ours.tag, associated, flippedNonce)]
                where body != ours.ciphertext || gcmTag != ours.tag || data != associated || iv != nonce {
                #expect(Self.open(sodium, body, tag: gcmTag, associated: data, nonce: iv, output: &output) == nil)
                #expect(Self.open(openssl, body, tag: gcmTag, associated: data, nonce: iv, output: &output) == nil)
                #expect(output.prefix(length).allSatisfy { $0 == 0 }, "a refused record leaves no plaintext behind")
            }
        }
    }

    /// Records are sealed in place (the output is the input's buffer); the result is the same.
    @Test(.enabled(if: engines.contains(.openssl)))
    func sealingAndOpeningInPlace() throws {
        let key = [UInt8](repeating: 7, count: 32), nonce = [UInt8](repeating: 1, count: 12), associated: [UInt8] = [1]
        let plaintext = (0..<5_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let openssl = try #require(AESGCM(key: key, engine: .openssl))
        let expected = Self.seal(openssl, plaintext, associated: associated, nonce: nonce)
        var buffer = plaintext
        var tag = [UInt8](repeating: 0, count: 16)
        associated.withUnsafeBytes { associated in
            nonce.withUnsafeBytes { nonce in
                buffer.withUnsafeMutableBytes { bytes in
                    tag.withUnsafeMutableBytes { openssl.seal(UnsafeRawBufferPointer(bytes), associated: associated, nonce: nonce, into: bytes.baseAddress!, tag: $0.baseAddress!) }
                }
            }
        }
        #expect(buffer == expected.ciphertext)
        #expect(tag == expected.tag)
        let opened = associated.withUnsafeBytes { associated in
            nonce.withUnsafeBytes { nonce in
                tag.withUnsafeBytes { tag in
                    buffer.withUnsafeMutableBytes { openssl.open(UnsafeRawBufferPointer($0), tag: tag, associated: associated, nonce: nonce, into: $0.baseAddress!) }
                }
            }
        }
        #expect(opened)
        #expect(buffer == plaintext)
    }

    /// A direction's key seals 2^32 records and no more: the next push is refused (the channel
    /// then ends, SecureChannel.keyUsedUp), and the receiver opens nothing past it either, so the
    /// 96-bit nonce (a 64-bit counter) is never used twice under one key.
    @Test(.enabled(if: !engines.isEmpty))
    func aDirectionsKeySealsNoMoreThanItsLimit() throws {
        let key = [UInt8](repeating: 3, count: 32), header = [UInt8](repeating: 9, count: RecordStream.headerBytes)
        let sender = AESGCMStream.resumed(key: key, header: header, at: AESGCMStream.recordLimit - 1)
        let receiver = AESGCMStream.resumed(key: key, header: header, at: AESGCMStream.recordLimit - 1)
        let plaintext: [UInt8] = [1, 2, 3]
        var record = [UInt8](repeating: 0, count: plaintext.count + RecordStream.overheadBytes)
        let last = plaintext.withUnsafeBytes { input in record.withUnsafeMutableBytes { sender.push(input, tag: RecordStream.tagMessage, into: $0.baseAddress!) } }
        #expect(last)
        #expect(receiver.pull(record)?.plaintext == plaintext)
        let past = plaintext.withUnsafeBytes { input in record.withUnsafeMutableBytes { sender.push(input, tag: RecordStream.tagMessage, into: $0.baseAddress!) } }
        #expect(!past)
        #expect(receiver.pull(record) == nil)
    }

    /// GCM's per-message limit (2^36 - 32 bytes) is checked before either library is called.
    @Test(.enabled(if: !engines.isEmpty))
    func aMessagePastGCMsLimitIsRefused() throws {
        let cipher = try #require(AESGCM(key: [UInt8](repeating: 1, count: 32)))
        let nonce = [UInt8](repeating: 0, count: 12)
        var tag = [UInt8](repeating: 0, count: 16)
        // Never read: the length alone is refused.
        let huge = UnsafeRawBufferPointer(start: UnsafeRawPointer(bitPattern: 0x1000), count: AESGCM.maximumMessageBytes + 1)
        let sealed = nonce.withUnsafeBytes { nonce in
            tag.withUnsafeMutableBytes { tag in
                cipher.seal(huge, associated: UnsafeRawBufferPointer(start: nil, count: 0), nonce: nonce,
                            into: UnsafeMutableRawPointer(bitPattern: 0x1000)!, tag: tag.baseAddress!)
            }
        }
        #expect(!sealed)
    }

    /// HANDOFF_RECORD_CIPHERS=xchacha20poly1305 forces the fallback on a CPU with AES; without
    /// AES instructions a host offers XChaCha20-Poly1305 only, whatever the variable says.
    @Test func theFallbackCanBeForced() {
        #expect(RecordCiphers.offered(cpuHasAES: true, environment: nil) == [.xchacha20poly1305, .aes256gcm])
        #expect(RecordCiphers.offered(cpuHasAES: true, environment: "xchacha20poly1305") == .xchacha20poly1305)
        #expect(RecordCiphers.offered(cpuHasAES: false, environment: nil) == .xchacha20poly1305)
        #expect(RecordCiphers.offered(cpuHasAES: false, environment: "aes256gcm") == .xchacha20poly1305)
    }

    @Test func aKeyOfTheWrongLengthIsRefused() {
        #expect(AESGCM(key: [UInt8](repeating: 0, count: 16)) == nil)
    }
}
