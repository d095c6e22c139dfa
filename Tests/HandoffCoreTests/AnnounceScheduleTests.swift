import HandoffCore
import Testing

@Suite struct AnnounceScheduleTests {
    let a = DeviceKey(bytes: [UInt8](repeating: 0xA1, count: 32))!
    let b = DeviceKey(bytes: [UInt8](repeating: 0xB2, count: 32))!
    let c = DeviceKey(bytes: [UInt8](repeating: 0xC3, count: 32))!
    let keepalive: UInt64 = 30_000

    func schedule() -> AnnounceSchedule { AnnounceSchedule(keepaliveMillis: keepalive, minimumSpacingMillis: 100) }

    func known(_ key: DeviceKey, host: String = "169.254.10.2") -> AnnounceSchedule.Device {
        .init(key: key, present: true, unicast: (host, 47181))
    }

    func route(_ deliveries: [AnnounceSchedule.Delivery]?, _ key: DeviceKey) -> AnnounceSchedule.Route? {
        deliveries?.first { $0.key == key }?.route
    }

    @Test func startReachesEveryPairedDeviceByMulticastAskingForAnAnswer() {
        var s = schedule()
        s.firstContact(all: true)
        let round = s.take(nowMillis: 1_000, devices: [.init(key: a, present: false), .init(key: b, present: false)])
        #expect(round == [.init(key: a, route: .multicast, answerMe: true), .init(key: b, route: .multicast, answerMe: true)])
    }

