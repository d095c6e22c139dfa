import Dispatch
import Foundation
import Glibc
import HandoffCore
import HandoffCrypto
@testable import HandoffDaemon
@testable import HandoffTransport
import HandoffRuntime
import Testing

// MARK: - An in-memory FrameChannel pair

/// One direction of an in-memory connection: encoded frames in order. Closing it
/// lets the reader drain what was sent, then fail like a closed socket.
final class FrameQueue: Sendable {
    private let state = Locked<(frames: [[UInt8]], closed: Bool)>(([], false))
    private let available = DispatchSemaphore(value: 0)

    func push(_ bytes: [UInt8]) throws(HandoffError) {
        let accepted = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.frames.append(bytes)
            return true
        }
        guard accepted else { throw HandoffError(.connectionLost, "in-memory peer closed", fix: "none") }
        available.signal()
    }

    func close() {
        let wasOpen = state.withLock { state -> Bool in
            defer { state.closed = true }
            return !state.closed
        }
        if wasOpen { available.signal() }
    }

    func pop(timeoutSeconds: Int = 30) throws(HandoffError) -> [UInt8] {
        guard available.wait(timeout: .now() + .seconds(timeoutSeconds)) == .success else {
            throw HandoffError(.timedOut, "in-memory peer sent nothing", fix: "none")
        }
        if let next = state.withLock({ $0.frames.isEmpty ? nil : $0.frames.removeFirst() }) { return next }
        available.signal()  // Keep the end of stream visible to the next reader.
        throw HandoffError(.connectionLost, "in-memory peer closed", fix: "none")
    }
}

/// A `FrameChannel` end. Frames travel encoded, so both sides go through the real codec.
struct MemoryFrameChannel: FrameChannel {
    let incoming: FrameQueue
    let outgoing: FrameQueue

    static func pair() -> (client: MemoryFrameChannel, server: MemoryFrameChannel) {
        let toServer = FrameQueue(), toClient = FrameQueue()
        return (MemoryFrameChannel(incoming: toClient, outgoing: toServer), MemoryFrameChannel(incoming: toServer, outgoing: toClient))
    }

    func send(_ frame: TransferFrame) throws(HandoffError) { try outgoing.push(frame.encoded()) }

    func sendRaw(_ bytes: [UInt8]) throws(HandoffError) { try outgoing.push(bytes) }

    func receive() throws(HandoffError) -> TransferFrame {
        let bytes = try incoming.pop()
        do {
            return try TransferFrame(decoding: bytes)
        } catch {
            throw HandoffError(.payloadInvalid, "bad frame: \(error)", fix: "none")
        }
    }

    func close() {
        incoming.close()
        outgoing.close()
    }
}

/// Collects what the scripted sender saw, across threads.
final class Recorder<Value: Sendable>: Sendable {
    private let storage: Locked<Value>
    init(_ value: Value) { storage = Locked(value) }
    func update(_ body: (inout Value) -> Void) { storage.withLock { body(&$0) } }
    var value: Value { storage.withLock { $0 } }
}

// MARK: - Fixtures

private let sender = try! Identity(seed: [UInt8](repeating: 5, count: 32))
private let receiver = try! Identity(seed: [UInt8](repeating: 6, count: 32))
private let stranger = try! Identity(seed: [UInt8](repeating: 7, count: 32))
private let now: UInt64 = 1_700_000_000_000

private let activity = Activity(type: "org.example.reader.document", title: "Chapter 1",
                                userInfo: ["page": .integer(42), "cover": .data([0xDE, 0xAD])],
                                targetContentIdentifier: "document:moby-dick", webpageURL: "https://example.org/moby-dick",
                                expiresAtMillis: now + 600_000, sequence: now)
private let payload = activity.encodedPayload()

private func makeOffer(for payload: [UInt8] = payload, title: String = "Chapter 1", sequence: UInt64 = now,
                       size: UInt32? = nil) -> SignedSummary {
    let summary = Summary(senderKey: sender.publicKey, senderName: "alpha", activityType: "org.example.reader.document",
                          title: title, payloadSize: size ?? UInt32(payload.count), payloadDigest: Blake2b.digest(payload),
                          sequence: sequence, timestampMillis: now, expiresAtMillis: now + 600_000)
    return try! summary.signed(by: sender)
}

