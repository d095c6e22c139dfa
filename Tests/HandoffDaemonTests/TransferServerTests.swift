import HandoffCore
import HandoffCrypto
@testable import HandoffDaemon
import Testing

private let host = try! Identity(seed: [UInt8](repeating: 7, count: 32))
private let peer = try! Identity(seed: [UInt8](repeating: 8, count: 32)).publicKey

private func published(streams: Bool = false, expiresAtMillis: UInt64? = nil, sequence: UInt64 = 42) throws -> PublishedActivity {
    var activity = Activity(type: "org.example.read", title: "Chapter 3", supportsContinuationStreams: streams)
    activity.expiresAtMillis = expiresAtMillis
    var encoded = try EncodedActivity(activity)
    encoded.sequence = sequence
    let summary = Summary(senderKey: host.publicKey, senderName: "alpha", activityType: activity.type, title: activity.title,
                          payloadSize: UInt32(encoded.payload.count), payloadDigest: Blake2b.digest(encoded.payload),
                          sequence: sequence, timestampMillis: 1_000, expiresAtMillis: expiresAtMillis ?? 10_000_000)
    return PublishedActivity(encoded: encoded, summary: try summary.signed(by: host), publisher: "reader", generation: 1)
}

private func request(_ purpose: TransferServer.Purpose, citing current: PublishedActivity, offset: UInt64 = 0,
                     trusted: Bool = true, enabled: Bool = true, nowMillis: UInt64 = 2_000) -> TransferServer.Request {
    let summary = current.summary.summary
    return TransferServer.Request(purpose: purpose,
                                  cited: .init(summarySender: summary.senderKey, summarySequence: summary.sequence,
                                               payloadDigest: summary.payloadDigest, offset: offset),
                                  requesterTrusted: trusted, enabled: enabled, hostName: "alpha", ownKey: host.publicKey, nowMillis: nowMillis)
}

private func refusal(_ admission: TransferServer.Admission) -> HandoffError.Code? {
    if case let .refuse(refusal) = admission { return refusal.code }
    return nil
}

@Suite struct TransferServerTests {
    @Test func aPairedDeviceCitingTheCurrentSummaryGetsItByFetchAndByStream() throws {
        let current = try published(streams: true)
        for purpose in [TransferServer.Purpose.fetch, .stream] {
            guard case let .admit(admitted) = TransferServer.admission(request(purpose, citing: current), current: current) else {
                Issue.record("refused \(purpose)")
                continue
            }
            #expect(admitted.activity.sequence == 42)
        }
    }

    @Test func fetchAndStreamAreRefusedForTheSameReasonsInTheSameOrder() throws {
        let current = try published(streams: true)
        for purpose in [TransferServer.Purpose.fetch, .stream] {
            // Trust first: a device no longer trusted learns nothing else, not even that Handoff is off.
            #expect(refusal(TransferServer.admission(request(purpose, citing: current, trusted: false, enabled: false), current: current)) == .trust)
            #expect(refusal(TransferServer.admission(request(purpose, citing: current, enabled: false), current: current)) == .enabled)
            #expect(refusal(TransferServer.admission(request(purpose, citing: current), current: nil)) == .notCurrent)
            let older = try published(streams: true, sequence: 41)
            #expect(refusal(TransferServer.admission(request(purpose, citing: older), current: current)) == .notCurrent)
        }
    }

    @Test func aCitationMustMatchSenderSequenceAndDigestExactly() throws {
        let current = try published()
        var wrongDigest = request(.fetch, citing: current)
        wrongDigest.cited.payloadDigest[0] ^= 1
        #expect(refusal(TransferServer.admission(wrongDigest, current: current)) == .notCurrent)
        var wrongSender = request(.fetch, citing: current)
        wrongSender.cited.summarySender = peer
        #expect(refusal(TransferServer.admission(wrongSender, current: current)) == .notCurrent)
    }

    @Test func anExpiredActivityIsNoLongerServed() throws {
        let current = try published(expiresAtMillis: 5_000)
        #expect(refusal(TransferServer.admission(request(.fetch, citing: current, nowMillis: 4_999), current: current)) == nil)
        #expect(refusal(TransferServer.admission(request(.fetch, citing: current, nowMillis: 5_000), current: current)) == .notCurrent)
    }

    @Test func aResumeMayNotStartPastTheEndAndAStreamNeedsAnActivityPublishedForStreams() throws {
        let current = try published()
        let size = UInt64(current.payload.count)
        #expect(refusal(TransferServer.admission(request(.fetch, citing: current, offset: size - 1), current: current)) == nil)
        #expect(refusal(TransferServer.admission(request(.fetch, citing: current, offset: size), current: current)) == .invalidRequest)
        #expect(refusal(TransferServer.admission(request(.stream, citing: current), current: current)) == .invalidRequest)
    }
}
