import HandoffCore
import HandoffCrypto
import Testing

/// RFC 8032 section 7.1, tests 1 and 2.
private let test1Seed = hex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
private let test1Public = hex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
private let test1Signature = hex("e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b")
private let test2Seed = hex("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb")
private let test2Public = hex("3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c")
private let test2Signature = hex("92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00")

@Suite struct IdentityTests {
    let verifier = Ed25519()

    @Test func rfc8032Test1() throws {
        let identity = try Identity(seed: test1Seed)
        #expect(identity.publicKey.bytes == test1Public)
        #expect(identity.signature(for: []) == test1Signature)
        #expect(verifier.isValid(signature: test1Signature, message: [], key: identity.publicKey))
    }

    @Test func rfc8032Test2() throws {
        let identity = try Identity(seed: test2Seed)
        #expect(identity.publicKey.bytes == test2Public)
        #expect(identity.signature(for: [0x72]) == test2Signature)
        #expect(verifier.isValid(signature: test2Signature, message: [0x72], key: identity.publicKey))
    }

    @Test func seedRoundTrips() throws {
        let identity = try Identity(seed: test1Seed)
        #expect(identity.seed == test1Seed)
        let fresh = Identity()
        #expect(try Identity(seed: fresh.seed).publicKey == fresh.publicKey)
        #expect(fresh.publicKey != Identity().publicKey)
    }

    @Test(arguments: [0, 1, 31, 33, 64])
    func wrongSeedLengthsAreRefused(_ count: Int) {
        let failure = #expect(throws: HandoffError.self) { try Identity(seed: [UInt8](repeating: 7, count: count)) }
        #expect(failure?.code == .identity)
        #expect(failure?.message == "The identity seed must be 32 bytes, found \(count).")
    }

    @Test func verificationFailsForAnyChange() throws {
        let identity = try Identity(seed: test2Seed)
        let key = identity.publicKey
        #expect(!verifier.isValid(signature: test2Signature, message: [0x73], key: key))
        #expect(!verifier.isValid(signature: test2Signature, message: [], key: key))
        #expect(!verifier.isValid(signature: test2Signature, message: [0x72, 0x00], key: key))
        #expect(!verifier.isValid(signature: test2Signature, message: [0x72], key: try #require(DeviceKey(bytes: test1Public))))
        for index in test2Signature.indices {
            var flipped = test2Signature
            flipped[index] ^= 0x01
            #expect(!verifier.isValid(signature: flipped, message: [0x72], key: key), "byte \(index)")
        }
    }

    @Test func malformedSignaturesAreRejectedNotTrusted() throws {
        let key = try #require(DeviceKey(bytes: test1Public))
        for length in [0, 63, 65, 128] {
            #expect(!verifier.isValid(signature: [UInt8](repeating: 0, count: length), message: [], key: key))
        }
        #expect(!verifier.isValid(signature: test1Signature + [0], message: [], key: key))
        #expect(!verifier.isValid(signature: [UInt8](repeating: 0, count: 64), message: [], key: key))
        // The all-zero key is a small-order point; libsodium refuses it outright.
        let zeroKey = try #require(DeviceKey(bytes: [UInt8](repeating: 0, count: 32)))
        #expect(!verifier.isValid(signature: [UInt8](repeating: 0, count: 64), message: [], key: zeroKey))
    }

    @Test func deviceIDIsStable() throws {
        let identity = try Identity(seed: test1Seed)
        #expect(identity.deviceID.description == "NHJ2-X58Z-56DT-QCHQ")
        #expect(Ed25519.deviceID(of: identity.publicKey) == identity.deviceID)
        #expect(try Identity(seed: test2Seed).deviceID.description == "WPEV-1Z09-FB0Y-E0K6")
    }

    @Test func deviceKeyChecksItsLength() {
        #expect(DeviceKey(bytes: test1Public)?.hex == "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
        #expect(DeviceKey(hex: "D75A980182B10AB7D54BFED3C964073A0EE172F3DAA62325AF021A68F707511A")?.bytes == test1Public)
        #expect(DeviceKey(bytes: Array(test1Public.dropLast())) == nil)
        #expect(DeviceKey(bytes: test1Public + [0]) == nil)
        #expect(DeviceKey(hex: "d75a") == nil)
        #expect(DeviceKey(hex: String(repeating: "g", count: 64)) == nil)
        #expect(DeviceKey(hex: String(repeating: "0", count: 63)) == nil)
    }

    @Test func hexCodec() {
        #expect(Hex.encode([]) == "")
        #expect(Hex.encode([0x00, 0x0F, 0xA0, 0xFF]) == "000fa0ff")
        #expect(Hex.decode("000FA0ff") == [0x00, 0x0F, 0xA0, 0xFF])
        #expect(Hex.decode("abc") == nil)
        #expect(Hex.decode("0x12") == nil)
        #expect(Hex.decode("zz") == nil)
        #expect(Hex.decode("éé") == nil)
    }

    @Test func signingIsSafeFromManyThreads() async throws {
        let identity = try Identity(seed: test1Seed)
        let verifier = self.verifier
        let results = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<64 {
                group.addTask {
                    let message = Array("message \(index)".utf8)
                    return verifier.isValid(signature: identity.signature(for: message), message: message, key: identity.publicKey)
                }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(results.count == 64)
        #expect(results.allSatisfy { $0 })
    }
}