/// What the scripted sender saw.
struct SeenFetch: Sendable {
    var request: TransferFrame.FetchRequest?
    var serverError: HandoffError?
}

/// Runs `Daemon.exchange` as the receiver against `serve`, which plays the sender on its own thread.
/// (The channel stands for the one SecureChannel sets up: who is at each end is already proven.)
private func runExchange(offer: SignedSummary, identity: Identity = receiver,
                         serve: @escaping @Sendable (MemoryFrameChannel, Recorder<SeenFetch>) throws(HandoffError) -> Void)
    -> (result: Result<Activity, HandoffError>, seen: SeenFetch) {
    let (client, server) = MemoryFrameChannel.pair()
    let recorder = Recorder(SeenFetch())
    let finished = DispatchSemaphore(value: 0)
    let thread = Thread {
        do throws(HandoffError) {
            try serve(server, recorder)
        } catch {
            recorder.update { $0.serverError = error }
        }
        server.close()
        finished.signal()
    }
    thread.start()
    let result = Result { () throws(HandoffError) -> Activity in
        try Daemon.exchange(over: client, offer: offer, identity: identity)
    }
    client.close()
    #expect(finished.wait(timeout: .now() + .seconds(40)) == .success, "scripted sender did not finish")
    return (result, recorder.value)
}

/// The sender's side as handoffd plays it once the channel is up: read the fetch, answer with `reply`.
private func honestSender(reply: @escaping @Sendable (TransferFrame.FetchRequest) -> TransferFrame)
    -> @Sendable (MemoryFrameChannel, Recorder<SeenFetch>) throws(HandoffError) -> Void {
    { channel, recorder throws(HandoffError) in
        guard case let .fetch(request) = try channel.receive() else {
            try channel.send(.refusal(.init(code: .invalidRequest, message: "expected a fetch request")))
            return
        }
        recorder.update { $0.request = request }
        try channel.send(reply(request))
    }
}

private func failure(_ result: Result<Activity, HandoffError>) -> HandoffError? {
    if case let .failure(error) = result { return error }
    Issue.record("the exchange succeeded but should have failed")
    return nil
}

// MARK: - Tests

@Suite struct TransferExchangeTests {
    @Test func successReturnsTheActivity() throws {
        let offer = makeOffer()
        let (result, seen) = runExchange(offer: offer, serve: honestSender { _ in .payload(payload) })
        #expect(try result.get() == activity)
        // The receiver opens with the fetch, citing the offer: the sender serves only the payload
        // of that digest, which is why the receiver does not hash the bytes again.
        let request = try #require(seen.request)
        #expect(request.summarySender == sender.publicKey)
        #expect(request.summarySequence == offer.summary.sequence)
        #expect(request.payloadDigest == offer.summary.payloadDigest)
        #expect(seen.serverError == nil)
    }

    @Test func theFetchIsTheOnlyFrameTheReceiverSends() throws {
        let (result, seen) = runExchange(offer: makeOffer()) { channel, recorder throws(HandoffError) in
            guard case let .fetch(request) = try channel.receive() else { return }
            recorder.update { $0.request = request }
            try channel.send(.payload(payload))
            // After the answer the receiver only hangs up.
            _ = try channel.receive()
        }
        #expect(try result.get() == activity)
        #expect(seen.request != nil)
        #expect(seen.serverError?.code == .connectionLost)
    }


    /// `delta` bytes more or fewer than the summary says; 0 stands for an empty payload.
    @Test(arguments: [0, 1, -1, 1000])
    func wrongSizeIsPayloadInvalid(_ delta: Int) throws {
        let served = delta < 0 ? Array(payload.dropLast(-delta)) : (delta == 0 ? [] : payload + [UInt8](repeating: 0, count: delta))
        let (result, _) = runExchange(offer: makeOffer(), serve: honestSender { _ in .payload(served) })
        let error = failure(result)
        #expect(error?.code == .payloadInvalid)
        #expect(error?.message == "The payload is \(served.count) bytes, the summary said \(payload.count).")
    }

