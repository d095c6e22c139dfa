import Glibc
import HandoffAPI
import HandoffCore
import HandoffKit
import HandoffTestSupport
import HandoffTransport
import HandoffRuntime
import Testing

/// Two real daemons in this process hand off as two laptops do: real pairing, sealed
/// announcements (through a loopback hub instead of a network), the encrypted fetch over
/// 127.0.0.1, HandoffKit on their local API sockets. Moved from the lab's test_two_hosts and
/// test_replay: none of it needs a namespace.
@Suite(.serialized) struct TwoHostTests {
    static let type = "org.example.reader.document"
    static let userInfo: [String: PropertyListValue] = [
        "page": .integer(42), "scroll": .double(0.625), "done": .bool(false),
        "tags": .array([.string("atomics"), .string("rust"), .dictionary(["nested": .bool(true)])]),
        "thumbnail": .data(Array(0...255)), "opened": .date(1_795_940_100),
        "chapter": .dictionary(["title": .string("Memory ordering"), "number": .integer(3)]),
    ]

    init() {
        // The activity has a web page and no app here declares its type: it opens in "the browser", which succeeds.
        setenv("BROWSER", "true", 1)
    }

    static func activity(title: String = "Rust atomics, chapter 3") -> Activity {
        Activity(type: type, title: title, userInfo: userInfo, targetContentIdentifier: "document:3F2A",
                 webpageURL: "https://example.org/atomics", expiresAtMillis: nil, sequence: 0)
    }

    /// What b lists of a's offer once it has `sequence` (or, with nil, any offer; absent: nil).
    static func offer(on b: TestHost, sequence: Int64? = nil) throws -> OfferInfo? {
        guard let offer = try b.client().list().first(where: { $0.name == "laptop-a" })?.offer else { return nil }
        return sequence.map { $0 == offer.sequence } ?? true ? offer : nil
    }

