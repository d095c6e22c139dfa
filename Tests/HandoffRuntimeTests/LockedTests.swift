import HandoffRuntime
import Testing

@Suite struct LockedTests {
    @Test func aWaiterWakesWhenTheValueIsReadyAndRunsItsBodyUnderTheLock() async {
        let box = Locked(0)
        let seen = await withCheckedContinuation { done in
            Threads.start("waiter") {
                done.resume(returning: box.wait(until: { $0 >= 3 }) { value -> Int in value += 10; return value })
            }
            for _ in 0..<3 {
                Threads.sleep(seconds: 0.005)
                box.withLockWakingWaiters { $0 += 1 }
            }
        }
        #expect(seen == 13)
        #expect(box.withLock { $0 } == 13)
    }

    @Test func aWaitWithADeadlineGivesUpWithoutRunningItsBody() {
        let box = Locked(false)
        let started = monotonicMillis()
        let result = box.wait(until: { $0 }, millis: 50) { _ in "ran" }
        #expect(result == nil)
        #expect(monotonicMillis() - started >= 50)
        box.withLockWakingWaiters { $0 = true }
        #expect(box.wait(until: { $0 }, millis: 50) { _ in "ran" } == "ran")
    }

    @Test func signalsCountAndTimeOut() {
        let signals = Signals(value: 2)
        #expect(signals.wait(millis: 0))
        #expect(signals.wait(millis: 0))
        #expect(!signals.wait(millis: 20))
        signals.signal()
        signals.wait()
        #expect(!signals.wait(millis: 0))
    }
}
