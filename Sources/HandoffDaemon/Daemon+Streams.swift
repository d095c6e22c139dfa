import FoundationEssentials
import Glibc
import HandoffAPI
import HandoffCore
import HandoffCrypto
import HandoffTransport
import HandoffRuntime

// Continuation streams (Docs/APPS.md, Docs/PROTOCOL.md "Continuation stream"):
// after a continuation, the app on the continuing host (B) and the app that
// published the activity (A) get one encrypted byte stream between them.
// A's app waits on a local connection (`awaitStream`); B's app asks for the
// stream on another (`openStream`); B's daemon connects to A's with a
// handshake of purpose `stream`; once A admits it, both local connections
// carry raw bytes, relayed record by record.

/// The apps on this host waiting for a stream to their current activity.
struct ContinuationStreams {
    struct Waiter {
        let sequence: UInt64
        let connection: StreamConnection
        let continuation: CheckedContinuation<Result<StreamRelay, HandoffError>, Never>
    }

    var waiters: [Waiter] = []
    /// A waiter whose app quit unnoticed holds a thread until the activity changes; this bounds them.
    static let maximumWaiters = 16
}

extension Daemon {
    // MARK: - Local ops

    /// `awaitStream` {"sequence": S}: answers once a paired peer opens a stream
    /// to current activity S (the connection then carries the stream's bytes),
    /// or with `not-current` once S stops being current.
    func awaitStream(sequence: UInt64, connection: StreamConnection) async throws(HandoffError) -> StreamResult {
        try requireDedicated(connection, op: "awaitStream")
        guard let current = published, current.activity.sequence == sequence else {
            throw HandoffError(.notCurrent, "Activity \(sequence) is not the one this host offers now.",
                               fix: "Wait for streams with the sequence of the latest publish.")
        }
        guard current.activity.supportsContinuationStreams else {
            throw HandoffError(.invalidRequest, "The current activity was published without supportsContinuationStreams.",
                               fix: "Set supportsContinuationStreams to true and publish it again.")
        }
        if server.streams.waiters.count >= ContinuationStreams.maximumWaiters {
            let oldest = server.streams.waiters.removeFirst()
            oldest.continuation.resume(returning: .failure(HandoffError(.notCurrent, "Too many apps wait for continuation streams here; this wait was the oldest.",
                                                                        fix: "Wait again if the app still wants a stream.")))
        }
        let outcome = await withCheckedContinuation { continuation in
            server.streams.waiters.append(.init(sequence: sequence, connection: connection, continuation: continuation))
        }
        let relay = try outcome.get()
        StreamRelay.handOver(relay, on: connection)
        return StreamResult(peer: Ed25519.deviceID(of: relay.peerKey).description, sequence: Int64(clamping: sequence))
    }

    /// `openStream` {"sequence": S, "peer": ID (optional)}: opens a stream to the
    /// app on the peer that offered activity S; the connection then carries its bytes.
    func openStream(peer reference: String?, sequence: UInt64, connection: StreamConnection) async throws(HandoffError) -> StreamResult {
        try requireDedicated(connection, op: "openStream")
        let peer: Peer
        if let reference, !reference.isEmpty {
            peer = try peers.resolve(reference)
        } else {
            let offering = peers.peers.values.filter { $0.offer?.summary.sequence == sequence }
            guard offering.count == 1, let only = offering.first else {
                throw HandoffError(offering.isEmpty ? .notCurrent : .ambiguous,
                                   offering.isEmpty ? "No peer offers activity \(sequence) now." : "Several peers offer an activity numbered \(sequence).",
                                   fix: offering.isEmpty ? "Run 'handoff-peer list' to see what peers offer now." : "Name the peer with \"peer\".")
            }
            peer = only
        }
        guard let offer = peer.offer, offer.summary.sequence == sequence, !offer.summary.isExpired(nowMillis: clock.wallMillis()) else {
            throw HandoffError(.notCurrent, "\(peer.name) no longer offers activity \(sequence).",
                               fix: "Run 'handoff-peer list' to see what it offers now.")
        }
        guard let secrets = pairSecrets(for: peer.key) else {
            throw HandoffError(.trust, "\(peer.name) was paired by an older handoff version; streams need the keys a new pairing exchanges.",
                               fix: Daemon.fix(forRefusal: .trust, peerName: peer.name))
        }
        let (identity, timeout) = (identity, configuration.transferTimeoutMillis)
        let (hosts, port, name) = (peer.hosts, peer.transferPort, peer.name)
        let opened = await onThread(name: "stream open") { () -> Result<SecureChannel, HandoffError> in
            do throws(HandoffError) {
                return .success(try Daemon.connectStream(offer: offer.summary, hosts: hosts, port: port, peerName: name,
                                                         identity: identity, secrets: secrets, timeoutMillis: timeout))
            } catch {
                return .failure(error)
            }
        }
        let channel = try opened.get()
        log.info("opened a continuation stream to \(peer.deviceID) for activity \(sequence)")
        StreamRelay.handOver(StreamRelay(app: connection, channel: channel, role: .continuing), on: connection)
        return StreamResult(peer: peer.deviceID.description, sequence: Int64(clamping: sequence))
    }

