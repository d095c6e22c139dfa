import Glibc
import HandoffAPI
import HandoffCore
import HandoffKit
import HandoffRuntime
import HandoffTestSupport
import Testing

/// Daemons on a loop whose clock the test moves (swift-nio's `advanceTime`): what takes
/// minutes on a laptop takes one step here, and nothing runs before its time.
@Suite(.serialized) struct ManualTimeTests {
    init() { setenv("BROWSER", "true", 1) }

    /// An offer that expires leaves the receiver's list when its time has passed, while its
    /// device stays listed (its keepalive is longer than the step).
    @Test func anOfferLeavesTheListWhenItsTimeHasPassed() async throws {
        let clock = ManualClock()
        try await withTestLab(loop: EventLoop(name: "manual time", clock: clock)) { lab in
            let a = try await lab.start("laptop-a", announceIntervalMillis: 300_000)
            let b = try await lab.start("laptop-b", announceIntervalMillis: 300_000)
            try await TestHost.pair(a, b)
            // The first contact after pairing keeps the announcements' spacing: time has to pass.
            _ = try await eventually("b to list a") {
                clock.advance(millis: 100)
                return try b.client().list().first { $0.name == "laptop-a" }
            }
            let expires = clock.wallMillis() + 60_000
            let activity = Activity(type: "org.example.reader.document", title: "a minute", expiresAtMillis: expires, sequence: 0)
            let receipt = try await a.call { try $0.publish(activity) }
            let offer = try await eventually("the offer on b") {
                clock.advance(millis: 100)
                return try b.client().list().first { $0.name == "laptop-a" }?.offer.flatMap { $0.sequence == receipt.sequence ? $0 : nil }
            }
            #expect(offer.expiresAtMillis == Int64(expires))
            // The polling above moved time on a little: step to just before the expiry, then past it
            // (well inside the 100 s its device stays listed after its last announcement).
            clock.advance(millis: expires - clock.wallMillis() - 1_000)
            #expect(try await b.call { try $0.list().first { $0.name == "laptop-a" }?.offer } != nil)
            // Past it. The expiry is judged on a's clock, as b last heard it: an announcement a sent
            // just before a step and b read just after it puts a's clock behind by up to the step,
            // so time moves on in small steps until the offer is gone (a few at most).
            clock.advance(millis: 1_100)
            let listed = try await eventually("the offer to leave b's list while its device stays listed") {
                let entry = try b.client().list().first { $0.name == "laptop-a" }
                if let entry, entry.offer == nil { return entry }
                clock.advance(millis: 100)
                return nil
            }
            #expect(listed.offer == nil)
            #expect(clock.wallMillis() < expires + 5_000, "it left within a few steps of its expiry")
        }
    }
}
