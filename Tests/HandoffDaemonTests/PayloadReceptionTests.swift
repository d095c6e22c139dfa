import Dispatch
import Foundation
import HandoffCore
import HandoffCrypto
@testable import HandoffDaemon
@testable import HandoffTransport
import Testing

// A payload over the real SecureChannel (socket pairs): received into one
// buffer, hashed on the side, cut midway and resumed from the last
// authenticated byte over a second channel.

private let sending = try! Identity(seed: [UInt8](repeating: 0x31, count: 32))
private let receiving = try! Identity(seed: [UInt8](repeating: 0x32, count: 32))
private let secrets = pairSecrets(receiving, sending)
private let now: UInt64 = 1_700_000_000_000

/// 3.5 MiB of userInfo: four records, the last one partial.
private let bigActivity = Activity(type: "org.example.reader.document", title: "Large",
                                   userInfo: ["blob": .data((0..<(7 << 19)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) })],
                                   sequence: now)
private let bigPayload = bigActivity.encodedPayload()

private func offer(for payload: [UInt8] = bigPayload, digest: [UInt8]? = nil) -> SignedSummary {
    let summary = Summary(senderKey: sending.publicKey, senderName: "alpha", activityType: bigActivity.type, title: bigActivity.title,
                          payloadSize: UInt32(payload.count), payloadDigest: digest ?? Blake2b.digest(payload),
                          sequence: now, timestampMillis: now, expiresAtMillis: now + 600_000)
    return try! summary.signed(by: sending)
}

/// A handshake over a fresh socket pair; the server side runs `serve` on its own thread.
private func channels(serve: @escaping @Sendable (SecureChannel) throws(HandoffError) -> Void) throws
    -> (client: SecureChannel, served: DispatchSemaphore) {
    let (clientConnection, serverConnection) = try connectedPair("receiver", "sender")
    let served = DispatchSemaphore(value: 0)
    Thread {
        defer {
            serverConnection.close()
            served.signal()
        }
        do throws(HandoffError) {
            let channel = try SecureChannel.accept(serverConnection, identity: sending) { _ in
                .answer(psk: secrets.handshakePSK, expectedClient: receiving.publicKey)
            }
            try serve(channel)
        } catch {}
    }.start()
    let client = try SecureChannel.connect(clientConnection, identity: receiving, purpose: .fetch, secrets: secrets)
    return (client, served)
}

/// The sender as `serveFetch` plays it: read the request, send the payload from its offset.
private func honest(_ payload: [UInt8], seen: Recorder<[UInt64]>) -> @Sendable (SecureChannel) throws(HandoffError) -> Void {
    { channel throws(HandoffError) in
        guard case let .fetch(request) = try channel.receive() else { return }
        seen.update { $0.append(request.offset) }
        try channel.sendPayload(payload, from: Int(request.offset))
        _ = try? channel.connection.read(exactly: 1)
    }
}

private func outcome(_ body: () throws(HandoffError) -> FetchedPayload) -> Result<FetchedPayload, HandoffError> {
    Result { () throws(HandoffError) in try body() }
}

@Suite struct PayloadReceptionTests {
    @Test func aLargePayloadLandsInOneSealedBufferAndIsScannedNotDecoded() throws {
        let seen = Recorder<[UInt64]>([])
        let (client, served) = try channels(serve: honest(bigPayload, seen: seen))
        let reception = PayloadReception(summary: offer().summary)
        var reports: [Int] = []
        let fetched = try Daemon.exchange(over: client, offer: offer(), reception: reception, progress: { reports.append($0) })
        client.close()
        served.wait()
        #expect(fetched.buffer.isSealed)
        #expect(Array(fetched.buffer.bytes) == bigPayload)
        #expect(fetched.header.type == bigActivity.type)
        #expect(fetched.header.userInfoOffset + fetched.header.userInfoBytes == bigPayload.count)
        #expect(try Activity(payload: fetched.buffer.copyBytes()) == bigActivity)
        // One report per record, at record boundaries: 1 MiB less the 6-byte header, then whole records.
        let record = SecureChannel.recordPlaintextBytes
        #expect(reports == [record - 6, 2 * record - 6, 3 * record - 6, bigPayload.count])
        #expect(seen.value == [0])
        #expect(reception.refetchedBytes == 0)
    }