    /// A connection that carries a stream must carry nothing else: no events in the middle of the bytes.
    private func requireDedicated(_ connection: StreamConnection, op: String) throws(HandoffError) {
        guard clients.subscribers.session(of: connection) == nil else {
            throw .invalidRequest("\(op) needs a connection of its own: this one is subscribed to events.")
        }
    }

    /// The current activity changed (published, resigned, invalidated or
    /// expired): apps waiting for a stream to an activity no longer current are told.
    func continuationStreamsActivityChanged() {
        let current = published.map { $0.activity.supportsContinuationStreams ? $0.activity.sequence : nil } ?? nil
        let stale = server.streams.waiters.filter { $0.sequence != current }
        guard !stale.isEmpty else { return }
        server.streams.waiters.removeAll { $0.sequence != current }
        for waiter in stale {
            waiter.continuation.resume(returning: .failure(HandoffError(.notCurrent, "Activity \(waiter.sequence) is no longer the one this host offers.",
                                                                        fix: "Wait for streams to the activity published now.")))
        }
    }

    // MARK: - Originating side (A)

    enum StreamAdmission: Sendable {
        case refuse(TransferFrame.Refusal)
        case admit(StreamRelay)
    }

    /// Runs on the transfer connection's thread, after a handshake of purpose `stream`.
    nonisolated func serveStream(over channel: SecureChannel) throws(HandoffError) {
        let requester = channel.session.peerKey
        let request: TransferFrame.FetchRequest
        switch try Self.receiveControl(over: channel) {
        case let .open(open): request = open
        default: throw HandoffError(.payloadInvalid, "The peer did not start the stream with open.", fix: "Make sure both hosts run the same handoff version.")
        }
        let admission = onActorWaiting { $0.admitStream(request, from: requester, channel: channel) }
        guard case let .admit(relay) = admission else {
            if case let .refuse(refusal) = admission { try Self.sendControl(.refused(refusal), over: channel) }
            return
        }
        // The app hears first: if it left, the peer hears `app` instead of a stream that goes nowhere.
        guard relay.waitForAppReply() else {
            try Self.sendControl(.refused(.init(code: .app, message: "the app stopped waiting for a stream")), over: channel)
            return
        }
        do throws(HandoffError) {
            try Self.sendControl(.accepted, over: channel)
            relay.peerAccepted()
        } catch {
            // The app side then fails at once, and so does this direction: both end.
            relay.abort()
        }
        relay.run(.toApp)
        relay.join()
    }

    /// Admits a stream only from a trusted peer, for the current activity (cited
    /// exactly, not expired) that asked for streams, and only if an app waits for it.
    func admitStream(_ request: TransferFrame.FetchRequest, from requester: DeviceKey, channel: SecureChannel) -> StreamAdmission {
        let requesterID = Ed25519.deviceID(of: requester)
        func refuse(_ refusal: TransferFrame.Refusal) -> StreamAdmission {
            server.countRefused()
            log.info("refused a continuation stream from \(requesterID): \(refusal.code.rawValue)")
            return .refuse(refusal)
        }
        let current: PublishedActivity
        switch TransferServer.admission(transferRequest(.stream, citing: request, from: requester), current: published) {
        case let .admit(admitted): current = admitted
        case let .refuse(refusal): return refuse(refusal)
        }
        guard let index = server.streams.waiters.firstIndex(where: { $0.sequence == current.activity.sequence }) else {
            return refuse(.init(code: .app, message: "no app on \(configuration.name) is waiting for a stream of this activity"))
        }
        let waiter = server.streams.waiters.remove(at: index)
        let relay = StreamRelay(app: waiter.connection, channel: channel, role: .originating)
        waiter.continuation.resume(returning: .success(relay))
        log.info("continuation stream from \(requesterID) for activity \(current.activity.sequence)")
        return .admit(relay)
    }

