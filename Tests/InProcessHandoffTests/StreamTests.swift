import HandoffAPI
import HandoffCore
import HandoffCrypto
import HandoffKit
import HandoffTestSupport
import HandoffTransport
import HandoffRuntime
import Testing

/// Continuation streams between an app on a (waiting, through UserActivity) and an app on b
/// (opening, after accepting): bytes both ways at once, half-close each way, one app closing,
/// and the refusals with their codes. Moved from the lab's test_streams; the real reader
/// app over a stream stays there.
@Suite(.serialized) struct StreamTests {
    static let type = "org.example.streams.document"

    /// a publishes `title` (with streams, unless told not to) through a UserActivity and b accepts it.
    static func published(_ title: String, streams: Bool = true, on a: TestHost, to b: TestHost) async throws -> UserActivity {
        let activity = try await blocking {
            let activity = UserActivity(type: type, client: try a.client(publisher: "streams-app"))
            activity.title = title
            activity.userInfo = ["draft": .string("unsaved")]
            activity.supportsContinuationStreams = streams
            try activity.becomeCurrent()
            return activity
        }
        _ = try await eventually("b to list \(title)") {
            try b.client().list().first { $0.name == "laptop-a" }?.offer.flatMap { $0.title == title ? $0 : nil }
        }
        let accepted = try await b.call { try $0.accept(peer: "laptop-a") }
        #expect(accepted.activity.supportsContinuationStreams == streams)
        return activity
    }

    /// b opens the stream, again while a's app has not started waiting (`app`).
    static func open(from b: TestHost, sequence: UInt64) async throws -> ContinuationStream {
        let deadline = monotonicMillis() + 10_000
        while true {
            do {
                return try await b.call { try $0.openContinuationStream(peer: "laptop-a", sequence: sequence) }
            } catch let error as HandoffError where error.code == .app && monotonicMillis() < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
        }
    }

    /// Both ends of a stream: a's (waiting) and b's (opening).
    static func connected(_ title: String, _ a: TestHost, _ b: TestHost) async throws -> (a: ContinuationStream, b: ContinuationStream) {
        let activity = try await published(title, on: a, to: b)
        async let waiting = blocking { try activity.awaitContinuationStream() }
        let sequence = try await b.call { try $0.list().first { $0.name == "laptop-a" }?.offer?.sequence ?? 0 }
        let opened = try await open(from: b, sequence: UInt64(sequence))
        return (try await waiting, opened)
    }

    static func readAll(_ stream: ContinuationStream) throws -> [UInt8] {
        try stream.readToEnd(limit: 16 << 20)
    }

    static func code(_ work: () throws -> Void) -> HandoffError.Code? {
        do {
            try work()
            return nil
        } catch let error as HandoffError {
            return error.code
        } catch {
            return .internal
        }
    }

    @Test func fourMebibytesEachWayAtOnce() async throws {
        try await withTestLab { lab in
            let (a, b) = try await lab.pairedHosts()
            let (onA, onB) = try await Self.connected("Both ways", a, b)
            let toB = Random.bytes(4 << 20), toA = Random.bytes(4 << 20)
            @Sendable func side(_ stream: ContinuationStream, sending data: [UInt8]) async throws -> [UInt8] {
                // Odd-sized pieces while the same side reads, then half-close.
                async let sent: Void = blocking {
                    for start in stride(from: 0, to: data.count, by: 100_003) {
                        try stream.write(Array(data[start..<min(start + 100_003, data.count)]))
                    }
                    stream.closeWrite()
                }
                let received = try await blocking { try Self.readAll(stream) }
                try await sent
                return received
            }
            async let atB = side(onB, sending: toA)
            let atA = try await side(onA, sending: toB)
            #expect(try await atB == toB, "a -> b bytes differ")
            #expect(atA == toA, "b -> a bytes differ")
            onA.close()
            onB.close()
        }
    }

    @Test func halfCloseEachWay() async throws {
        try await withTestLab { lab in
            let (a, b) = try await lab.pairedHosts()
            for firstIsA in [true, false] {
                let (onA, onB) = try await Self.connected(firstIsA ? "Half close" : "Half close, b first", a, b)
                let (first, second) = firstIsA ? (onA, onB) : (onB, onA)
                // The first says its piece and stops writing: the second reads it, then end of stream...
                try await blocking {
                    try first.write(Array("unsaved text".utf8))
                    first.closeWrite()
                }
                #expect(try await blocking { try Self.readAll(second) } == Array("unsaved text".utf8))
                // ...while the second can still write and the first still reads, until it stops too.
                try await blocking {
                    try second.write(Array("thanks".utf8))
                    second.closeWrite()
                }
                #expect(try await blocking { try Self.readAll(first) } == Array("thanks".utf8))
                onA.close()
                onB.close()
            }
        }
    }

    @Test func closingOneAppEndsTheStreamForTheOther() async throws {
        try await withTestLab { lab in
            let (a, b) = try await lab.pairedHosts()
            let (onA, onB) = try await Self.connected("Close", a, b)
            onA.close()
            // b reads end of stream; once its bytes find a's app gone, the whole stream ends.
            #expect(try await blocking { try Self.readAll(onB) } == [])
            _ = try await eventually("b's writes to fail") { Self.code { try onB.write([UInt8](repeating: 0x78, count: 65536)) } }
            onB.close()
        }
    }

    @Test func refusalsNameTheirCause() async throws {
        try await withTestLab { lab in
            let (a, b) = try await lab.pairedHosts()
            @Sendable func sequence() async throws -> UInt64 {
                UInt64(try await b.call { try $0.list().first { $0.name == "laptop-a" }?.offer?.sequence ?? 0 })
            }

            // Nobody waits on a: a refuses, authenticated, with `app`.
            _ = try await Self.published("Nobody waits", on: a, to: b)
            let nobody = try await sequence()
            do {
                _ = try await b.call { try $0.openContinuationStream(peer: "laptop-a", sequence: nobody) }
                Issue.record("a stream nobody waits for was opened")
            } catch let error as HandoffError {
                #expect(error.code == .app && error.message.contains("laptop-a refused the stream"))
            }

            // An activity without streams: the app on a cannot wait, and a refuses b with the same code.
            let plain = try await Self.published("No streams", streams: false, on: a, to: b)
            let cannotWait = try await blocking { Self.code { _ = try plain.awaitContinuationStream() } }
            #expect(cannotWait == .invalidRequest)
            let plainSequence = try await sequence()
            do {
                _ = try await b.call { try $0.openContinuationStream(peer: "laptop-a", sequence: plainSequence) }
                Issue.record("a stream to an activity without streams was opened")
            } catch let error as HandoffError {
                #expect(error.code == .invalidRequest && error.message.contains("without continuation streams"))
            }

            // A wait ends when the activity stops being current; its sequence is then refused either side.
            let resigned = try await Self.published("Resigned", on: a, to: b)
            let stale = try await sequence()
            async let waited = blocking { Self.code { _ = try resigned.awaitContinuationStream() } }
            try await Task.sleep(for: .milliseconds(300))
            try await blocking { try resigned.resignCurrent() }
            #expect(try await waited == .notCurrent)
            let staleRefused = try await b.call { client in Self.code { _ = try client.openContinuationStream(peer: "laptop-a", sequence: stale) } }
            #expect(staleRefused == .notCurrent)
        }
    }
}