    /// The resume point is the end of the last authenticated (and written) record; the second
    /// connection asks from there and gets exactly the rest.
    /// (The payload has four records; the reports of the last two come once all are read,
    /// the writer being a record behind the reader, so a cut after the third report is too late.)
    @Test(arguments: [1, 2])
    func aTransferCutAfterSomeRecordsResumesFromTheLastOne(_ records: Int) throws {
        let seen = Recorder<[UInt64]>([])
        let summary = offer().summary
        let reception = PayloadReception(summary: summary)
        let (first, firstServed) = try channels(serve: honest(bigPayload, seen: seen))
        let cut = outcome { () throws(HandoffError) in
            var count = 0
            return try Daemon.exchange(over: first, offer: offer(), reception: reception, progress: { _ in
                count += 1
                if count == records { first.connection.close() }
            })
        }
        firstServed.wait()
        guard case let .failure(error) = cut else {
            Issue.record("the cut transfer succeeded")
            return
        }
        #expect(error.code == .connectionLost)
        // The end of a record: the last one read before the cut, which is at or after the one
        // whose report cut it (records already read are still written, and count).
        let boundary = reception.authenticated
        let record = SecureChannel.recordPlaintextBytes
        #expect(boundary % record == record - 6 && boundary >= records * record - 6 && boundary < bigPayload.count, "\(boundary)")

        let (second, secondServed) = try channels(serve: honest(bigPayload, seen: seen))
        var starts: [PayloadStart] = []
        let fetched = try Daemon.exchange(over: second, offer: offer(), reception: reception, onStart: { starts.append($0) })
        second.close()
        secondServed.wait()
        #expect(seen.value == [0, UInt64(boundary)])
        #expect(starts == [PayloadStart(offset: boundary, length: bigPayload.count - boundary)])
        #expect(Array(fetched.buffer.bytes) == bigPayload)
        #expect(reception.refetchedBytes == 0)
    }

    /// A resumed answer must continue exactly where this receiver stands.
    @Test func aResumedAnswerFromTheWrongOffsetIsRefused() throws {
        let seen = Recorder<[UInt64]>([])
        let reception = PayloadReception(summary: offer().summary)
        let (first, firstServed) = try channels(serve: honest(bigPayload, seen: seen))
        _ = outcome { () throws(HandoffError) in
            try Daemon.exchange(over: first, offer: offer(), reception: reception, progress: { _ in first.connection.close() })
        }
        firstServed.wait()
        let held = reception.authenticated
        #expect(held > 0)
        let (second, secondServed) = try channels { channel throws(HandoffError) in
            guard case .fetch = try channel.receive() else { return }
            try channel.sendPayload(bigPayload, from: held - 1)
        }
        let wrong = outcome { () throws(HandoffError) in try Daemon.exchange(over: second, offer: offer(), reception: reception) }
        second.close()
        secondServed.wait()
        guard case let .failure(error) = wrong else {
            Issue.record("a misplaced resume was accepted")
            return
        }
        #expect(error.code == .payloadInvalid)
        #expect(reception.authenticated == held)
    }

    /// A fresh fetch answered with a resumed payload, or a whole payload of the wrong size, is refused from the header.
    @Test(arguments: [(bigPayload.count, 10), (bigPayload.count - 1, 0)])
    func theFirstAnswerMustBeTheWholePayloadOfTheSignedSize(_ count: Int, _ offset: Int) throws {
        let served = Array(bigPayload.prefix(count))
        let (client, done) = try channels { channel throws(HandoffError) in
            _ = try channel.receive()
            try channel.sendPayload(served, from: offset)
        }
        let reception = PayloadReception(summary: offer().summary)
        let result = outcome { () throws(HandoffError) in try Daemon.exchange(over: client, offer: offer(), reception: reception) }
        client.close()
        done.wait()
        guard case let .failure(error) = result else {
            Issue.record("accepted")
            return
        }
        #expect(error.code == .payloadInvalid)
        #expect(!reception.isStarted)
    }