    // MARK: - Continuing side (B)

    /// Connects with purpose `stream`, cites the summary, and returns the channel once the peer accepted.
    nonisolated static func connectStream(offer summary: Summary, hosts: [String], port: UInt16, peerName: String,
                                          identity: Identity, secrets: PairSecrets, timeoutMillis: Int) throws(HandoffError) -> SecureChannel {
        let channel = try connect(hosts: hosts, port: port, peerName: peerName, identity: identity,
                                  purpose: .stream, secrets: secrets, timeoutMillis: timeoutMillis)
        do throws(HandoffError) {
            guard channel.session.peerKey == summary.senderKey else {
                throw HandoffError(.trust, "The host at that address is not the device that made the offer.",
                                   fix: "Another device answered on the peer's address; check the network, then try again.")
            }
            try sendControl(.open(.init(summarySender: summary.senderKey, summarySequence: summary.sequence,
                                        payloadDigest: summary.payloadDigest)), over: channel)
            switch try receiveControl(over: channel) {
            case .accepted:
                return channel
            case let .refused(refusal):
                throw streamRefusalError(refusal, peerName: peerName)
            case .open:
                throw HandoffError(.payloadInvalid, "\(peerName) answered the stream with an open.", fix: "Make sure both hosts run the same handoff version.")
            }
        } catch {
            channel.close()
            throw error
        }
    }

    nonisolated static func streamRefusalError(_ refusal: TransferFrame.Refusal, peerName: String) -> HandoffError {
        let fix = switch refusal.code {
        case .app: "Start the app on \(peerName) and let it wait for a stream (HandoffKit: awaitContinuationStream), then open the stream again."
        case .invalidRequest: "The app on \(peerName) must publish the activity with supportsContinuationStreams set."
        default: Daemon.fix(forRefusal: refusal.code, peerName: peerName)
        }
        return HandoffError(refusal.code, "\(peerName) refused the stream: \(refusal.message).", fix: fix)
    }

    // MARK: - Control messages

    nonisolated static func sendControl(_ frame: ContinuationStreamFrame, over channel: SecureChannel) throws(HandoffError) {
        let plaintext = frame.encoded()
        var record = [UInt8](repeating: 0, count: 4 + plaintext.count + RecordStream.overheadBytes)
        let sealed = plaintext.withUnsafeBytes { input in
            record.withUnsafeMutableBytes { channel.sealRecord(input, tag: ContinuationStreamFrame.Tag.push, into: $0.baseAddress!) }
        }
        guard let count = sealed else { throw SecureChannel.keyUsedUp(channel.connection.remote) }
        do {
            try channel.connection.write(Array(record[0..<count]))
        } catch {
            throw StreamFrameChannel.lost(error, peer: channel.connection.remote)
        }
    }

