import HandoffCore
import Testing

/// The registration's decisions with a manual clock: never touch bluetoothd's client
/// while a refresh may run (the pre-5.74 abort), one call at a time, afresh after power loss.
@Suite struct AdvertisementRegistrationTests {
    let first: [UInt8] = [1, 2, 3]
    let second: [UInt8] = [4, 5, 6]
    let settle = AdvertisementRegistration.settleMillis

    func registered(_ token: [UInt8]) -> AdvertisementRegistration {
        var registration = AdvertisementRegistration()
        #expect(registration.next(wanted: token, at: 0) == .register(token: token))
        registration.registerAnswered(.registered, at: 10)
        #expect(registration.isAdvertising)
        return registration
    }

    @Test func registersAtOnceWhenNothingChangedLately() {
        var registration = AdvertisementRegistration()
        #expect(registration.next(wanted: nil, at: 0) == .none)
        #expect(registration.next(wanted: first, at: 0) == .register(token: first))
        #expect(registration.next(wanted: first, at: 1) == .none) // in flight
        registration.registerAnswered(.registered, at: 5)
        #expect(registration.next(wanted: first, at: 6) == .none)
    }

    @Test func discoverableChangeHoldsTheUnregisterUntilTheRefreshIsOver() {
        var registration = registered(first)
        registration.adapterChanged(at: 1000)
        // Discoverable: nothing wanted on the air, but bluetoothd is refreshing our client now.
        #expect(registration.next(wanted: nil, at: 1001) == .wait(millis: settle - 1))
        #expect(registration.state == .registered(token: first))
        #expect(registration.next(wanted: nil, at: 1000 + settle) == .unregister)
        #expect(registration.next(wanted: nil, at: 1000 + settle + 1) == .none)
        registration.unregisterAnswered()
        #expect(registration.state == .off)
        #expect(registration.next(wanted: nil, at: 5000) == .none)
    }

    @Test func togglesInQuickSuccessionExtendTheQuietPeriodThenRegisterAfresh() {
        var registration = registered(first)
        registration.adapterChanged(at: 1000)
        registration.adapterChanged(at: 1300)
        #expect(registration.next(wanted: first, at: 1000 + settle) == .wait(millis: 300))
        // Discoverable on and off again: bluetoothd's refresh set ours up from the public address
        // and no second refresh may come, so it is registered afresh once quiet.
        #expect(registration.next(wanted: first, at: 1300 + settle) == .unregister)
        registration.unregisterAnswered()
        #expect(registration.next(wanted: first, at: 1300 + settle + 1) == .register(token: first))
    }

    @Test func noChangeWantedMeansNoWait() {
        var registration = AdvertisementRegistration()
        registration.adapterChanged(at: 0)
        #expect(registration.next(wanted: nil, at: 1) == .none)
        #expect(registration.next(wanted: first, at: 1) == .wait(millis: settle - 1))
    }

    @Test func powerCycleWithinTheQuietPeriodRegistersAfresh() {
        // The kernel drops the set at power-off; bluetoothd 5.66 keeps the registration.
        var registration = registered(first)
        registration.adapterChanged(at: 100)
        registration.adapterChanged(at: 200)
        #expect(!registration.isAdvertising)
        #expect(registration.next(wanted: first, at: 300) == .wait(millis: 200 + settle - 300))
        #expect(registration.next(wanted: first, at: 200 + settle) == .unregister)
        registration.unregisterAnswered()
        #expect(registration.next(wanted: first, at: 200 + settle + 1) == .register(token: first))
    }

    @Test func powerLostWhileRegisteringIsStaleOnceAnswered() {
        var registration = AdvertisementRegistration()
        #expect(registration.next(wanted: first, at: 0) == .register(token: first))
        registration.adapterChanged(at: 1)
        registration.registerAnswered(.registered, at: 2)
        #expect(!registration.isAdvertising)
        #expect(registration.next(wanted: first, at: 1 + settle) == .unregister)
    }

    @Test func newTokenUnregistersThenRegisters() {
        var registration = registered(first)
        #expect(registration.next(wanted: second, at: 20) == .unregister)
        #expect(registration.next(wanted: second, at: 21) == .none)
        registration.unregisterAnswered()
        #expect(registration.next(wanted: second, at: 22) == .register(token: second))
    }

    @Test func alreadyExistsRegistersAfreshOnceThenAcceptsIt() {
        var registration = AdvertisementRegistration()
        _ = registration.next(wanted: first, at: 0)
        registration.registerAnswered(.alreadyExists, at: 1)
        #expect(registration.next(wanted: first, at: 2) == .unregister)
        registration.unregisterAnswered()
        #expect(registration.next(wanted: first, at: 3) == .register(token: first))
        registration.registerAnswered(.alreadyExists, at: 4)
        #expect(registration.isAdvertising)
        #expect(registration.next(wanted: first, at: 5) == .none)
    }

    @Test func failureBacksOff() {
        var registration = AdvertisementRegistration()
        _ = registration.next(wanted: first, at: 0)
        registration.registerAnswered(.failed, at: 100)
        #expect(registration.state == .off)
        #expect(registration.next(wanted: first, at: 101) == .wait(millis: AdvertisementRegistration.retryMillis - 1))
        #expect(registration.next(wanted: first, at: 100 + AdvertisementRegistration.retryMillis) == .register(token: first))
    }

    @Test func releasedAndForgottenStartOver() {
        var registration = registered(first)
        registration.released(at: 1000)
        #expect(registration.state == .off)
        #expect(registration.next(wanted: first, at: 1001) == .wait(millis: 499))
        #expect(registration.next(wanted: first, at: 1500) == .register(token: first))
        registration.forget()
        #expect(registration.state == .off)
        #expect(registration.next(wanted: first, at: 1501) == .register(token: first))
    }

    @Test func stoppingWaitsOutTheQuietPeriod() {
        var registration = registered(first)
        #expect(registration.quietMillis(at: 50) == 0)
        registration.adapterChanged(at: 100)
        #expect(registration.quietMillis(at: 600) == settle - 500)
    }
}