    @Test func atRestOneUnicastCopyPerPresentDevicePerKeepaliveAndNothingToAbsentOnes() {
        var s = schedule()
        let devices = [known(a), known(b, host: "fe80::2%eth0"), .init(key: c, present: false)]
        let first = s.take(nowMillis: 0, devices: devices)
        #expect(first == [.init(key: a, route: .unicast(host: "169.254.10.2", port: 47181), answerMe: false),
                          .init(key: b, route: .unicast(host: "fe80::2%eth0", port: 47181), answerMe: false)])
        // Nothing until the keepalive is due, however often the daemon looks.
        for now in stride(from: UInt64(100), to: keepalive, by: 1_000) {
            #expect(s.take(nowMillis: now, devices: devices) == nil)
        }
        #expect(s.nextDeadline(nowMillis: 5_000, devices: devices) == keepalive)
        #expect(s.take(nowMillis: keepalive, devices: devices)?.count == 2)
    }

    @Test func aPresentDeviceThatTakesNoUnicastGetsMulticast() {
        var s = schedule()
        let round = s.take(nowMillis: 0, devices: [.init(key: a, present: true, unicast: nil)])
        #expect(route(round, a) == .multicast)
    }

    @Test func aChangeGoesAtOnceAndABurstWaitsForTheSpacingWithTheLatestState() {
        var s = schedule()
        let devices = [known(a)]
        _ = s.take(nowMillis: 0, devices: devices)
        s.changed()
        #expect(s.take(nowMillis: 5_000, devices: devices)?.count == 1)
        // A second change 30 ms later waits until 100 ms after the first, then goes once.
        s.changed()
        #expect(s.take(nowMillis: 5_030, devices: devices) == nil)
        s.changed()
        #expect(s.nextDeadline(nowMillis: 5_060, devices: devices) == 5_100)
        #expect(s.take(nowMillis: 5_100, devices: devices)?.count == 1)
        #expect(s.take(nowMillis: 5_200, devices: devices) == nil)
        // The change goes once more 2 s later (a lost datagram would otherwise wait for the
        // keepalive), then the keepalive, which the repeat restarted.
        #expect(s.nextDeadline(nowMillis: 5_200, devices: devices) == 5_100 + AnnounceSchedule.changeRepeatMillis)
        #expect(s.take(nowMillis: 7_100, devices: devices)?.count == 1)
        #expect(s.take(nowMillis: 7_200, devices: devices) == nil)
        #expect(s.nextDeadline(nowMillis: 7_200, devices: devices) == 7_100 + keepalive)
    }

    /// Issue 24: a network that filters multicast showed only after two 15-minute periods.
    @Test func aMulticastCheckAsksByMulticastOnce() {
        var s = schedule()
        let devices = [known(a), known(b)]
        _ = s.take(nowMillis: 0, devices: devices)
        s.checkMulticast([a])
        let round = s.take(nowMillis: 1_000, devices: devices)
        #expect(round == [.init(key: a, route: .multicast, answerMe: true)])
        #expect(s.take(nowMillis: 2_000, devices: devices) == nil)
    }

    /// Round two, 4: under a UDP flood a change was lost and not sent again before the keepalive.
    @Test func aChangeIsSentTwiceAndOnlyTwice() {
        var s = schedule()
        let devices = [known(a)]
        _ = s.take(nowMillis: 0, devices: devices)
        s.changed()
        #expect(s.take(nowMillis: 1_000, devices: devices)?.count == 1)
        #expect(s.take(nowMillis: 2_999, devices: devices) == nil)
        #expect(s.take(nowMillis: 3_000, devices: devices)?.count == 1)
        for now in stride(from: UInt64(3_100), to: 3_000 + keepalive, by: 1_000) {
            #expect(s.take(nowMillis: now, devices: devices) == nil)
        }
    }

    @Test func aDeviceThatAppearsOrAsksIsAnsweredAloneTheWayItCame() {
        var s = schedule()
        let devices = [known(a), known(b, host: "169.254.10.3")]
        _ = s.take(nowMillis: 0, devices: devices)
        s.answer(b, by: .multicast)
        #expect(s.take(nowMillis: 1_000, devices: devices) == [.init(key: b, route: .multicast, answerMe: false)])
        s.answer(a)
        #expect(s.take(nowMillis: 2_000, devices: devices) == [.init(key: a, route: .unicast(host: "169.254.10.2", port: 47181),
                                                                     answerMe: false)])
        // Answers do not move the keepalive.
        #expect(s.nextDeadline(nowMillis: 2_000, devices: devices) == keepalive)
    }

    @Test func eachDeviceGetsItsPeriodCopyByMulticastAtItsOwnTime() {
        var s = schedule()
        let devices = [known(a), .init(key: b, present: false)]
        _ = s.take(nowMillis: 0, devices: devices)
        s.periodTurned(due: [a: 1_000, b: 5_000])
        #expect(s.nextDeadline(nowMillis: 500, devices: devices) == 1_000)
        #expect(s.take(nowMillis: 500, devices: devices) == nil)
        // Only the device whose time came, and no round for the others: a present device is not asked to answer.
        #expect(s.take(nowMillis: 1_000, devices: devices) == [.init(key: a, route: .multicast, answerMe: false)])
        #expect(s.nextDeadline(nowMillis: 1_000, devices: devices) == 5_000)
        // One not present asks for an answer (its path may have healed).
        #expect(s.take(nowMillis: 5_000, devices: devices) == [.init(key: b, route: .multicast, answerMe: true)])
        // The copies do not move the keepalive.
        #expect(s.nextDeadline(nowMillis: 5_000, devices: devices) == keepalive)
        #expect(s.take(nowMillis: 6_000, devices: devices) == nil)
    }

    @Test func aPeriodCopyDueWithTheKeepaliveGoesOnceByMulticast() {
        var s = schedule()
        let devices = [known(a), known(b, host: "169.254.10.3")]
        _ = s.take(nowMillis: 0, devices: devices)
        s.periodTurned(due: [a: keepalive])
        #expect(s.take(nowMillis: keepalive, devices: devices) == [
            .init(key: a, route: .multicast, answerMe: false),
            .init(key: b, route: .unicast(host: "169.254.10.3", port: 47181), answerMe: false)])
    }

    @Test func aPeriodCopyForADeviceNoLongerPairedOrNotEligibleIsDropped() {
        var s = schedule()
        s.periodTurned(due: [a: 1_000, b: 1_000])
        let round = s.take(nowMillis: 1_000, devices: [.init(key: a, present: true, eligible: false)])
        #expect(round?.isEmpty == true)
        // Nothing left of either: the next thing due is the keepalive.
        #expect(s.nextDeadline(nowMillis: 1_000, devices: [known(a), known(b)]) == 1_000 + keepalive)
        #expect(s.take(nowMillis: 2_000, devices: [known(a), known(b)]) == nil)
    }

    /// Each device's copy at a random time in the period, counted from the turn: a host that
    /// turns late (it slept) sends what is overdue at once.
    @Test func periodCopiesSpreadOverThePeriod() {
        var random = SystemRandomNumberGenerator()
        let keys = (0..<200).map { n in DeviceKey(bytes: [UInt8](repeating: UInt8(n), count: 31) + [1])! }
        let period: UInt64 = 900_000
        let dues = AnnounceSchedule.periodCopyDues(for: keys, nowMillis: 10_000, intoPeriodMillis: 0, periodMillis: period, using: &random)
        #expect(dues.count == 200)
        #expect(dues.values.allSatisfy { $0 >= 10_000 && $0 < 10_000 + period })
        // 200 copies over 15 one-minute slots: every minute has some, none has most.
        let perMinute = Dictionary(grouping: dues.values) { ($0 - 10_000) / 60_000 }.mapValues(\.count)
        #expect(perMinute.count == 15)
        #expect(perMinute.values.max() ?? 0 <= 40)
        let late = AnnounceSchedule.periodCopyDues(for: keys, nowMillis: 10_000, intoPeriodMillis: 600_000, periodMillis: period, using: &random)
        #expect(late.values.allSatisfy { $0 >= 10_000 && $0 < 10_000 + 300_000 })
        #expect(late.values.filter { $0 == 10_000 }.count > 100)
    }

    @Test func aNewPairingReachesOnlyDevicesNotHeardByMulticast() {
        var s = schedule()
        s.firstContact(all: false)
        let round = s.take(nowMillis: 0, devices: [known(a), .init(key: b, present: false)])
        #expect(round == [.init(key: b, route: .multicast, answerMe: true),
                          .init(key: a, route: .unicast(host: "169.254.10.2", port: 47181), answerMe: false)])
    }

    @Test func anAddressChangeReachesEveryDeviceByMulticastOnce() {
        var s = schedule()
        s.firstContact(all: true)
        let round = s.take(nowMillis: 0, devices: [known(a), known(b)])
        #expect(round?.count == 2)
        #expect(round?.allSatisfy { $0.route == .multicast && $0.answerMe } == true)
    }

    @Test func aDeviceSeenButNotHeardIsProbedOncePerKeepalive() {
        var s = schedule()
        let sighted = AnnounceSchedule.Device(key: a, present: false, seen: true, unicast: ("169.254.10.2", 47181))
        #expect(s.take(nowMillis: 0, devices: [sighted]) == [.init(key: a, route: .unicast(host: "169.254.10.2", port: 47181),
                                                                   answerMe: true)])
        #expect(s.take(nowMillis: 1_000, devices: [sighted]) == nil)
        #expect(s.nextDeadline(nowMillis: 1_000, devices: [sighted]) == keepalive)
        #expect(s.take(nowMillis: keepalive, devices: [sighted])?.count == 1)
        // Heard again: kept alive like any present device, no more probes.
        var heard = sighted
        heard.present = true
        let round = s.take(nowMillis: 2 * keepalive, devices: [heard])
        #expect(round == [.init(key: a, route: .unicast(host: "169.254.10.2", port: 47181), answerMe: false)])
    }

    @Test func withBluetoothADeviceNotNearGetsNoSummaryButAGoodbye() {
        var s = schedule()
        let far = AnnounceSchedule.Device(key: a, present: true, eligible: false, unicast: ("169.254.10.2", 47181))
        s.changed()
        s.answer(a)
        #expect(s.take(nowMillis: 0, devices: [far]) == [])
        // b is not listed here but may list us (just paired): it hears the goodbye by multicast.
        #expect(AnnounceSchedule.goodbye(devices: [far, .init(key: b, present: false)])
            == [.init(key: a, route: .unicast(host: "169.254.10.2", port: 47181), answerMe: false),
                .init(key: b, route: .multicast, answerMe: false)])
    }

    @Test func eachDeviceGetsOneCopyPerRound() {
        var s = schedule()
        s.firstContact(all: true)
        s.changed()
        s.answer(a)
        let round = s.take(nowMillis: 0, devices: [known(a), .init(key: b, present: false, seen: true)])
        #expect(round?.map(\.key) == [a, b])
    }

    @Test func aClockSteppingBackDelaysNothing() {
        var s = schedule()
        let devices = [known(a)]
        _ = s.take(nowMillis: 1_000_000, devices: devices)
        s.changed()
        #expect(s.take(nowMillis: 10, devices: devices)?.count == 1)
    }
}
