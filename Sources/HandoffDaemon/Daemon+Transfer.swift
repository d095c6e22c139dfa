import Glibc
import HandoffAPI
import HandoffCore
import HandoffCrypto
import HandoffTransport
import HandoffRuntime

// The transfer socket: every connection starts with the handshake
// (SecureChannel); then the sender serves the current payload to a paired
// peer that cites its summary, or the two sides run the pairing dialog.
extension Daemon {
    // MARK: - Sender

    /// Runs on the connection's own thread. `listener` holds the handshake rate (none without it).
    nonisolated func serve(_ connection: StreamConnection, listener: StreamListener? = nil) {
        defer { connection.close() }
        try? connection.setTimeout(millis: configuration.transferTimeoutMillis)
        do throws(HandoffError) {
            let source = StreamListener.sourceKey(connection.remoteHost ?? connection.remote)
            let channel = try SecureChannel.accept(connection, identity: identity) { hello in
                let decision = decide(hello, from: source)
                // An answer costs key agreement and a signature: within the handshake rate for
                // addresses no paired device is heard from. Over it, the connection is closed
                // unanswered, as a reset one is, and the client asks again.
                if case .answer = decision, let listener, !listener.allowHandshake(from: source) { return .drop }
                return decision
            }
            connection.setDeadline(millisFromNow: nil)
            // A paired device (or the one pairing now, which our user opened): never evicted for a stranger.
            connection.markProven()
            switch channel.session.purpose {
            case .fetch:
                try serveFetch(over: channel)
            case .pair:
                try respondToPairing(over: channel)
            case .stream:
                try serveStream(over: channel)
            }
        } catch {
            log.info("transfer with \(connection.remote) ended: \(error.code.rawValue)")
        }
    }

    /// Which PSK answers a hello. A fetch must carry the hint of a device we
    /// paired with (or untrusted: it hears so, authenticated, after the
    /// handshake); pairing is answered only while our user has it open, within
    /// its bounds (PairingState.availability). Everyone else gets a refusal that names nothing.
    private nonisolated func decide(_ hello: Handshake.Hello, from source: String) -> SecureChannel.Decision {
        switch hello.purpose {
        case .fetch, .stream:
            // Computing the hints happens here, on the connection's thread, not on the actor; the
            // candidates come from the actor only when the paired set changed since it last said.
            let candidates = fixed.handshakeCandidates.withLock { $0 } ?? onActorWaiting { $0.handshakeCandidates() }
            guard let match = candidates.first(where: { hello.isFrom($0.secrets) }) else {
                onActor { $0.countStrangerHandshake() }
                return .refuse(.init(code: .trust, message: "this device is not paired here"))
            }
            return .answer(psk: match.secrets.handshakePSK, expectedClient: match.key)
        case .pair:
            switch onActorWaiting({ $0.pairingAvailability(host: source) }) {
            case .open: return .answer(psk: Handshake.openPSK, expectedClient: nil)
            case .closed: return .refuse(.init(code: .trust, message: "pairing is not open here"))
            case .busy: return .refuse(.init(code: .trust, message: "too many devices are pairing here right now"))
            }
        }
    }

    /// What the transfer server's decision needs to know of a request and of this host now.
    func transferRequest(_ purpose: TransferServer.Purpose, citing request: TransferFrame.FetchRequest, from requester: DeviceKey) -> TransferServer.Request {
        TransferServer.Request(purpose: purpose, cited: request, requesterTrusted: trust.contains(requester), enabled: settings.enabled,
                               hostName: configuration.name, ownKey: identity.publicKey, nowMillis: clock.wallMillis())
    }

    func countStrangerHandshake() {
        server.countRefused()
        log.info("refused a handshake from a device that is not paired")
    }

    /// How long a served fetch waits for the request after the handshake.
    static let requestWaitMillis = 5_000

