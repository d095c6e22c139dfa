import HandoffCore
import Testing

/// avahi holds an entry group that is committed too often (60 s per commit from the 15th):
/// commits here are spaced, the newest record wins, and one avahi never confirms is made again.
@Suite struct RegistrationPacerTests {
    @Test func theFirstChangeCommitsAtOnceAndAConfirmationEndsTheWait() {
        var pacer = RegistrationPacer()
        #expect(pacer.changed(nowMillis: 5_000) == .commit)
        pacer.established()
        #expect(pacer.timerFired(nowMillis: 20_000) == .idle)
    }

    @Test func aBurstOfChangesIsOneCommitPerSecondWithTheNewestRecord() {
        var pacer = RegistrationPacer()
        var commits: [UInt64] = []
        var timer: UInt64?
        // 1,400 toggles in 3 s, as enable/disable in a loop.
        for step in 0..<1_400 {
            let now = 10_000 + UInt64(step) * 2
            if let due = timer, now >= due {
                timer = nil
                if case .commit = pacer.timerFired(nowMillis: due) { commits.append(due) }
            }
            switch pacer.changed(nowMillis: now) {
            case .commit: commits.append(now)
            case let .wait(until): timer = until
            case .idle: break
            }
        }
        // The last change is committed once the spacing allows it, then nothing more.
        if let due = timer, case .commit = pacer.timerFired(nowMillis: due) { commits.append(due) }
        pacer.established()
        #expect(commits == [10_000, 11_000, 12_000, 13_000])
        #expect(pacer.timerFired(nowMillis: 60_000) == .idle)
    }

    @Test func aRegistrationAvahiNeverConfirmsIsMadeAgainAfterTheWatchdog() {
        var pacer = RegistrationPacer()
        #expect(pacer.changed(nowMillis: 0) == .commit)
        #expect(pacer.timerFired(nowMillis: 9_999) == .wait(untilMillis: 10_000))
        #expect(pacer.timerFired(nowMillis: 10_000) == .commit)
        #expect(pacer.timerFired(nowMillis: 15_000) == .wait(untilMillis: 20_000))
        pacer.established()
        #expect(pacer.timerFired(nowMillis: 20_000) == .idle)
    }

    @Test func withdrawingDropsWhatWasPending() {
        var pacer = RegistrationPacer()
        #expect(pacer.changed(nowMillis: 0) == .commit)
        #expect(pacer.changed(nowMillis: 100) == .wait(untilMillis: 1_000))
        pacer.withdrawn()
        #expect(pacer.timerFired(nowMillis: 1_000) == .idle)
        // The next change still respects the spacing from the last commit.
        #expect(pacer.changed(nowMillis: 500) == .wait(untilMillis: 1_000))
    }
}
