import HandoffCore
import HandoffDaemon
import HandoffRuntime
import HandoffTestSupport
import HandoffTransport
import Testing

/// The daemon's actor runs on its event loop, so nothing it does may wait for the loop. A
/// discovery path whose stop needs the loop (the BlueZ backend sends its goodbye to bluetoothd
/// from there, and waits up to 3 s for it) is stopped after the actor's part of the shutdown,
/// from the thread that finishes it.
@Suite struct ShutdownTests {
    final class LoopStoppedPath: DiscoveryPath {
        let name = DiscoveryPathName.mdns
        private let loop: EventLoop
        private let stoppedWithTheLoop = Locked<Bool?>(nil)

        init(loop: EventLoop) { self.loop = loop }

        let abilities: PathAbilities = [.find]
        var health: PathHealth { PathHealth(.working, "test") }
        var stopped: Bool? { stoppedWithTheLoop.withLock { $0 } }
        func start(observer: @escaping @Sendable (DiscoveryObservation) -> Void) throws(HandoffError) {}
        func announce(_ datagrams: [OutgoingAnnouncement]) {}

        /// As BlueZPresence.stop: the goodbye is the loop's work, waited for within a bound.
        func stop() {
            let done = Signals(value: 0)
            loop.execute { done.signal() }
            let ran = done.wait(millis: 2_000)
            // The first stop tells: a path is stopped once.
            stoppedWithTheLoop.withLock { if $0 == nil { $0 = ran } }
        }
    }

    @Test func aPathWhoseStopNeedsTheLoopStopsWithIt() async throws {
        let loop = EventLoop(name: "shutdown test")
        let path = LoopStoppedPath(loop: loop)
        let host = try await TestHost.start("laptop-a", hub: LoopbackHub(), loop: loop, paths: [path])
        defer { host.remove() }
        await host.stop()
        // Stopped on the loop, it would have waited its 2 s for a step the loop could not take.
        #expect(path.stopped == true)
    }
}