    private nonisolated func serveFetch(over channel: SecureChannel) throws(HandoffError) {
        let requester = channel.session.peerKey
        // One decision, trust included, from what the actor last said (`admit`): only a device we
        // untrusted gets here without being trusted, and it hears over the authenticated channel
        // that we no longer trust it (TransferServer.admission), after its request, which it sends at once.
        let reply: TransferFrame
        var offset = 0
        // The request comes at once after the handshake: a peer that trickles it holds no slot for long.
        channel.connection.setDeadline(millisFromNow: Self.requestWaitMillis)
        let first = try channel.receive()
        channel.connection.setDeadline(millisFromNow: nil)
        if case let .fetch(request) = first {
            let admission = admit(request, from: requester)
            // Counted, logged and told to subscribers on the actor; the payload does not wait for that.
            let remote = channel.connection.remote
            onActor { $0.record(admission, from: requester, remote: remote, offset: request.offset) }
            reply = admission.frame
            offset = Int(request.offset)
        } else {
            reply = .refusal(.init(code: .invalidRequest, message: "expected a fetch request"))
        }
        if case let .payload(payload) = reply {
            // Sealed record by record from the published bytes, from where the receiver asks.
            let started = monotonicNanos()
            do throws(HandoffError) {
                try channel.sendPayload(payload, from: offset)
            } catch {
                log.info("serving \(payload.count - offset) payload bytes from byte \(offset) to \(channel.connection.remote) failed: \(error.code.rawValue)")
                throw error
            }
            log.info("served \(payload.count - offset) payload bytes from byte \(offset) in \(Int(Double(monotonicNanos() - started) / 1e6)) ms, records \(channel.session.cipher)")
        } else {
            try channel.send(reply)
        }
        channel.connection.shutdownWrite()
        // Wait for the peer to close so the payload is not cut off by a reset.
        _ = try? channel.connection.read(exactly: 1)
    }

    /// Decides what a fetch gets: the payload only for a paired device (proven
    /// by the handshake) that cites the summary that is current right now. The
    /// whole payload is returned; the caller sends it from the request's offset.
    /// Decided on the fetch's own thread from `Fixed.servable`, which the actor keeps.
    nonisolated func admit(_ request: TransferFrame.FetchRequest, from requester: DeviceKey) -> TransferServer.Admission {
        let servable = fixed.servable.withLock { $0 }
        let facts = TransferServer.Request(purpose: .fetch, cited: request, requesterTrusted: servable.trusted.contains(requester),
                                           enabled: servable.enabled, hostName: configuration.name, ownKey: identity.publicKey,
                                           nowMillis: clock.wallMillis())
        return TransferServer.admission(facts, current: servable.current)
    }

    /// What a served fetch's decision leaves behind: the counters, the log and `payloadServed`.
    func record(_ admission: TransferServer.Admission, from requester: DeviceKey, remote: String, offset: UInt64) {
        let requesterID = Ed25519.deviceID(of: requester)
        switch admission {
        case let .admit(current):
            server.countServed()
            log.info("serving activity of type \(current.activity.type) to \(requesterID) from byte \(offset)")
            broadcast(.payloadServed(peer: requesterID.description, type: current.activity.type,
                                     sequence: Int64(clamping: current.activity.sequence)))
        case let .refuse(refusal):
            server.countRefused()
            log.info("refused fetch from \(requesterID) at \(remote): \(refusal.code.rawValue)")
        }
    }

    /// `admit` and `record` in one step, on the actor (tests).
    func answer(_ request: TransferFrame.FetchRequest, from requester: DeviceKey, remote: String) -> TransferFrame {
        let admission = admit(request, from: requester)
        record(admission, from: requester, remote: remote, offset: request.offset)
        return admission.frame
    }

    // MARK: - Receiver

    struct FetchTiming: Sendable {
        /// Connect and handshake (the first connection).
        var handshakeMillis: Double = 0
        /// Request, payload, digest and scan, resumes included.
        var transferMillis: Double = 0
        /// Connections that resumed a cut transfer.
        var resumes = 0
        /// Bytes of records cut midway, fetched again.
        var refetchedBytes = 0
    }

    /// How long a cut transfer waits for its peer, at most: the offer's own expiry
    /// may end it sooner (Docs/PROTOCOL.md, "Resume").
    static let resumeWindowMillis: UInt64 = 30_000
    /// No payload byte for this long ends the connection and starts a resume
    /// (a peer whose address changed, a cable pulled: TCP itself waits minutes).
    static let stallMillis = 3_000
    /// Connecting during a resume: short, so each attempt reads the peer's address afresh.
    static let resumeConnectMillis = 1_000