    /// Reads the control record that starts each direction.
    nonisolated static func receiveControl(over channel: SecureChannel) throws(HandoffError) -> ContinuationStreamFrame {
        let invalid = { (what: String) in
            HandoffError(.payloadInvalid, "The peer sent a bad stream message: \(what).", fix: "Make sure both hosts run the same handoff version.")
        }
        let ciphertext: [UInt8]
        do {
            let prefix = try channel.connection.read(exactly: ContinuationStreamFrame.lengthBytes)
            let length = try prefix.withUnsafeBytes { (raw) throws(WireError) in try ContinuationStreamFrame.sealedLength(prefix: raw) }
            // A control message is small; a record that claims more is no control message.
            guard length <= 1024 else { throw invalid("a control record of \(length) bytes") }
            ciphertext = try channel.connection.read(exactly: length)
        } catch let error as SystemError {
            throw StreamFrameChannel.lost(error, peer: channel.connection.remote)
        } catch let error as WireError {
            throw invalid("\(error)")
        } catch let error as HandoffError {
            throw error
        } catch {
            throw invalid("\(error)")
        }
        var plaintext = [UInt8](repeating: 0, count: ciphertext.count - RecordStream.overheadBytes)
        let tag = ciphertext.withUnsafeBytes { input in plaintext.withUnsafeMutableBytes { channel.openRecord(input, into: $0.baseAddress!) } }
        guard let tag else {
            throw HandoffError(.signatureMismatch, "A stream record from \(channel.connection.remote) failed authentication.",
                               fix: "Try again; if it repeats, something on the network alters traffic.")
        }
        var inbound = StreamInbound()
        do {
            _ = try inbound.received(tag: tag, plaintextBytes: plaintext.count)
            return try ContinuationStreamFrame(plaintext)
        } catch {
            throw invalid("\(error)")
        }
    }
}

/// Relays one continuation stream between an app's local connection and the
/// peer's secure channel: one pump per direction, each on its own thread with
/// one record buffer; a blocked write stops its pump from reading more, which
/// is the flow control. The relay borrows both sockets: their owners (the
/// relay thread the local session hands the app's connection to, the transfer thread on the originating side) close them
/// after `join`; on a failure `abort` only shuts them down, which wakes the other pump.
final class StreamRelay: @unchecked Sendable {
    // @unchecked Sendable: the connections are thread-safe; `state` and the gates are locked or semaphores.
    enum Role {
        /// Host A: the app waited, the peer connected; the app's reply must go out before the peer hears `accepted`.
        case originating
        /// Host B: the peer already accepted; this side owns the channel.
        case continuing
    }

    let app: StreamConnection
    let channel: SecureChannel
    let role: Role
    var peerKey: DeviceKey { channel.session.peerKey }
    private let state = Locked(StreamRelayState())
    /// Signalled once both directions ended, for `join`.
    private let bothEnded = Signals(value: 0)
    /// Originating side: the app's reply was written (true) or could not be (false).
    private let replied = Signals(value: 0)
    private let replyOutcome = Locked(false)
    /// Originating side: `accepted` went to the peer, so data may follow it.
    private let peerReady = Signals(value: 0)

    init(app: StreamConnection, channel: SecureChannel, role: Role) {
        self.app = app
        self.channel = channel
        self.role = role
    }

    // MARK: Hand-over from the local session

    private static let handedOver = Locked<[ObjectIdentifier: StreamRelay]>([:])

    static func handOver(_ relay: StreamRelay, on connection: StreamConnection) {
        handedOver.withLock { $0[ObjectIdentifier(connection)] = relay }
    }

    /// Called on the actor after each request's reply is made: the relay, if the
    /// request was awaitStream or openStream and it succeeded.
    static func claim(_ connection: StreamConnection) -> StreamRelay? {
        handedOver.withLock { $0.isEmpty ? nil : $0.removeValue(forKey: ObjectIdentifier(connection)) }
    }

    /// The relay thread's part (LocalSession.handOver): write the success reply, then relay until both directions end.
    func serveApp(reply: [UInt8]) {
        // Backpressure: a write to an app that reads slowly blocks, for as long as it takes.
        try? app.setSendTimeout(millis: 0)
        let written = (try? app.write(reply)) != nil
        switch role {
        case .originating:
            replyOutcome.withLock { $0 = written }
            replied.signal()
            guard written else { return }
            peerReady.wait()
            run(.toPeer)
            join()
        case .continuing:
            guard written else {
                abort()
                channel.close()
                return
            }
            try? channel.connection.setTimeout(millis: 0)
            Threads.start("stream to app") { [self] in run(.toApp) }
            run(.toPeer)
            join()
            channel.close()
        }
    }

    /// Originating side, on the transfer thread: whether the app took the reply.
    /// If it did, `accepted` goes out next, then `peerAccepted` lets data follow it.
    func waitForAppReply() -> Bool {
        replied.wait()
        guard replyOutcome.withLock({ $0 }) else { return false }
        try? channel.connection.setTimeout(millis: 0)
        return true
    }

