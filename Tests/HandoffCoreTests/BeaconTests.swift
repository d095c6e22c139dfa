import HandoffCore
import Testing

@Suite struct BeaconTests {
    let token = hex("00112233445566778899")

    /// Flags (02 01 04), then manufacturer data: length 0e, type ff, company ffff (LE), version 01, 10-byte token.
    @Test func advertisingDataVector() throws {
        let data = try Beacon(token: token).advertisingData()
        #expect(data == hex("020104 0eff ffff 01 00112233445566778899"))
        #expect(data.count == 18)
    }

    @Test func roundTripAndCompanyID() throws {
        let data = try Beacon(companyID: 0x1234, token: token).advertisingData()
        #expect(data[5...6] == [0x34, 0x12])
        #expect(Beacon(advertisingData: data, companyID: 0x1234) == Beacon(companyID: 0x1234, token: token))
        #expect(Beacon(advertisingData: data) == nil) // another company id
    }

    @Test func foundAmongOtherStructuresAndPadding() {
        let data = hex("020106 05 09 6e616d65") + hex("0eff ffff 01 00112233445566778899") + [0, 0, 0]
        #expect(Beacon(advertisingData: data)?.token == token)
    }

    @Test func otherAdvertisementsAreNotBeacons() {
        #expect(Beacon(advertisingData: hex("0dffffff01020304686e646f6666")) == nil) // version 1 but a 9-byte token
        #expect(Beacon(advertisingData: hex("0eff ffff 02 00112233445566778899")) == nil) // another version
        #expect(Beacon(advertisingData: hex("0eff ffff 01 001122")) == nil) // cut short
        #expect(Beacon(advertisingData: []) == nil)
        for bytes in randomGarbage(seed: 0xBEAC, count: 3000, maxLength: 31) { _ = Beacon(advertisingData: bytes) }
    }

    @Test func wrongTokenLengthIsRefused() {
        #expect(throws: WireError.self) { try Beacon(token: [1, 2, 3]).advertisingData() }
    }
}

@Suite struct ProximityTrackerTests {
    let key = DeviceKey(bytes: [UInt8](repeating: 1, count: 32))!
    let now: UInt64 = 1_000_000

    @Test func nearWhileFreshAndStrong() {
        var tracker = ProximityTracker()
        #expect(!tracker.isNear(key, nowMillis: now))
        tracker.heard(key, rssi: -50, nowMillis: now)
        #expect(tracker.isNear(key, nowMillis: now))
        #expect(tracker.isNear(key, nowMillis: now + 9_999))
        #expect(!tracker.isNear(key, nowMillis: now + 10_000)) // freshness TTL passed
    }

    @Test func weakBeaconsAreNotNear() {
        var tracker = ProximityTracker()
        tracker.heard(key, rssi: -71, nowMillis: now)
        #expect(!tracker.isNear(key, nowMillis: now))
        tracker.heard(key, rssi: -70, nowMillis: now)
        #expect(!tracker.isNear(key, nowMillis: now)) // the average is still below
    }

    @Test func smoothingFollowsTheExponentialAverage() throws {
        var tracker = ProximityTracker()
        tracker.heard(key, rssi: -50, nowMillis: now)
        tracker.heard(key, rssi: -90, nowMillis: now + 100)
        let reading = try #require(tracker.readings[key])
        #expect(abs(reading.smoothedRSSI - (-62)) < 0.001) // -50 + 0.3 * (-90 - -50)
        #expect(tracker.isNear(key, nowMillis: now + 100))
        for step in 2...10 { tracker.heard(key, rssi: -90, nowMillis: now + UInt64(step) * 100) }
        #expect(!tracker.isNear(key, nowMillis: now + 1000))
    }

    @Test func unmeasuredRSSIKeepsTheAverage() throws {
        var tracker = ProximityTracker()
        tracker.heard(key, rssi: -60, nowMillis: now)
        tracker.heard(key, rssi: 127, nowMillis: now + 100)
        #expect(try #require(tracker.readings[key]).smoothedRSSI == -60)
        #expect(tracker.isNear(key, nowMillis: now + 100))
    }

    @Test func aStaleAverageStartsAfresh() throws {
        var tracker = ProximityTracker()
        tracker.heard(key, rssi: -95, nowMillis: now)
        tracker.heard(key, rssi: -40, nowMillis: now + 20_000)
        #expect(try #require(tracker.readings[key]).smoothedRSSI == -40)
    }

    @Test func thresholdIsConfigurable() {
        var settings = ProximityTracker.Settings()
        settings.thresholdDBM = -90
        var tracker = ProximityTracker(settings: settings)
        tracker.heard(key, rssi: -85, nowMillis: now)
        #expect(tracker.isNear(key, nowMillis: now))
        tracker.forget(key)
        #expect(!tracker.isNear(key, nowMillis: now))
    }
}