    /// Where the peer is now, read from the actor on every attempt (it may
    /// reappear at a new address), and the sequence it offers now, if any.
    struct PeerRoute: Sendable {
        var hosts: [String]
        var port: UInt16
        var offeredSequence: UInt64?
    }

    /// What a fetch reports while it runs (on the fetch thread, in order).
    struct FetchEvents: Sendable {
        var progress: @Sendable (_ bytes: Int, _ total: Int, _ bytesPerSecond: Int) -> Void = { _, _, _ in }
        var waiting: @Sendable (_ untilMillis: UInt64, _ reason: String) -> Void = { _, _ in }
        var resumed: @Sendable (_ fromByte: Int) -> Void = { _ in }
    }

    /// Connects to the first reachable address of `hosts` and completes the handshake.
    nonisolated static func connect(hosts: [String], port: UInt16, peerName: String, identity: Identity,
                                    purpose: Handshake.Purpose, secrets: PairSecrets?, interfaces: InterfaceTable? = nil,
                                    timeoutMillis: Int, connectMillis: Int? = nil) throws(HandoffError) -> SecureChannel {
        var failure = HandoffError(.network, "\(peerName) announced no address to connect to.",
                                   fix: "Wait for its next announcement and try again.")
        // A link without a carrier keeps its routes (the kernel marks them linkdown): try the live ones first.
        for host in RouteCheck.liveFirst(hosts, interfaces: interfaces) {
            let connection: StreamConnection
            do {
                let address = try SocketAddress(host: host, port: port)
                connection = try StreamConnection.connect(to: address, timeoutMillis: Int32(connectMillis ?? timeoutMillis))
            } catch {
                failure = HandoffError(.network, "Cannot reach \(peerName) at \(host) port \(port)/tcp: \(error).",
                                       fix: "Check that handoffd runs there and that its firewall allows \(port)/tcp from this host.")
                continue
            }
            try? connection.setTimeout(millis: timeoutMillis)
            do {
                return try SecureChannel.connect(connection, identity: identity, purpose: purpose, secrets: secrets, peerName: peerName)
            } catch {
                connection.close()
                throw error
            }
        }
        throw failure
    }

    /// Fetches and verifies an offer. Blocking; run it with `onThread`. A
    /// transfer cut midway (reset, stall, address change) resumes over a new
    /// connection from the last authenticated byte, the peer's address read
    /// afresh through `route` each time, until `resumeWindowMillis` or the
    /// offer's expiry; the digest covers the whole payload at the end.
    nonisolated static func fetch(offer: SignedSummary, firstRoute: PeerRoute? = nil, route: @Sendable () -> PeerRoute, peerName: String,
                                  identity: Identity, secrets: PairSecrets, timeoutMillis: Int,
                                  events: FetchEvents = FetchEvents(), links: FetchLinks? = nil,
                                  interfaces: InterfaceCache? = nil) -> (Result<FetchedPayload, HandoffError>, FetchTiming) {
        var timing = FetchTiming()
        let summary = offer.summary
        let reception = PayloadReception(summary: summary)
        let started = monotonicNanos()
        var transferStarted = started
        var window = ResumeWindow(windowMillis: resumeWindowMillis, expiresAtMillis: summary.expiresAtMillis)
        var pause: UInt32 = 100_000
        var attempts = 0
        while true {
            let resuming = reception.isStarted
            attempts += 1
            do throws(HandoffError) {
                let peer = attempts == 1 ? firstRoute ?? route() : route()
                if resuming, let offered = peer.offeredSequence, offered != summary.sequence {
                    throw HandoffError(.notCurrent, "\(peerName) moved on to another activity while the transfer was cut.",
                                       fix: fix(forRefusal: .notCurrent, peerName: peerName))
                }
                let table = interfaces?.current()
                let channel = try connect(hosts: peer.hosts, port: peer.port, peerName: peerName, identity: identity,
                                          purpose: .fetch, secrets: secrets, interfaces: table, timeoutMillis: timeoutMillis,
                                          connectMillis: resuming ? resumeConnectMillis : nil)
                let link = links?.register(channel.connection, interfaces: table)
                defer {
                    if let link { links?.unregister(link) }
                    channel.close()
                }
                let connected = monotonicNanos()
                if !resuming {
                    timing.handshakeMillis = Double(connected - started) / 1e6
                    transferStarted = connected
                }
                guard channel.session.peerKey == summary.senderKey else {
                    throw HandoffError(.trust, "The host at that address is not the device that made the offer.",
                                       fix: "Another device answered on the peer's address; check the network, then accept again.")
                }
                let meter = ProgressMeter(total: Int(summary.payloadSize), from: reception.authenticated, report: events.progress)
                let fetched = try exchange(over: channel, offer: offer, reception: reception, onStart: { start in
                    // Once payload bytes flow, a stalled link shows as no bytes for a while, not
                    // as an error (TCP would wait minutes): it ends this connection and a resume begins.
                    try? channel.connection.setTimeout(millis: min(timeoutMillis, stallMillis))
                    if start.offset > 0 {
                        timing.resumes += 1
                        events.resumed(start.offset)
                    }
                }, progress: meter.update)
                timing.transferMillis = Double(monotonicNanos() - transferStarted) / 1e6
                timing.refetchedBytes = reception.refetchedBytes
                return (.success(fetched), timing)
            } catch {
                timing.refetchedBytes = reception.refetchedBytes
                // Before any payload arrived nothing is worth keeping: fail as before, at once.
                guard reception.isStarted, [.connectionLost, .timedOut, .network].contains(error.code) else {
                    return (.failure(error), timing)
                }
                let now = wallClockMillis()
                switch window.failed(nowMillis: now, authenticated: reception.authenticated) {
                case .giveUp:
                    return (.failure(gaveUp(summary: summary, peerName: peerName, reception: reception, cause: error)), timing)
                case let .wait(until, newCut):
                    if newCut {
                        pause = 100_000
                        events.waiting(until, error.message)
                    }
                    usleep(min(pause, UInt32(clamping: (until - now) * 1000)))
                    pause = min(pause * 2, 1_000_000)
                }
            }
        }
    }