    @Test(arguments: [HandoffError.Code.trust, .notCurrent, .invalidRequest, .internal, .payloadTooLarge])
    func refusalCarriesItsCode(_ code: HandoffError.Code) throws {
        let (result, seen) = runExchange(offer: makeOffer(), serve: honestSender { _ in
            .refusal(.init(code: code, message: "not for you"))
        })
        let error = failure(result)
        #expect(error?.code == code)
        // Over the authenticated channel a trust refusal can only mean the sender untrusted us.
        #expect(error?.message == (code == .trust ? "alpha no longer trusts this device: pair again." : "alpha refused: not for you."))
        #expect(error?.fix == Daemon.fix(forRefusal: code, peerName: "alpha"))
        #expect(seen.request != nil)
    }

    static let unexpectedAnswers: [TransferFrame] = [
        .hello([UInt8](repeating: 1, count: 34)), .serverHello([UInt8](repeating: 2, count: 144)), .clientAuth([3]),
        .fetch(.init(summarySender: sender.publicKey, summarySequence: now, payloadDigest: Blake2b.digest(payload))),
        .pairRequest(name: "alpha"), .pairCommit(name: "alpha", commitment: [UInt8](repeating: 4, count: 32)),
        .pairNonce([UInt8](repeating: 5, count: 32)), .pairReveal([UInt8](repeating: 6, count: 32)), .pairConfirm(accepted: true),
    ]

    @Test(arguments: unexpectedAnswers)
    func unexpectedAnswerIsPayloadInvalid(_ answer: TransferFrame) {
        let (result, _) = runExchange(offer: makeOffer(), serve: honestSender { _ in answer })
        let error = failure(result)
        #expect(error?.code == .payloadInvalid)
        #expect(error?.message == "The peer answered with an unexpected frame.")
    }

    @Test func payloadForADifferentActivityIsPayloadInvalid() {
        // The digest and size match the offer, but the offer's signed title does not match the payload.
        let offer = makeOffer(title: "Chapter 2")
        let (result, _) = runExchange(offer: offer, serve: honestSender { _ in .payload(payload) })
        let error = failure(result)
        #expect(error?.code == .payloadInvalid)
        #expect(error?.message == "The payload describes a different activity than its summary.")
        // Same for a sequence that differs.
        let (second, _) = runExchange(offer: makeOffer(sequence: now + 1), serve: honestSender { _ in .payload(payload) })
        #expect(failure(second)?.code == .payloadInvalid)
    }

    @Test func undecodablePayloadWithAMatchingDigestIsPayloadInvalid() {
        let junk: [UInt8] = Array("not an activity payload".utf8)
        let (result, _) = runExchange(offer: makeOffer(for: junk), serve: honestSender { _ in .payload(junk) })
        #expect(failure(result)?.code == .payloadInvalid)
    }

    @Test(arguments: [[UInt8(0x09), 0x01, 0, 0, 0, 0], [0x01, 0x03, 0, 0, 0, 0], [0x02, 0x01, 0, 0, 0, 0], [0x02, 0x03, 0, 0, 0, 1]])
    func malformedFrameFromTheSenderIsPayloadInvalid(_ bytes: [UInt8]) {
        let (result, _) = runExchange(offer: makeOffer()) { channel, _ throws(HandoffError) in
            _ = try channel.receive()
            try channel.sendRaw(bytes)
        }
        #expect(failure(result)?.code == .payloadInvalid)
    }

    @Test func senderHangingUpIsConnectionLost() {
        let (first, _) = runExchange(offer: makeOffer()) { _, _ throws(HandoffError) in }
        #expect(failure(first)?.code == .connectionLost)
        // After reading the fetch, before answering it.
        let (second, seen) = runExchange(offer: makeOffer()) { channel, recorder throws(HandoffError) in
            if case let .fetch(request) = try channel.receive() { recorder.update { $0.request = request } }
        }
        #expect(failure(second)?.code == .connectionLost)
        #expect(seen.request != nil)
    }

    @Test func fixesForRefusals() {
        #expect(Daemon.fix(forRefusal: .trust, peerName: "alpha")
            == "Pair the two hosts again: run 'handoff-peer pair' on alpha and 'handoff-peer pair alpha' here.")
        #expect(Daemon.fix(forRefusal: .notCurrent, peerName: "alpha")
            == "The other host has moved on; run 'handoff-peer list' to see what it offers now.")
        #expect(Daemon.fix(forRefusal: .payloadTooLarge, peerName: "alpha") == "Check the other host's log (handoffd) for details.")
    }
}

