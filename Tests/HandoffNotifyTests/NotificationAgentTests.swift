@testable import HandoffNotify
import Testing

@Suite struct RequestQueueTests {
    /// Events come in bursts: refreshes not yet started wait as one, and run in order with other work.
    @Test func queuedRefreshesRunOnce() {
        let queue = RequestQueue()
        let offer = OfferNotice(peer: "P", name: "n", type: "t", title: "x", sequence: 1, deliverTo: "browser", remainingMillis: 1)
        queue.add(.refresh)
        queue.add(.refresh)
        queue.add(.decline(offer))
        queue.add(.refresh)
        #expect(queue.take() == .refresh)
        queue.add(.refresh) // the queued one has started: this one runs after it
        #expect(queue.take() == .decline(offer))
        #expect(queue.take() == .refresh)
        queue.add(.stop)
        #expect(queue.take() == .stop)
    }
}