    /// The error when the peer did not come back in time: an expired offer is no
    /// longer current; otherwise the link is the cause (`network`), which the
    /// accept then explains with the six conditions (proximity, network...).
    nonisolated static func gaveUp(summary: Summary, peerName: String, reception: PayloadReception, cause: HandoffError) -> HandoffError {
        let total = Int(summary.payloadSize)
        if summary.isExpired(nowMillis: wallClockMillis()) {
            return HandoffError(.notCurrent, "\(peerName)'s offer expired while the transfer waited for it (\(reception.authenticated) of \(total) bytes had arrived).",
                                fix: fix(forRefusal: .notCurrent, peerName: peerName))
        }
        return HandoffError(.network, "The transfer from \(peerName) was cut at \(reception.authenticated) of \(total) bytes and \(peerName) was not reachable again within \(resumeWindowMillis / 1000) s (\(cause.message)).",
                            fix: "Bring both hosts onto the same network and near each other, then accept again.")
    }

    /// A refusal over the authenticated channel: only the sender of the offer could have sent it.
    nonisolated static func refusalError(_ refusal: TransferFrame.Refusal, from summary: Summary) -> HandoffError {
        if refusal.code == .trust {
            return HandoffError(.trust, "\(summary.senderName) no longer trusts this device: pair again.",
                                fix: fix(forRefusal: .trust, peerName: summary.senderName))
        }
        return HandoffError(refusal.code, "\(summary.senderName) refused: \(refusal.message).",
                            fix: fix(forRefusal: refusal.code, peerName: summary.senderName))
    }

