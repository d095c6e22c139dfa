import HandoffCore
import HandoffCrypto
import Testing

@Suite struct Blake2bTests {
    @Test func emptyMessage() {
        #expect(Blake2b.digest([]) == hex("0e5751c026e543b2e8ab2eb06099daa1d1e5df47778f7787faab45cdf12fe3a8"))
    }

    @Test func abc() {
        #expect(Blake2b.digest(Array("abc".utf8)) == hex("bddd813c634239723171ef3fee98579b94964e3bb1cb3e427262c8c068d52319"))
    }

    /// RFC 7693 appendix A: BLAKE2b-512("abc").
    @Test func abcWith64ByteOutput() {
        #expect(Blake2b.digest(Array("abc".utf8), outputBytes: 64) == hex(
            "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d1"
                + "7d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923"))
    }

    @Test func outputLengthIsPartOfTheHashNotATruncation() {
        let long = Blake2b.digest(Array("abc".utf8), outputBytes: 64)
        let short = Blake2b.digest(Array("abc".utf8))
        #expect(short.count == 32)
        #expect(Array(long.prefix(32)) != short)
    }

    @Test func largeInputIsDeterministicAndSensitive() {
        var message = [UInt8](repeating: 0x61, count: 1 << 20)
        let first = Blake2b.digest(message)
        #expect(Blake2b.digest(message) == first)
        message[message.count / 2] ^= 1
        #expect(Blake2b.digest(message) != first)
    }

    @Test func constantTimeComparison() {
        let a = hex("00112233445566778899aabbccddeeff")
        #expect(constantTimeEqual(a, a))
        #expect(constantTimeEqual([], []))
        var b = a
        b[15] ^= 0x80
        #expect(!constantTimeEqual(a, b))
        b = a
        b[0] ^= 0x01
        #expect(!constantTimeEqual(a, b))
        #expect(!constantTimeEqual(a, Array(a.prefix(15))))
        #expect(!constantTimeEqual(a, a + [0]))
        #expect(!constantTimeEqual([], [0]))
    }

    @Test func randomBytesHaveTheRightLengthAndDiffer() {
        #expect(Random.bytes(0).isEmpty)
        let first = Random.bytes(32)
        let second = Random.bytes(32)
        #expect(first.count == 32)
        #expect(first != second)
    }
}

@Suite struct Blake2bHasherTests {
    /// Fed in pieces of any size, the hasher gives the one-shot digest.
    @Test(arguments: [1, 7, 128, 129, 4096, 1 << 20])
    func piecesGiveTheOneShotDigest(_ piece: Int) {
        let message = (0..<((1 << 20) + 1000)).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) }
        let hasher = Blake2b.Hasher()
        var offset = 0
        while offset < message.count {
            let end = min(offset + piece, message.count)
            hasher.update(Array(message[offset..<end]))
            offset = end
        }
        #expect(hasher.finish() == Blake2b.digest(message))
    }

    @Test func nothingFedIsTheEmptyDigest() {
        let hasher = Blake2b.Hasher()
        hasher.update([])
        #expect(hasher.finish() == hex("0e5751c026e543b2e8ab2eb06099daa1d1e5df47778f7787faab45cdf12fe3a8"))
        #expect(Blake2b.Hasher(outputBytes: 64).finish() == Blake2b.digest([], outputBytes: 64))
    }
}