// MARK: - The same exchange over a real socket (an AF_UNIX socketpair: no address, no file)

/// Two connected StreamConnections (a socket pair rather than StreamListener.unix, whose
/// temporary umask would race with tests creating directories). The timeout only
/// bounds a test that goes wrong: it is long, so that a loaded machine running the
/// whole suite in parallel never turns a slow thread into a failure.
func connectedPair(_ first: String = "test client", _ second: String = "test server",
                   timeoutMillis: Int = 30_000) throws -> (StreamConnection, StreamConnection) {
    var fds: [Int32] = [-1, -1]
    let status = fds.withUnsafeMutableBufferPointer {
        socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, $0.baseAddress)
    }
    try #require(status == 0)
    let pair = (StreamConnection(fd: fds[0], remote: first), StreamConnection(fd: fds[1], remote: second))
    try pair.0.setTimeout(millis: timeoutMillis)
    try pair.1.setTimeout(millis: timeoutMillis)
    return pair
}

@Suite struct StreamFrameChannelExchangeTests {
    /// Runs the exchange over StreamFrameChannel on one end of a socket pair while `serve` plays
    /// the sender on the other end, on its own thread.
    private func runOverSocket(offer: SignedSummary,
                               serve: @escaping @Sendable (StreamConnection) -> Void) throws -> Result<Activity, HandoffError> {
        let (client, server) = try connectedPair("test client", "test sender")
        defer { client.close() }
        let served = DispatchSemaphore(value: 0)
        let thread = Thread {
            serve(server)
            server.close()
            served.signal()
        }
        thread.start()
        let result = Result { () throws(HandoffError) -> Activity in
            try Daemon.exchange(over: StreamFrameChannel(connection: client, limits: .authenticated), offer: offer, identity: receiver)
        }
        client.close()
        #expect(served.wait(timeout: .now() + .seconds(40)) == .success)
        return result
    }

    @Test func successOverASocket() throws {
        let result = try runOverSocket(offer: makeOffer()) { connection in
            let channel = StreamFrameChannel(connection: connection, limits: .authenticated)
            guard case .fetch? = try? channel.receive() else { return }
            try? channel.send(.payload(payload))
        }
        #expect(try result.get() == activity)
    }

    @Test func oversizedFrameHeaderIsRefusedBeforeTheBody() throws {
        let result = try runOverSocket(offer: makeOffer()) { connection in
            _ = try? StreamFrameChannel(connection: connection, limits: .authenticated).receive()
            var header = ByteWriter()
            header.write(TransferFrame.version)
            header.write(UInt8(3))
            header.write(UInt32(TransferFrame.maximumBodyBytes + 1))
            try? connection.write(header.bytes)
        }
        let error = failure(result)
        #expect(error?.code == .payloadInvalid)
        #expect(error?.message.contains("frame is \(TransferFrame.maximumBodyBytes + 1) bytes") == true)
    }

    @Test func version1FrameIsRefused() throws {
        let result = try runOverSocket(offer: makeOffer()) { connection in
            _ = try? StreamFrameChannel(connection: connection, limits: .authenticated).receive()
            try? connection.write([0x01, 0x03, 0, 0, 0, 0])
        }
        let error = failure(result)
        #expect(error?.code == .payloadInvalid)
        #expect(error?.message.contains("unsupported version 1") == true)
    }

    @Test func truncatedFrameIsConnectionLost() throws {
        let result = try runOverSocket(offer: makeOffer()) { connection in
            _ = try? StreamFrameChannel(connection: connection, limits: .authenticated).receive()
            try? connection.write(Array(TransferFrame.payload(payload).encoded().prefix(20)))
        }
        #expect(failure(result)?.code == .connectionLost)
    }
}

extension Daemon {
    /// The exchange as these tests read it: a fresh fetch, its payload decoded as an app does.
    static func exchange(over channel: some FrameChannel, offer: SignedSummary, identity: Identity) throws(HandoffError) -> Activity {
        try Activity(payload: try exchange(over: channel, offer: offer, reception: PayloadReception(summary: offer.summary)).buffer.copyBytes())
    }
}