    /// The fetch itself, over an authenticated channel to the offer's sender:
    /// from the start, or from what `reception` already holds.
    nonisolated static func exchange(over channel: some FrameChannel, offer: SignedSummary, reception: PayloadReception,
                                     onStart: (PayloadStart) -> Void = { _ in },
                                     progress: (Int) -> Void = { _ in }) throws(HandoffError) -> FetchedPayload {
        let summary = offer.summary
        do {
            try channel.send(.fetch(.init(summarySender: summary.senderKey, summarySequence: summary.sequence,
                                          payloadDigest: summary.payloadDigest, offset: UInt64(reception.authenticated))))
        } catch {
            // The sender may have refused (and closed) before reading the request: its
            // refusal is then already here to read. Anything else is the send's failure.
            guard case let .refusal(refusal)? = try? channel.receive() else { throw error }
            throw refusalError(refusal, from: summary)
        }
        var base = 0
        let other = try channel.receivePayload(into: { (start) throws(HandoffError) -> PayloadRegion in
            let region = try reception.region(for: start)
            base = start.offset
            onStart(start)
            return region
        }, received: { filled in
            reception.advance(to: base + filled)
            progress(base + filled)
        }, discarded: { reception.discard($0) })
        switch other {
        case nil:
            return try reception.finish()
        case let .refusal(refusal)?:
            throw refusalError(refusal, from: summary)
        default:
            throw HandoffError(.payloadInvalid, "The peer answered with an unexpected frame.", fix: "Make sure both hosts run the same handoff version.")
        }
    }

    /// The one place a fetched payload becomes what the local API returns today:
    /// a decoded Activity (the local API is to pass the buffer's descriptor instead).
    nonisolated static func fix(forRefusal code: HandoffError.Code, peerName: String) -> String {
        switch code {
        case .trust: "Pair the two hosts again: run 'handoff-peer pair' on \(peerName) and 'handoff-peer pair \(peerName)' here."
        case .enabled: "On the other host, run 'handoff-peer enable'."
        case .notCurrent: "The other host has moved on; run 'handoff-peer list' to see what it offers now."
        default: "Check the other host's log (handoffd) for details."
        }
    }

    /// A continued activity: what was fetched, and where it continued.
    struct Accepted: Sendable {
        var peer: Peer
        var activity: ActivityHeader
        var timing: FetchTiming
        var payload: PayloadBuffer
        var target: DeliveryTarget
    }
    typealias AcceptOutcome = Result<Accepted, HandoffError>

    /// The offer a person chose (its sequence and digest, from list): an accept or decline of it
    /// is refused when the peer offers something else by now.
    struct ChosenOffer: Equatable, Sendable {
        var sequence: UInt64
        var digest: [UInt8]?
    }

    static func notCurrent(_ peerName: String) -> HandoffError {
        HandoffError(.notCurrent, "\(peerName) now offers something other than the offer you chose; nothing was fetched.",
                     fix: "Run 'handoff-peer list' and choose again.")
    }
    typealias Accepts = AcceptJobs<DeliveryTarget, CheckedContinuation<AcceptOutcome, Never>, PendingDelivery>

    /// Accepts the offer of `reference`. Every condition is checked before
    /// anything is fetched; once willContinue is sent, exactly one of continued
    /// or failed follows, whatever happens. A second accept of the same offer
    /// while the first runs shares its outcome instead of fetching again.
    func accept(_ reference: String, requireApp: Bool = false, chosen: ChosenOffer? = nil, ticket: String? = nil) async throws(HandoffError) -> Accepted {
        let (peer, offer, target) = try await prepareAccept(reference, requireApp: requireApp)
        // Checked after prepareAccept's probe, which may wait: the offer is the one fetched below.
        if let chosen, chosen.sequence != offer.summary.sequence || chosen.digest.map({ $0 != offer.summary.payloadDigest }) ?? false {
            throw Self.notCurrent(peer.name)
        }
        let type = offer.summary.activityType
        let offerKey = Accepts.Offer(peer: peer.key, sequence: offer.summary.sequence)
        guard let acceptID = accepts.begin(offerKey, peer: peer.deviceID, type: type, target: target, ticket: ticket) else {
            let shared: AcceptOutcome = await withCheckedContinuation { waiter in
                if !accepts.share(offerKey, waiter: waiter) { preconditionFailure("begin found the job share looks for") }
            }
            return try shared.get()
        }
        let willContinue = Event.willContinue(acceptID: acceptID, peer: peer.deviceID.description, type: type, deliverTo: target.app)
        broadcast(willContinue)
        log.info("accepting type \(type) from \(peer.deviceID) for \(target.app)")
        let (identity, timeout) = (identity, configuration.transferTimeoutMillis)
        let (peerKey, name, secrets) = (peer.key, peer.name, pairSecrets(for: peer.key))
        let fallback = PeerRoute(hosts: peer.hosts, port: peer.transferPort, offeredSequence: offer.summary.sequence)
        let events = transferEvents(acceptID: acceptID, peer: peer, type: type)
        let (links, interfaces) = (accepts.links, fixed.interfaces)
        let (fetched, timing) = await onThread(name: "fetch") { () -> (Result<FetchedPayload, HandoffError>, FetchTiming) in
            guard let secrets else {
                return (.failure(HandoffError(.trust, "\(name) was paired by an older handoff version; this version needs the keys a new pairing exchanges.",
                                             fix: Daemon.fix(forRefusal: .trust, peerName: name))), FetchTiming())
            }
            // The first attempt goes where the peer was just now (read on the actor above); a
            // resume asks the actor again, since the peer may have moved.
            let (result, timing) = Daemon.fetch(offer: offer, firstRoute: fallback, route: { self.onActorWaiting { $0.route(to: peerKey) } ?? fallback },
                                                peerName: name, identity: identity, secrets: secrets, timeoutMillis: timeout,
                                                events: events, links: links, interfaces: interfaces)
            if case let .success(fetched) = result {
                self.log.info("fetched \(fetched.buffer.count) payload bytes of type \(type) in \(Int(timing.transferMillis)) ms; \(timing.resumes) resumes, \(timing.refetchedBytes) bytes fetched again")
            }
            return (result, timing)
        }
        let outcome = await finishAccept(fetched.map { Accepted(peer: peer, activity: $0.header, timing: timing, payload: $0.buffer, target: target) },
                                         acceptID: acceptID, peer: peer, willContinue: willContinue)
        for waiter in accepts.end(acceptID) { waiter.resume(returning: outcome) }
        return try outcome.get()
    }