    @Test func publishListAcceptDeliversTheIdenticalPayload() async throws {
        try await withTestLab { lab in
            let (a, b) = try await lab.pairedHosts()
            let receipt = try await a.call { try $0.publish(Self.activity()) }
            let offer = try await eventually("the offer on b") { try Self.offer(on: b, sequence: receipt.sequence) }
            #expect(offer.type == Self.type && offer.title == "Rust atomics, chapter 3" && offer.payloadSize == receipt.payloadBytes)

            let accepted = try await blocking { try b.client().accept(peer: "laptop-a") }
            #expect(accepted.activity == {
                var sent = Self.activity()
                sent.sequence = UInt64(receipt.sequence)
                return sent
            }())
            #expect(accepted.result.deliverTo == "browser")
            #expect(try await a.call { try $0.status().transfers.served } >= 1)
        }
    }

    /// Accept and decline mean the offer the person saw (review, round three, item 3): once a
    /// newer offer replaced it, both answer not-current, nothing is fetched, and the newer
    /// offer stays listed; the offer shown, by sequence and digest, is fetched.
    @Test func acceptAndDeclineAreBoundToTheOfferShown() async throws {
        try await withTestLab { lab in
            let (a, b) = try await lab.pairedHosts()
            let first = try await a.call { try $0.publish(Self.activity(title: "first")) }
            let shown = try await eventually("the first offer on b") { try Self.offer(on: b, sequence: first.sequence) }
            let second = try await a.call { try $0.publish(Self.activity(title: "second")) }
            let newer = try await eventually("the second offer on b") { try Self.offer(on: b, sequence: second.sequence) }
            let servedBefore = try await a.call { try $0.status().transfers.served }
            let stale = HandoffClient.Chosen(sequence: shown.sequence, digest: shown.digest)
            let refusal = try await blocking { () -> HandoffError.Code? in
                do {
                    _ = try b.client().accept(peer: "laptop-a", chosen: stale)
                    return nil
                } catch { return (error as? HandoffError)?.code }
            }
            #expect(refusal == .notCurrent)
            let declined = try await b.call { client -> HandoffError.Code? in
                do {
                    _ = try client.decline(peer: "laptop-a", sequence: shown.sequence)
                    return nil
                } catch { return (error as? HandoffError)?.code }
            }
            #expect(declined == .notCurrent)
            #expect(try await a.call { try $0.status().transfers.served } == servedBefore, "nothing was fetched")
            // A digest that is not the offer's is refused too, at the right sequence.
            let forged = HandoffClient.Chosen(sequence: newer.sequence, digest: String(repeating: "00", count: 32))
            let wrongDigest = try await blocking { () -> HandoffError.Code? in
                do {
                    _ = try b.client().accept(peer: "laptop-a", chosen: forged)
                    return nil
                } catch { return (error as? HandoffError)?.code }
            }
            #expect(wrongDigest == .notCurrent)
            let accepted = try await blocking { try b.client().accept(peer: "laptop-a", chosen: .init(sequence: newer.sequence, digest: newer.digest)) }
            #expect(accepted.activity.title == "second")
        }
    }

    @Test func resignWithdrawsAndInvalidateEnds() async throws {
        try await withTestLab { lab in
            let (a, b) = try await lab.pairedHosts()
            _ = try await a.call { try $0.publish(Self.activity()) }
            _ = try await eventually("the offer on b") { try Self.offer(on: b) }
            #expect(try await a.call { try $0.resign() })
            _ = try await eventually("b to drop the offer", within: 3) { try Self.offer(on: b) == nil ? true : nil }
            // Still listed: resigning withdraws the offer, not the host.
            #expect(try await b.call { try $0.list().contains { $0.name == "laptop-a" } })
            let refused = try await b.call { client in (try? client.acceptWithoutPayload(peer: "laptop-a")) == nil }
            #expect(refused)
            _ = try await a.call { try $0.publish(Self.activity()) }
            _ = try await eventually("the offer on b again") { try Self.offer(on: b) }
            #expect(try await a.call { try $0.invalidate() })
            _ = try await eventually("b to drop the offer", within: 3) { try Self.offer(on: b) == nil ? true : nil }
        }
    }

    @Test func aDeclineHidesTheOfferUntilANewerOne() async throws {
        try await withTestLab { lab in
            let (a, b) = try await lab.pairedHosts()
            let first = try await a.call { try $0.publish(Self.activity()) }
            _ = try await eventually("the offer on b") { try Self.offer(on: b, sequence: first.sequence) }
            _ = try await b.call { try $0.decline(peer: "laptop-a") }
            let hidden = try await blocking { try Self.offer(on: b) }
            #expect(hidden == nil)
            let second = try await a.call { try $0.publish(Self.activity(title: "Rust atomics, chapter 5")) }
            _ = try await eventually("the newer offer") { try Self.offer(on: b, sequence: second.sequence) }
        }
    }

    @Test func stoppingSaysGoodbyeAtOnceAndARestartKeepsTheIdentity() async throws {
        try await withTestLab { lab in
            let (a, b) = try await lab.pairedHosts()
            let idBefore = try await a.call { try $0.identity().deviceID }
            await lab.stop(a)
            // At once: a TTL (100 s here) would take far longer than this bound.
            // At once, even if a has not heard b yet (just paired): every paired device gets the goodbye.
            _ = try await eventually("b to drop a at once", within: 2) { try b.client().list().contains { $0.name == "laptop-a" } ? nil : true }
            let again = try await lab.start("laptop-a", directory: a.directory)
            #expect(try await again.call { try $0.identity().deviceID } == idBefore)
            _ = try await eventually("b to see a again") { try b.client().list().first { $0.name == "laptop-a" } }
        }
    }

    @Test func aDatagramCapturedBeforeARestartDoesNotBringBackAWithdrawnOffer() async throws {
        try await withTestLab { lab in
            let (a, b) = try await lab.pairedHosts()
            let receipt = try await a.call { try $0.publish(Self.activity(title: "soon withdrawn")) }
            _ = try await eventually("b to list it") { try Self.offer(on: b, sequence: receipt.sequence) }
            // Every datagram from here on; a's, sent while the offer stands, carry it (sealed for b). Both
            // keep alive every second: four datagrams hold at least one of a's.
            let captured = Captured()
            lab.hub.tap { captured.add($0) }
            _ = try await eventually("datagrams carrying the offer", within: 5) { captured.count >= 4 ? true : nil }
            let carrying = captured.all
            #expect(try await a.call { try $0.invalidate() })
            _ = try await eventually("b to see the offer withdrawn") { try Self.offer(on: b) == nil ? true : nil }
            // a goes quiet, so only what b kept on disk can tell the capture is old.
            await lab.stop(a)
            await lab.stop(b)
            let restarted = try await lab.start("laptop-b", directory: b.directory)
            let before = try await restarted.call { try $0.status().drops["replayed"]?.integerValue ?? 0 }
            for datagram in carrying { lab.hub.inject(datagram) }
            _ = try await eventually("b to count the replay") {
                (try restarted.client().status().drops["replayed"]?.integerValue ?? 0) > before ? true : nil
            }
            #expect(try await restarted.call { try $0.list().contains { $0.name == "laptop-a" } } == false)
        }
    }
}

/// Datagrams a hub tap saw, from any thread.
final class Captured: Sendable {
    private let datagrams = Locked<[[UInt8]]>([])
    func add(_ bytes: [UInt8]) { datagrams.withLock { $0.append(bytes) } }
    var all: [[UInt8]] { datagrams.withLock { $0 } }
    var count: Int { datagrams.withLock { $0.count } }
}
