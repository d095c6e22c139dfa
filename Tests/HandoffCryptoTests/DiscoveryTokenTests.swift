import HandoffCore
import HandoffCrypto
import Testing

private let rfcKey = DeviceKey(hex: "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")!
private let otherKey = try! Identity(seed: [UInt8](repeating: 9, count: 32)).publicKey

@Suite struct DiscoveryTokenTests {
    /// Computed independently: BLAKE2b-80 keyed with BLAKE2b-256("handoff/discovery-token/v1" || key),
    /// over the epoch as u64 BE, in Crockford base32.
    @Test(arguments: [(UInt64(0), "RREPNN86YT1RSZXV"), (1_888_888, "TSK0BCE2PZ22TEVF"), (1_888_889, "2Q4XBZQZ2DDD4BPD")])
    func knownAnswers(epoch: UInt64, token: String) {
        #expect(DiscoveryToken.token(for: rfcKey, epoch: epoch) == token)
    }

    @Test func epochOfTheVectorTimestamp() {
        #expect(ServiceRecord.epoch(wallClockMillis: 1_700_000_000_000) == 1_888_888)
        #expect(ServiceRecord.epoch(wallClockMillis: 899_999) == 0)
        #expect(ServiceRecord.epoch(wallClockMillis: 900_000) == 1)
    }

    @Test func tokensRotateAndDifferPerKey() {
        let now = DiscoveryToken.token(for: rfcKey, epoch: 100)
        #expect(now != DiscoveryToken.token(for: rfcKey, epoch: 101))
        #expect(now != DiscoveryToken.token(for: otherKey, epoch: 100))
        #expect(now.count == 16)
        #expect(DeviceID.normalize(now) == now)
    }

    @Test func matchAcceptsThePreviousCurrentAndNextPeriod() {
        let keys = [otherKey, rfcKey]
        for published in [99, 100, 101] as [UInt64] {
            #expect(DiscoveryToken.match(DiscoveryToken.token(for: rfcKey, epoch: published), among: keys, epoch: 100) == rfcKey)
        }
        #expect(DiscoveryToken.match(DiscoveryToken.token(for: rfcKey, epoch: 98), among: keys, epoch: 100) == nil)
        #expect(DiscoveryToken.match(DiscoveryToken.token(for: rfcKey, epoch: 102), among: keys, epoch: 100) == nil)
        #expect(DiscoveryToken.match(DiscoveryToken.token(for: rfcKey, epoch: 100), among: [otherKey], epoch: 100) == nil)
        #expect(DiscoveryToken.match(DiscoveryToken.token(for: rfcKey, epoch: 100), among: [DeviceKey](), epoch: 100) == nil)
    }

    @Test func matchAtTheEdgesOfTheEpochRangeDoesNotTrap() {
        #expect(DiscoveryToken.match(DiscoveryToken.token(for: rfcKey, epoch: 0), among: [rfcKey], epoch: 0) == rfcKey)
        #expect(DiscoveryToken.match(DiscoveryToken.token(for: rfcKey, epoch: .max), among: [rfcKey], epoch: .max) == rfcKey)
    }
}