    /// Where a peer is now (its latest announced addresses), for a fetch resuming; nil once it is gone from the table.
    func route(to key: DeviceKey) -> PeerRoute? {
        guard let peer = peers.peers[key] else { return nil }
        return PeerRoute(hosts: peer.hosts, port: peer.transferPort,
                         offeredSequence: peer.visibleOffer(nowMillis: clock.wallMillis())?.summary.sequence)
    }

    /// The accept's progress, waiting and resumed events, broadcast in order from the fetch thread.
    func transferEvents(acceptID: Int64, peer: Peer, type: String) -> FetchEvents {
        let (peerID, name) = (peer.deviceID.description, peer.name)
        return FetchEvents(
            progress: { bytes, total, rate in
                self.onActor { $0.broadcast(.progress(TransferProgress(acceptID: acceptID, peer: peerID, type: type, bytes: Int64(bytes),
                                                                          total: Int64(total), bytesPerSecond: Double(rate)))) }
            },
            waiting: { until, reason in
                self.onActor { $0.transferWaiting(acceptID: acceptID, peer: peerID, name: name, untilMillis: until, reason: reason) }
            },
            resumed: { fromByte in
                self.onActor { $0.transferResumed(acceptID: acceptID, peer: peerID, fromByte: fromByte) }
            })
    }

    func transferWaiting(acceptID: Int64, peer: String, name: String, untilMillis: UInt64, reason: String) {
        log.info("transfer \(acceptID) cut; waiting for its peer until \(untilMillis)")
        broadcast(.transferWaiting(TransferWaiting(acceptID: acceptID, peer: peer, name: name, untilMillis: Int64(clamping: untilMillis), reason: reason)))
    }

    func transferResumed(acceptID: Int64, peer: String, fromByte: Int) {
        log.info("transfer \(acceptID) resumed from byte \(fromByte)")
        broadcast(.transferResumed(acceptID: acceptID, peer: peer, fromByte: Int64(fromByte)))
    }

    /// On stop: every accept still running gets its one outcome now.
    func failActiveAccepts() {
        for job in accepts.reportAll() {
            let during = switch job.phase {
            case .fetching: "during the transfer"
            case .delivering: "while handing the activity to \(job.target.app)"
            case .waitingForApp: "while waiting for \(job.target.app) to take the activity"
            }
            broadcast(.failed(acceptID: job.id, peer: job.peer.description, type: job.type,
                              error: HandoffError(.connectionLost, "handoffd on this host stopped \(during).",
                                                  fix: "Start handoffd again and accept again."), deliverTo: nil))
        }
    }
}
