import HandoffCore
import Testing

@Suite struct SourceBudgetTests {
    let rate = SourceBudget.Rate(perSecond: 10, burst: 5)

    @Test func aSourceGetsItsBurstThenItsRate() {
        var budget = SourceBudget(perSource: rate, overall: .init(perSecond: 1000, burst: 1000), maximumSources: 8)
        var first = 0
        for _ in 0..<5 where budget.allow("a", nowMillis: 1_000) { first += 1 }
        #expect(first == 5)
        do { let allowed = budget.allow("a", nowMillis: 1_000); #expect(!allowed) }
        // 100 ms later: one more token (10 per second).
        do { let allowed = budget.allow("a", nowMillis: 1_100); #expect(allowed) }
        do { let allowed = budget.allow("a", nowMillis: 1_100); #expect(!allowed) }
        // Another source is not affected.
        do { let allowed = budget.allow("b", nowMillis: 1_100); #expect(allowed) }
    }

    @Test func theSharedBucketBoundsManySources() {
        var budget = SourceBudget(perSource: rate, overall: .init(perSecond: 10, burst: 3), maximumSources: 1_000)
        var allowed = 0
        for index in 0..<100 where budget.allow("spoofed-\(index)", nowMillis: 5_000) { allowed += 1 }
        #expect(allowed == 3)
    }

    @Test func theTableStaysBounded() {
        var budget = SourceBudget(perSource: rate, overall: .init(perSecond: 1e9, burst: 1e9), maximumSources: 16)
        for index in 0..<10_000 { _ = budget.allow("source-\(index)", nowMillis: UInt64(index)) }
        #expect(budget.trackedSources == 16)
    }

    @Test func aClockSteppingBackNeitherCrashesNorRefills() {
        var budget = SourceBudget(perSource: rate, overall: .init(perSecond: 1000, burst: 1000), maximumSources: 8)
        for _ in 0..<5 { _ = budget.allow("a", nowMillis: 10_000) }
        do { let allowed = budget.allow("a", nowMillis: 0); #expect(!allowed) }
        do { let allowed = budget.allow("a", nowMillis: 10_000); #expect(!allowed) }
        do { let allowed = budget.allow("a", nowMillis: 10_100); #expect(allowed) }
    }

    @Test func refusalTakesNothing() {
        var budget = SourceBudget(perSource: .init(perSecond: 0, burst: 1), overall: .init(perSecond: 0, burst: 2), maximumSources: 8)
        do { let allowed = budget.allow("a", nowMillis: 0); #expect(allowed) }
        do { let allowed = budget.allow("a", nowMillis: 0); #expect(!allowed) }
        // "a" was refused by its own bucket; the shared token it did not use is still there.
        do { let allowed = budget.allow("b", nowMillis: 0); #expect(allowed) }
        do { let allowed = budget.allow("c", nowMillis: 0); #expect(!allowed) }
    }
}
