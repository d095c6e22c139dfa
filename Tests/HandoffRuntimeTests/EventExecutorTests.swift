@testable import HandoffRuntime
import Testing

@Suite struct EventExecutorTests {
    /// The hook is taken once: a second install, or one over another executor's hook, changes nothing.
    @Test func installTakesAnEmptyHookOnly() {
        let slot = UnsafeMutablePointer<EventExecutor.Hook?>.allocate(capacity: 1)
        defer { slot.deallocate() }
        slot.initialize(to: nil)
        #expect(EventExecutor.install(into: slot))
        #expect(slot.pointee != nil)
        #expect(!EventExecutor.install(into: slot))

        let theirs: EventExecutor.Hook = { job, original in original(job) }
        slot.pointee = theirs
        #expect(!EventExecutor.install(into: slot))
        #expect(unsafeBitCast(slot.pointee, to: UnsafeRawPointer?.self) == unsafeBitCast(theirs, to: UnsafeRawPointer?.self))
    }
}
