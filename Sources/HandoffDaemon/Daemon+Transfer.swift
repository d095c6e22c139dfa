import HandoffCore
import HandoffCrypto
import HandoffTransport

// The transfer socket: every connection starts with the handshake
// (SecureChannel); then the sender serves the current payload to a paired
// peer that cites its summary, or the two sides run the pairing dialog.
extension Daemon {
    // MARK: - Sender

    /// Runs on the connection's own thread.
    nonisolated func serve(_ connection: StreamConnection) {
        defer { connection.close() }
        try? connection.setTimeout(millis: configuration.transferTimeoutMillis)
        do throws(HandoffError) {
            let channel = try SecureChannel.accept(connection, identity: identity) { hello in decide(hello) }
            connection.setDeadline(millisFromNow: nil)
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
    /// handshake); pairing is answered only while our user has it open and no
    /// other device is pairing. Everyone else gets a refusal that names nothing.
    private nonisolated func decide(_ hello: Handshake.Hello) -> SecureChannel.Decision {
        switch hello.purpose {
        case .fetch, .stream:
            // Computing the hints happens here, on the connection's thread, not on the actor.
            let candidates = waitFor { await self.handshakeCandidates() }
            guard let match = candidates.first(where: { hello.isFrom($0.secrets) }) else {
                waitFor { await self.countStrangerHandshake() }
                return .refuse(.init(code: .trust, message: "this device is not paired here"))
            }
            return .answer(psk: match.secrets.handshakePSK, expectedClient: match.key)
        case .pair:
            switch waitFor({ await self.pairingAvailability() }) {
            case .open: return .answer(psk: Handshake.openPSK, expectedClient: nil)
            case .closed: return .refuse(.init(code: .trust, message: "pairing is not open here"))
            case .busy: return .refuse(.init(code: .trust, message: "another device is pairing here right now"))
            }
        }
    }

    func countStrangerHandshake() {
        refusedCount += 1
        log.info("refused a handshake from a device that is not paired")
    }

    private nonisolated func serveFetch(over channel: SecureChannel) throws(HandoffError) {
        let requester = channel.session.peerKey
        // Only a device we untrusted gets here without being trusted: it knows
        // who we are, and hears over the authenticated channel that we no longer trust it.
        guard waitFor({ await self.trust.contains(requester) }) else {
            try channel.send(.refusal(.init(code: .trust, message: Self.noLongerTrusted)))
            waitFor { await self.countRefusal(requester) }
            // Its request may still be on the way: closing with it unread would reset
            // the connection and could discard the refusal before the peer reads it.
            Self.drainUntilClosed(channel.connection, withinMillis: 2_000)
            return
        }
        let reply: TransferFrame
        if case let .fetch(request) = try channel.receive() {
            reply = waitFor { await self.answer(request, from: requester, remote: channel.connection.remote) }
        } else {
            reply = .refusal(.init(code: .invalidRequest, message: "expected a fetch request"))
        }
        try channel.send(reply)
        channel.connection.shutdownWrite()
        // Wait for the peer to close so the payload is not cut off by a reset.
        _ = try? channel.connection.read(exactly: 1)
    }

    static let noLongerTrusted = "this device is no longer trusted here"

    func countRefusal(_ requester: DeviceKey) {
        refusedCount += 1
        log.info("refused fetch from untrusted \(Ed25519.deviceID(of: requester))")
    }

    /// Decides what a fetch gets: the payload only for a paired device (proven
    /// by the handshake) that cites the summary that is current right now.
    func answer(_ request: TransferFrame.FetchRequest, from requester: DeviceKey, remote: String) -> TransferFrame {
        let requesterID = Ed25519.deviceID(of: requester)
        func refuse(_ code: HandoffError.Code, _ message: String) -> TransferFrame {
            refusedCount += 1
            log.info("refused fetch from \(requesterID) at \(remote): \(code.rawValue)")
            return .refusal(.init(code: code, message: message))
        }
        guard trust.contains(requester) else {
            return refuse(.trust, Self.noLongerTrusted)
        }
        guard settings.enabled else {
            return refuse(.enabled, "Handoff is switched off on \(configuration.name)")
        }
        guard let current = published, request.summarySender == identity.publicKey,
              request.summarySequence == current.summary.summary.sequence,
              constantTimeEqual(request.payloadDigest, current.summary.summary.payloadDigest),
              !current.activity.isExpired(nowMillis: wallClockMillis())
        else {
            return refuse(.notCurrent, "the activity you accepted is no longer the current one on \(configuration.name)")
        }
        servedCount += 1
        log.info("serving activity of type \(current.activity.type) to \(requesterID)")
        broadcast(["event": "payloadServed", "peer": .string(requesterID.description),
                   "type": .string(current.activity.type), "sequence": .integer(Int64(clamping: current.activity.sequence))])
        return .payload(current.payload)
    }

    // MARK: - Receiver

    struct FetchTiming: Sendable {
        /// Connect and handshake.
        var handshakeMillis: Double = 0
        /// Request, payload, verification and decoding.
        var transferMillis: Double = 0
    }

    /// Connects to the first reachable address of `hosts` and completes the handshake.
    nonisolated static func connect(hosts: [String], port: UInt16, peerName: String, identity: Identity,
                                    purpose: Handshake.Purpose, secrets: PairSecrets?,
                                    timeoutMillis: Int) throws(HandoffError) -> SecureChannel {
        var failure = HandoffError(.network, "\(peerName) announced no address to connect to.",
                                   fix: "Wait for its next announcement and try again.")
        for host in hosts {
            let connection: StreamConnection
            do {
                let address = try SocketAddress(host: host, port: port)
                connection = try StreamConnection.connect(to: address, timeoutMillis: Int32(timeoutMillis))
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

    /// Fetches and verifies an offer. Blocking; run it with `onThread`.
    nonisolated static func fetch(offer: SignedSummary, hosts: [String], port: UInt16, peerName: String,
                                  identity: Identity, secrets: PairSecrets,
                                  timeoutMillis: Int) -> (Result<Activity, HandoffError>, FetchTiming) {
        var timing = FetchTiming()
        let started = monotonicNanos()
        do throws(HandoffError) {
            let channel = try connect(hosts: hosts, port: port, peerName: peerName, identity: identity,
                                      purpose: .fetch, secrets: secrets, timeoutMillis: timeoutMillis)
            defer { channel.close() }
            let connected = monotonicNanos()
            timing.handshakeMillis = Double(connected - started) / 1e6
            guard channel.session.peerKey == offer.summary.senderKey else {
                throw HandoffError(.trust, "The host at that address is not the device that made the offer.",
                                   fix: "Another device answered on the peer's address; check the network, then accept again.")
            }
            let activity = try exchange(over: channel, offer: offer, identity: identity)
            timing.transferMillis = Double(monotonicNanos() - connected) / 1e6
            return (.success(activity), timing)
        } catch {
            return (.failure(error), timing)
        }
    }

    /// The fetch itself, over an authenticated channel to the offer's sender.
    /// A refusal over the authenticated channel: only the sender of the offer could have sent it.
    nonisolated static func refusalError(_ refusal: TransferFrame.Refusal, from summary: Summary) -> HandoffError {
        if refusal.code == .trust {
            return HandoffError(.trust, "\(summary.senderName) no longer trusts this device: pair again.",
                                fix: fix(forRefusal: .trust, peerName: summary.senderName))
        }
        return HandoffError(refusal.code, "\(summary.senderName) refused: \(refusal.message).",
                            fix: fix(forRefusal: refusal.code, peerName: summary.senderName))
    }

    /// Reads and drops whatever the peer still sends until it closes (or the time is up).
    nonisolated static func drainUntilClosed(_ connection: StreamConnection, withinMillis millis: Int) {
        connection.shutdownWrite()
        connection.setDeadline(millisFromNow: millis)
        while (try? connection.readAvailable()) != nil {}
    }

    nonisolated static func exchange(over channel: some FrameChannel, offer: SignedSummary,
                                     identity: Identity) throws(HandoffError) -> Activity {
        let summary = offer.summary
        do {
            try channel.send(.fetch(.init(summarySender: summary.senderKey, summarySequence: summary.sequence,
                                          payloadDigest: summary.payloadDigest)))
        } catch {
            // The sender may have refused (and closed) before reading the request: its
            // refusal is then already here to read. Anything else is the send's failure.
            guard case let .refusal(refusal)? = try? channel.receive() else { throw error }
            throw refusalError(refusal, from: summary)
        }
        let answer = try channel.receive()
        if case let .refusal(refusal) = answer { throw refusalError(refusal, from: summary) }
        switch answer {
        case let .payload(payload):
            guard payload.count == Int(summary.payloadSize) else {
                throw HandoffError(.payloadInvalid, "The payload is \(payload.count) bytes, the summary said \(summary.payloadSize).",
                                   fix: "Accept again; if it repeats, the sender is misbehaving.")
            }
            guard constantTimeEqual(Blake2b.digest(payload), summary.payloadDigest) else {
                throw HandoffError(.digestMismatch, "The payload does not match the digest in the signed summary.",
                                   fix: "Accept again; if it repeats, the sender is misbehaving.")
            }
            let activity = try Activity(payload: payload)
            guard activity.type == summary.activityType, activity.title == summary.title,
                  activity.sequence == summary.sequence else {
                throw HandoffError(.payloadInvalid, "The payload describes a different activity than its summary.",
                                   fix: "Accept again; if it repeats, the sender is misbehaving.")
            }
            return activity
        default:
            throw HandoffError(.payloadInvalid, "The peer answered with an unexpected frame.", fix: "Make sure both hosts run the same handoff version.")
        }
    }

    nonisolated static func fix(forRefusal code: HandoffError.Code, peerName: String) -> String {
        switch code {
        case .trust: "Pair the two hosts again: run 'handoff-peer pair' on \(peerName) and 'handoff-peer pair \(peerName)' here."
        case .enabled: "On the other host, run 'handoff-peer enable'."
        case .notCurrent: "The other host has moved on; run 'handoff-peer list' to see what it offers now."
        default: "Check the other host's log (handoffd) for details."
        }
    }

    typealias AcceptOutcome = Result<(peer: Peer, activity: Activity, timing: FetchTiming), HandoffError>

    struct InflightKey: Hashable {
        var peer: DeviceKey
        var sequence: UInt64
    }

    /// Accepts the offer of `reference`. Every condition is checked before
    /// anything is fetched; once willContinue is sent, exactly one of continued
    /// or failed follows, whatever happens. A second accept of the same offer
    /// while the first runs shares its outcome instead of fetching again.
    func accept(_ reference: String, requireApp: Bool = false) async throws(HandoffError) -> (peer: Peer, activity: Activity, timing: FetchTiming) {
        let (peer, offer, target) = try await prepareAccept(reference, requireApp: requireApp)
        let type = offer.summary.activityType
        let key = InflightKey(peer: peer.key, sequence: offer.summary.sequence)
        if inflightAccepts[key] != nil {
            let shared: AcceptOutcome = await withCheckedContinuation { inflightAccepts[key]?.append($0) }
            return try shared.get()
        }
        inflightAccepts[key] = []
        nextAcceptID += 1
        let acceptID = Int64(nextAcceptID)
        activeAccepts[acceptID] = (peer.deviceID, type)
        let willContinue: JSONValue = ["event": "willContinue", "acceptId": .integer(acceptID), "peer": .string(peer.deviceID.description),
                                       "type": .string(type), "deliverTo": .string(target.app)]
        broadcast(willContinue.objectValue!)
        log.info("accepting type \(type) from \(peer.deviceID) for \(target.app)")
        let (identity, timeout) = (identity, configuration.transferTimeoutMillis)
        let (hosts, port, name, secrets) = (peer.hosts, peer.transferPort, peer.name, pairSecrets(for: peer.key))
        let (fetched, timing) = await onThread(name: "fetch") { () -> (Result<Activity, HandoffError>, FetchTiming) in
            guard let secrets else {
                return (.failure(HandoffError(.trust, "\(name) was paired by an older handoff version; this version needs the keys a new pairing exchanges.",
                                             fix: Daemon.fix(forRefusal: .trust, peerName: name))), FetchTiming())
            }
            return Daemon.fetch(offer: offer, hosts: hosts, port: port, peerName: name, identity: identity, secrets: secrets,
                                timeoutMillis: timeout)
        }
        let outcome = await finishAccept(fetched.map { (peer, $0, timing) }, acceptID: acceptID, peer: peer, type: type,
                                         target: target, willContinue: willContinue)
        for waiter in inflightAccepts.removeValue(forKey: key) ?? [] { waiter.resume(returning: outcome) }
        return try outcome.get()
    }

    /// On stop: every accept still running gets its one outcome now.
    func failActiveAccepts() {
        for (acceptID, accept) in activeAccepts {
            broadcast(["event": "failed", "acceptId": .integer(acceptID), "peer": .string(accept.peer.description),
                       "type": .string(accept.type),
                       "error": HandoffError(.connectionLost, "handoffd on this host stopped during the transfer.",
                                             fix: "Start handoffd again and accept again.").json])
        }
        activeAccepts.removeAll()
    }
}
