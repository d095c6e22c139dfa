import HandoffCore
import HandoffCrypto
import Testing

/// A's discovery secret (RFC 8032 test 1 seed): BLAKE2b-256 keyed with the seed over "handoff/discovery-secret/v1".
private let secretA = hex("570b55998de77aa8d67d563ba2dadcab67fa546a9f8769eac2b5337b8ea104be")
private let keyA = DeviceKey(bytes: rfcPublicKey)!
private let other = try! Identity(seed: [UInt8](repeating: 9, count: 32))

@Suite struct DiscoveryTokenTests {
    @Test func theSecretComesFromTheSeed() {
        #expect(rfcIdentity().discoverySecret() == secretA)
        #expect(rfcIdentity2().discoverySecret() != secretA)
    }

    /// Computed independently (Python): BLAKE2b-80 keyed with BLAKE2b-256(key = discovery secret,
    /// "handoff/discovery-token/v2"), over the epoch as u64 BE, in Crockford base32; beacons
    /// the same under "handoff/ble-token/v2".
    @Test(arguments: [(UInt64(0), "3WVTC5CWMRD9EQQ6", "f920bc34545474ab8c23"),
                      (1_888_888, "JZ0GMWG0VH1X2F3Q", "ed40445bc099ea90d9b0"),
                      (1_888_889, "JZRMT8KK7B3P1XR9", "689aff7e3bc980ce5f9a")])
    func knownAnswers(epoch: UInt64, token: String, beacon: String) {
        #expect(DiscoveryToken.token(secret: secretA, epoch: epoch) == token)
        #expect(DiscoveryToken.beaconToken(secret: secretA, epoch: epoch) == hex(beacon))
    }

    @Test func epochOfTheVectorTimestamp() {
        #expect(ServiceRecord.epoch(wallClockMillis: 1_700_000_000_000) == 1_888_888)
        #expect(ServiceRecord.epoch(wallClockMillis: 899_999) == 0)
        #expect(ServiceRecord.epoch(wallClockMillis: 900_000) == 1)
    }

    @Test func tokensRotateAndDifferPerSecret() {
        let now = DiscoveryToken.token(secret: secretA, epoch: 100)
        #expect(now != DiscoveryToken.token(secret: secretA, epoch: 101))
        #expect(now != DiscoveryToken.token(secret: other.discoverySecret(), epoch: 100))
        #expect(now.count == 16)
        #expect(DeviceID.normalize(now) == now)
    }

    /// Whoever knows only the public key (say, from a pairing beacon long ago) cannot compute
    /// the tokens: every derivation from the key alone gives something else.
    @Test func thePublicKeyAloneDoesNotGiveTheTokens() {
        let token = DiscoveryToken.token(secret: secretA, epoch: 1_888_888)
        let beacon = DiscoveryToken.beaconToken(secret: secretA, epoch: 1_888_888)
        for guess in [keyA.bytes, Blake2b.digest(keyA.bytes), rfcIdentity().agreementKey] {
            #expect(DiscoveryToken.token(secret: guess, epoch: 1_888_888) != token)
            #expect(DiscoveryToken.beaconToken(secret: guess, epoch: 1_888_888) != beacon)
        }
    }

    /// A device moves to a period's tokens at a random time in it: until then its tokens are
    /// the previous period's, which is two periods back for a clock a little ahead.
    @Test func matchAcceptsTwoPeriodsBackTheCurrentAndTheNext() {
        let devices = [(key: other.publicKey, secret: other.discoverySecret()), (key: keyA, secret: secretA)]
        for published in [98, 99, 100, 101] as [UInt64] {
            #expect(DiscoveryToken.match(DiscoveryToken.token(secret: secretA, epoch: published), among: devices, epoch: 100) == keyA)
        }
        #expect(DiscoveryToken.match(DiscoveryToken.token(secret: secretA, epoch: 97), among: devices, epoch: 100) == nil)
        #expect(DiscoveryToken.match(DiscoveryToken.token(secret: secretA, epoch: 102), among: devices, epoch: 100) == nil)
        #expect(DiscoveryToken.match(DiscoveryToken.token(secret: secretA, epoch: 100), among: [devices[0]], epoch: 100) == nil)
        #expect(DiscoveryToken.match(DiscoveryToken.token(secret: secretA, epoch: 100), among: [], epoch: 100) == nil)
        // The right key with the wrong secret is not a match.
        #expect(DiscoveryToken.match(DiscoveryToken.token(secret: secretA, epoch: 100),
                                     among: [(key: keyA, secret: other.discoverySecret())], epoch: 100) == nil)
    }

    @Test func matchAtTheEdgesOfTheEpochRangeDoesNotTrap() {
        let devices = [(key: keyA, secret: secretA)]
        #expect(DiscoveryToken.match(DiscoveryToken.token(secret: secretA, epoch: 0), among: devices, epoch: 0) == keyA)
        #expect(DiscoveryToken.match(DiscoveryToken.token(secret: secretA, epoch: .max), among: devices, epoch: .max) == keyA)
    }
}
