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

    @Test func thePeriodTurningSendsEachDeviceItsCopyByMulticastAtThisHostsOffset() {
        var s = schedule()
        _ = s.take(nowMillis: 0, devices: [known(a)])
        s.periodTurned(dueAtMillis: 1_000)
        // Not before its time: the hosts of a network spread over the turn's first minute.
        #expect(s.nextDeadline(nowMillis: 500, devices: [known(a)]) == 1_000)
        #expect(s.take(nowMillis: 500, devices: [known(a), .init(key: b, present: false)]) == nil)
        let round = s.take(nowMillis: 1_000, devices: [known(a), .init(key: b, present: false)])
        #expect(round == [.init(key: a, route: .multicast, answerMe: false), .init(key: b, route: .multicast, answerMe: true)])
        // It counts as the round: the next keepalive is a full interval later.
        #expect(s.nextDeadline(nowMillis: 1_000, devices: [known(a)]) == 1_000 + keepalive)
    }

    /// Hosts spread over the minute: the offsets of many keys fill it, each fixed for its key.
    @Test func periodTurnOffsetsSpreadHostsOverTheFirstMinute() throws {
        var offsets: [UInt64] = []
        for n in 0..<64 {
            let key = try #require(DeviceKey(bytes: (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ n &* 131 &+ ($0 == 0 ? n * 37 : 0)) }))
            offsets.append(AnnounceSchedule.periodTurnOffsetMillis(for: key))
            #expect(AnnounceSchedule.periodTurnOffsetMillis(for: key) == offsets.last)
        }
        #expect(offsets.allSatisfy { $0 < AnnounceSchedule.periodTurnWindowMillis })
        // 64 hosts over 60 one-second slots: no second holds more than a handful.
        let perSecond = Dictionary(grouping: offsets) { $0 / 1000 }.values.map(\.count)
        #expect(perSecond.max() ?? 0 <= 6)
        #expect(Set(offsets.map { $0 / 1000 }).count >= 30)
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
