import HandoffCore
import HandoffCrypto
@testable import HandoffDaemon
import HandoffTransport
import Testing

private let alice = try! Identity(seed: [UInt8](repeating: 2, count: 32)).publicKey
private let bob = try! Identity(seed: [UInt8](repeating: 3, count: 32)).publicKey

private func device(_ key: DeviceKey, chainEpoch: UInt64 = 99) -> PeriodKeys.Device {
    let fill = key.bytes[0]
    return .init(key: key, discoverySecret: [UInt8](repeating: fill &+ 1, count: 32),
                 sealChain: SealChain(epoch: chainEpoch, key: [UInt8](repeating: fill &+ 2, count: 32))!)
}

private func sighting(of device: PeriodKeys.Device, epoch: UInt64, host: String) -> ServiceSighting {
    let record = ServiceRecord(token: DiscoveryToken.token(secret: device.discoverySecret, epoch: epoch))
    return ServiceSighting(instance: record.instanceName, host: host, port: 47181, txt: record.txt)
}

@Suite struct PeriodKeysTests {
    @Test func theFirstCallBuildsThenOnlyAnotherPeriodTurns() {
        var keys = PeriodKeys()
        #expect(keys.change(at: 100) == .first)
        keys.rebuild(epoch: 100, devices: [device(alice)])
        #expect(keys.change(at: 100) == .unchanged)
        #expect(keys.change(at: 101) == .turned(from: 100))
        // A clock set back is another period too: the tables must follow it.
        #expect(keys.change(at: 99) == .turned(from: 100))
    }

    @Test func hintsCoverEveryMinuteOfThePreviousCurrentAndNextPeriod() {
        var keys = PeriodKeys()
        let a = device(alice), b = device(bob)
        keys.rebuild(epoch: 100, devices: [a, b])
        #expect(keys.hints.count == 2 * 3 * AnnouncementSeal.minutes(of: 100).count)
        for epoch: UInt64 in [99, 100, 101] {
            let periodKey = a.sealChain.key(at: epoch)!
            for minute in [AnnouncementSeal.minutes(of: epoch).lowerBound, AnnouncementSeal.minutes(of: epoch).upperBound] {
                let hint = keys.hints[AnnouncementSeal.hint(periodKey: periodKey, sender: alice, minute: minute)]
                #expect(hint?.key == alice)
                #expect(hint?.periodKey == periodKey)
            }
        }
        // Two periods ahead is not accepted: a recorded announcement cannot be kept for later.
        let later = a.sealChain.key(at: 102)!
        #expect(keys.hints[AnnouncementSeal.hint(periodKey: later, sender: alice, minute: AnnouncementSeal.minutes(of: 102).lowerBound)] == nil)
    }

    @Test func aSealChainAlreadyPastAPeriodGivesNoHintsForIt() {
        var keys = PeriodKeys()
        // Moved to period 100: period 99's key is erased, so nothing sealed under it opens.
        keys.rebuild(epoch: 100, devices: [device(alice, chainEpoch: 100)])
        #expect(keys.hints.count == 2 * AnnouncementSeal.minutes(of: 100).count)
    }

    @Test func beaconTokensFollowThePeriod() {
        var keys = PeriodKeys()
        let a = device(alice)
        keys.rebuild(epoch: 100, devices: [a])
        // From two periods back: a device moves to a period's token at a random time in it.
        for epoch: UInt64 in [98, 99, 100, 101] {
            #expect(keys.beaconTokens[DiscoveryToken.beaconToken(secret: a.discoverySecret, epoch: epoch)] == alice)
        }
        #expect(keys.beaconTokens[DiscoveryToken.beaconToken(secret: a.discoverySecret, epoch: 97)] == nil)
        keys.rebuild(epoch: 101, devices: [a])
        #expect(keys.beaconTokens[DiscoveryToken.beaconToken(secret: a.discoverySecret, epoch: 102)] == alice)
        #expect(keys.beaconTokens[DiscoveryToken.beaconToken(secret: a.discoverySecret, epoch: 98)] == nil)
    }

    @Test func sightingsAreRecognisedByTokenAndMatchedAgainOnlyAfterAChange() {
        var keys = PeriodKeys()
        let a = device(alice), b = device(bob)
        keys.rebuild(epoch: 100, devices: [a])
        let mine = sighting(of: a, epoch: 100, host: "10.0.0.2")
        let stranger = sighting(of: b, epoch: 100, host: "10.0.0.3")
        var sightings = [mine.instance: [mine], stranger.instance: [stranger]]
        #expect(keys.recognise(sightings.values).map(\.key) == [alice])
        // Kept until told: a new sighting is not seen before sightingsChanged.
        let again = sighting(of: a, epoch: 101, host: "10.0.0.4")
        sightings[again.instance] = [again]
        #expect(keys.recognise(sightings.values).count == 1)
        keys.sightingsChanged()
        #expect(Set(keys.recognise(sightings.values).map(\.sighting.host)) == ["10.0.0.2", "10.0.0.4"])
        // Bob paired: a rebuild recognises him without being told of sightings.
        keys.rebuild(epoch: 100, devices: [a, b])
        #expect(keys.recognise(sightings.values).count == 3)
    }

    @Test func aChangeOfThePairedSetForgetsTheHandshakeSecrets() {
        var keys = PeriodKeys()
        keys.handshakeSecrets = [:]
        keys.pairedSetChanged()
        #expect(keys.handshakeSecrets == nil)
    }
}
