import HandoffCore
@testable import HandoffDaemon
import HandoffRuntime
import Testing

/// The inbox between discovery and the actor: drains in batches where it is told to, in order,
/// and takes nothing once the daemon stopped.
@Suite struct ObservationInboxTests {
    /// Runs the drains when the test says, as the actor's loop would, one at a time.
    final class ManualSchedule: Sendable {
        private let pending = Locked<[@Sendable () -> Void]>([])
        func schedule(_ work: @escaping @Sendable () -> Void) { pending.withLock { $0.append(work) } }
        var count: Int { pending.withLock { $0.count } }
        func runAll() {
            while let next = pending.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) { next() }
        }
    }

    private func announcement(_ byte: UInt8) -> DiscoveryObservation {
        .announcement(bytes: [byte], fromHost: "fe80::1%eth0", path: .multicast)
    }

    private func bytes(_ batches: [[DiscoveryObservation]]) -> [UInt8] {
        batches.flatMap { $0 }.compactMap { if case let .announcement(bytes, _, _) = $0 { bytes.first } else { nil } }
    }

    @Test func observationsPostedBeforeTheDrainRunsArriveInOneBatchInOrder() {
        let schedule = ManualSchedule()
        let delivered = Locked<[[DiscoveryObservation]]>([])
        let inbox = ObservationInbox(schedule: schedule.schedule, deliver: { batch in delivered.withLock { $0.append(batch) } })
        for byte: UInt8 in 1...3 { inbox.post(announcement(byte)) }
        // One drain for the three: later posts join the queue it takes.
        #expect(schedule.count == 1)
        schedule.runAll()
        #expect(delivered.withLock { $0.count } == 1)
        #expect(bytes(delivered.withLock { $0 }) == [1, 2, 3])
        inbox.post(announcement(4))
        schedule.runAll()
        #expect(bytes(delivered.withLock { $0 }) == [1, 2, 3, 4])
    }

    /// After shutdown the paths may still hear peers until they stop: none of it reaches the
    /// actor, which said goodbye already.
    @Test func aClosedInboxDropsWhatIsQueuedAndWhatComesLater() {
        let schedule = ManualSchedule()
        let delivered = Locked<[[DiscoveryObservation]]>([])
        let inbox = ObservationInbox(schedule: schedule.schedule, deliver: { batch in delivered.withLock { $0.append(batch) } })
        inbox.post(announcement(1))
        inbox.close()
        inbox.post(announcement(2))
        schedule.runAll()
        #expect(delivered.withLock { $0 }.isEmpty)
    }
}