    @Test func everyRequestNamesTheSignedDigestTheSenderVouchesFor() throws {
        // The receiver does not hash the bytes again: the sender serves only the payload whose
        // digest the request names (Daemon.answer refuses any other, SecureChannelTests), so each
        // request, fresh or resumed, must carry the signed summary's digest.
        let digests = Recorder<[[UInt8]]>([])
        let serve: @Sendable (SecureChannel) throws(HandoffError) -> Void = { channel throws(HandoffError) in
            guard case let .fetch(request) = try channel.receive() else { return }
            digests.update { $0.append(request.payloadDigest) }
            try channel.sendPayload(bigPayload, from: Int(request.offset))
            _ = try? channel.connection.read(exactly: 1)
        }
        let reception = PayloadReception(summary: offer().summary)
        let (first, firstServed) = try channels(serve: serve)
        let cut = outcome { () throws(HandoffError) in
            try Daemon.exchange(over: first, offer: offer(), reception: reception, progress: { _ in first.connection.close() })
        }
        firstServed.wait()
        #expect((try? cut.get()) == nil)
        let (second, secondServed) = try channels(serve: serve)
        let fetched = try Daemon.exchange(over: second, offer: offer(), reception: reception)
        second.close()
        secondServed.wait()
        #expect(Array(fetched.buffer.bytes) == bigPayload)
        #expect(digests.value == [offer().summary.payloadDigest, offer().summary.payloadDigest])
    }
}

@Suite struct ProgressThrottleTests {
    @Test func reportsAtMostTenASecondAndAlwaysTheEnd() {
        var throttle = ProgressThrottle(total: 64 << 20)
        var reported: [Int] = []
        // A record every 10 ms for a second, then the end.
        for step in 0..<100 where throttle.shouldReport(bytes: (step + 1) << 19, nowNanos: UInt64(step) * 10_000_000) {
            reported.append(step)
        }
        #expect(reported == Array(stride(from: 0, to: 100, by: 10)))
        let end = throttle.shouldReport(bytes: 64 << 20, nowNanos: 1_000_000_001)
        #expect(end)
        // Nothing after the end.
        let after = throttle.shouldReport(bytes: 64 << 20, nowNanos: 9_000_000_000)
        #expect(!after)
    }

    @Test func smallTransfersReportNothing() {
        var throttle = ProgressThrottle(total: 1 << 20)
        let middle = throttle.shouldReport(bytes: 1 << 19, nowNanos: 0)
        let end = throttle.shouldReport(bytes: 1 << 20, nowNanos: 1_000_000_000)
        #expect(!middle && !end)
    }
}

@Suite struct ResumeWindowTests {
    @Test func aCutWaitsThirtySecondsThenGivesUp() {
        var window = ResumeWindow(windowMillis: 30_000, expiresAtMillis: 1_000_000)
        #expect(window.failed(nowMillis: 100_000, authenticated: 5) == .wait(untilMillis: 130_000, newCut: true))
        // Attempts that get nothing further keep the same window.
        #expect(window.failed(nowMillis: 110_000, authenticated: 5) == .wait(untilMillis: 130_000, newCut: false))
        #expect(window.failed(nowMillis: 129_999, authenticated: 5) == .wait(untilMillis: 130_000, newCut: false))
        #expect(window.failed(nowMillis: 130_000, authenticated: 5) == .giveUp)
    }

    @Test func aConnectionThatMovedTheTransferOnOpensANewWindow() {
        var window = ResumeWindow(windowMillis: 30_000, expiresAtMillis: 1_000_000)
        _ = window.failed(nowMillis: 100_000, authenticated: 5)
        #expect(window.failed(nowMillis: 125_000, authenticated: 9) == .wait(untilMillis: 155_000, newCut: true))
    }

    @Test func theOffersExpiryEndsTheWaitSooner() {
        var window = ResumeWindow(windowMillis: 30_000, expiresAtMillis: 110_000)
        #expect(window.failed(nowMillis: 100_000, authenticated: 5) == .wait(untilMillis: 110_000, newCut: true))
        #expect(window.failed(nowMillis: 110_000, authenticated: 5) == .giveUp)
        var expired = ResumeWindow(windowMillis: 30_000, expiresAtMillis: 90_000)
        #expect(expired.failed(nowMillis: 100_000, authenticated: 5) == .giveUp)
    }
}
