@testable import HandoffDaemon
import HandoffTransport
import HandoffRuntime
import Testing

@Suite struct EventSourcesTests {
    @Test func aLaterDeadlineNeverDelaysAnEarlierOne() {
        var sources = EventSources()
        let timer = WakeTimer {}
        defer { timer.stop() }
        sources.timer = timer
        sources.arm(at: 600_000, nowMillis: 0)
        #expect(sources.wakeAtMillis == 600_000)
        sources.arm(at: 700_000, nowMillis: 0)
        #expect(sources.wakeAtMillis == 600_000)
        sources.arm(at: 500_000, nowMillis: 0)
        #expect(sources.wakeAtMillis == 500_000)
        // Fired: the next arm sets whatever is due, later or not.
        sources.fired()
        sources.arm(at: 900_000, nowMillis: 0)
        #expect(sources.wakeAtMillis == 900_000)
    }

    @Test func withoutATimerNothingIsArmed() {
        var sources = EventSources()
        sources.arm(at: 1_000, nowMillis: 0)
        #expect(sources.wakeAtMillis == .max)
    }
}
