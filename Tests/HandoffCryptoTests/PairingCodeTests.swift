import HandoffCore
import HandoffCrypto
import Testing

/// Docs/PROTOCOL.md, "Pairing code": over the transcript hash of the handshake vector,
/// initiator B (RFC 8032 test 2), responder A (test 1), initiator nonce 00 01 … 1f,
/// responder nonce 20 21 … 3f.
enum PairingVector {
    static let initiatorNonce = Array(UInt8(0)..<UInt8(32))
    static let responderNonce = Array(UInt8(32)..<UInt8(64))
    static let commitment = hex("c6a3ecc47c322446fa71a50943d6ecfeae79835a9297a8923e3837a5e96638b0")
    static let code = "678497"
    /// Responder nonce of 32 bytes 03: a code with a leading zero.
    static let leadingZeroNonce = [UInt8](repeating: 3, count: 32)
    static let leadingZeroCode = "031458"
}

private let initiatorKey = DeviceKey(bytes: rfcPublicKey2)!
private let responderKey = DeviceKey(bytes: rfcPublicKey)!

@Suite struct PairingCodeTests {
    /// The code binds both identity keys: another key on either side (or the roles swapped) gives another code.
    @Test func theCodeBindsBothKeys() throws {
        let other = try Identity(seed: [UInt8](repeating: 9, count: 32)).publicKey
        let code = { (initiator: DeviceKey, responder: DeviceKey) in
            PairingCode.code(transcriptHash: HandshakeVector.transcriptHash, initiator: initiator, responder: responder,
                             initiatorNonce: PairingVector.initiatorNonce, responderNonce: PairingVector.responderNonce)
        }
        #expect(code(initiatorKey, responderKey) == PairingVector.code)
        #expect(Set([code(initiatorKey, responderKey), code(other, responderKey), code(initiatorKey, other),
                     code(responderKey, initiatorKey)]).count == 4)
    }

    @Test func knownAnswer() {
        #expect(PairingCode.commitment(to: PairingVector.responderNonce) == PairingVector.commitment)
        #expect(PairingCode.code(transcriptHash: HandshakeVector.transcriptHash, initiator: initiatorKey, responder: responderKey, initiatorNonce: PairingVector.initiatorNonce,
                                 responderNonce: PairingVector.responderNonce) == PairingVector.code)
        #expect(PairingCode.code(transcriptHash: HandshakeVector.transcriptHash, initiator: initiatorKey, responder: responderKey, initiatorNonce: PairingVector.initiatorNonce,
                                 responderNonce: PairingVector.leadingZeroNonce) == PairingVector.leadingZeroCode)
    }

    @Test func alwaysSixDigitsWithLeadingZerosKept() {
        var rng = SplitMix64(seed: 0x5041_4952)
        var leadingZeros = 0
        for _ in 0..<2000 {
            let code = PairingCode.code(transcriptHash: rng.bytes(32), initiator: initiatorKey, responder: responderKey, initiatorNonce: rng.bytes(32), responderNonce: rng.bytes(32))
            #expect(code.count == 6, "\(code)")
            #expect(code.allSatisfy { ("0"..."9").contains($0) }, "\(code)")
            if code.hasPrefix("0") { leadingZeros += 1 }
        }
        // One code in ten starts with 0; they are kept, not shortened.
        #expect(leadingZeros > 100)
    }

    @Test func sameInputsSameCode() {
        let transcript = HandshakeVector.transcriptHash
        let first = PairingCode.code(transcriptHash: transcript, initiator: initiatorKey, responder: responderKey, initiatorNonce: PairingVector.initiatorNonce,
                                     responderNonce: PairingVector.responderNonce)
        for _ in 0..<3 {
            #expect(PairingCode.code(transcriptHash: transcript, initiator: initiatorKey, responder: responderKey, initiatorNonce: PairingVector.initiatorNonce,
                                     responderNonce: PairingVector.responderNonce) == first)
        }
    }

    /// Changing one bit of the transcript or of either nonce gives another code, except
    /// by chance (one in a million per case).
    @Test func anyChangeChangesTheCode() {
        var rng = SplitMix64(seed: 0x5041_4953)
        var same = 0
        var cases = 0
        for _ in 0..<300 {
            let transcript = rng.bytes(32), initiator = rng.bytes(32), responder = rng.bytes(32)
            let code = PairingCode.code(transcriptHash: transcript, initiator: initiatorKey, responder: responderKey, initiatorNonce: initiator, responderNonce: responder)
            for part in 0..<3 {
                var inputs = [transcript, initiator, responder]
                let index = Int(rng.next() % 32)
                inputs[part][index] ^= 1 << UInt8(rng.next() % 8)
                cases += 1
                if PairingCode.code(transcriptHash: inputs[0], initiator: initiatorKey, responder: responderKey, initiatorNonce: inputs[1], responderNonce: inputs[2]) == code { same += 1 }
            }
            // The nonces are not interchangeable.
            if initiator != responder {
                cases += 1
                if PairingCode.code(transcriptHash: transcript, initiator: initiatorKey, responder: responderKey, initiatorNonce: responder, responderNonce: initiator) == code { same += 1 }
            }
        }
        #expect(cases == 1200)
        #expect(same <= 3)
    }

    @Test func commitmentBindsTheNonce() {
        let nonce = PairingVector.responderNonce
        let commitment = PairingCode.commitment(to: nonce)
        #expect(commitment.count == 32)
        #expect(PairingCode.commitment(to: nonce) == commitment)
        for (index, flipped) in singleBitFlips(of: nonce).enumerated() {
            #expect(PairingCode.commitment(to: flipped) != commitment, "bit \(index)")
        }
        #expect(PairingCode.commitment(to: Array(nonce.dropLast())) != commitment)
        // Domain-separated from a plain digest of the nonce.
        #expect(commitment != Blake2b.digest(nonce))
        // Another responder nonce never opens the same commitment (a thousand tries).
        var rng = SplitMix64(seed: 0x434F_4D4D)
        var commitments: Set<[UInt8]> = [commitment]
        for _ in 0..<1000 { commitments.insert(PairingCode.commitment(to: rng.bytes(32))) }
        #expect(commitments.count == 1001)
    }
}