    func peerAccepted() { peerReady.signal() }

    /// Ends both directions now (a failure, or the app left before its reply).
    func abort() {
        app.close()
        channel.connection.close()
        // Unblocks an originating app side still waiting for `accepted`.
        peerReady.signal()
    }

    /// Returns once both directions ended.
    func join() {
        bothEnded.wait()
        bothEnded.signal()  // for any later join
    }

    private func end(_ direction: StreamRelayState.Direction, _ outcome: StreamRelayState.Outcome) {
        let (action, ended) = state.withLock { state in
            let before = state.ended.count
            return (state.end(direction, outcome), before < 2 && state.ended.count == 2)
        }
        if ended { bothEnded.signal() }
        if action == .abort { abort() }
    }

    func run(_ direction: StreamRelayState.Direction) {
        let clean = switch direction {
        case .toPeer: pumpToPeer()
        case .toApp: pumpToApp()
        }
        end(direction, clean ? .clean : .failed)
    }

    /// App -> peer: whatever the app wrote, sealed as it comes; FINAL when the app stops writing.
    private func pumpToPeer() -> Bool {
        let plain = UnsafeMutableRawBufferPointer.allocate(byteCount: ContinuationStreamFrame.maximumDataBytes, alignment: 16)
        let record = UnsafeMutableRawBufferPointer.allocate(byteCount: 4 + ContinuationStreamFrame.maximumRecordBytes, alignment: 16)
        defer {
            plain.deallocate()
            record.deallocate()
        }
        do {
            while true {
                let count = try app.readSome(into: plain)
                let tag = count == 0 ? ContinuationStreamFrame.Tag.final : ContinuationStreamFrame.Tag.message
                // A used-up key ends the stream as a lost connection would.
                guard let sealed = channel.sealRecord(UnsafeRawBufferPointer(rebasing: plain[0..<count]), tag: tag, into: record.baseAddress!) else {
                    return false
                }
                try channel.connection.write(UnsafeRawBufferPointer(rebasing: record[0..<sealed]))
                if count == 0 { return true }
            }
        } catch {
            return false
        }
    }

    /// Peer -> app: records opened as they arrive and written to the app; at FINAL the app reads end of stream.
    private func pumpToApp() -> Bool {
        // Room for one whole record after whatever part of the next one is buffered.
        let capacity = 2 * (4 + ContinuationStreamFrame.maximumRecordBytes)
        let input = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 16)
        let plain = UnsafeMutableRawBufferPointer.allocate(byteCount: ContinuationStreamFrame.maximumDataBytes, alignment: 16)
        defer {
            input.deallocate()
            plain.deallocate()
        }
        // The control record was read already (open, or accepted).
        var inbound = StreamInbound(state: .data)
        var start = 0
        var end = 0
        do {
            while true {
                // Every whole record buffered.
                while end - start >= 4 {
                    let length = try ContinuationStreamFrame.sealedLength(prefix: UnsafeRawBufferPointer(rebasing: input[start..<(start + 4)]))
                    guard end - start >= 4 + length else { break }
                    let ciphertext = UnsafeRawBufferPointer(rebasing: input[(start + 4)..<(start + 4 + length)])
                    guard let tag = channel.openRecord(ciphertext, into: plain.baseAddress!) else { return false }
                    start += 4 + length
                    let count = length - ContinuationStreamFrame.sealOverheadBytes
                    switch try inbound.received(tag: tag, plaintextBytes: count) {
                    case .data:
                        try app.write(UnsafeRawBufferPointer(rebasing: plain[0..<count]))
                    case .end:
                        app.shutdownWrite()
                        // Anything after FINAL breaks the format; it is not read.
                        return end == start
                    case .control:
                        return false
                    }
                }
                if start > 0 {
                    let pending = end - start
                    if pending > 0 { input.baseAddress!.copyMemory(from: input.baseAddress! + start, byteCount: pending) }
                    start = 0
                    end = pending
                }
                let received = try channel.connection.readSome(into: UnsafeMutableRawBufferPointer(rebasing: input[end..<capacity]))
                // The peer's connection ended without FINAL: cut off, not finished.
                guard received > 0 else { return false }
                end += received
            }
        } catch {
            return false
        }
    }
}
