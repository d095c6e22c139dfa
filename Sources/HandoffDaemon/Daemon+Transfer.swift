import HandoffCore
import HandoffCrypto
import HandoffTransport

// The transfer socket: the sender side serves the current payload to a trusted
// peer that cites its summary; the receiver side fetches and verifies it.
extension Daemon {
    // MARK: - Sender

    /// Runs on the connection's own thread.
    nonisolated func serve(_ connection: StreamConnection) {
        defer { connection.close() }
        try? connection.setTimeout(millis: configuration.transferTimeoutMillis)
        let channel = StreamFrameChannel(connection: connection)
        let challenge = TransferFrame.Challenge(nonce: Random.bytes(TransferFrame.Challenge.nonceBytes),
                                                serverKey: identity.publicKey)
        do throws(HandoffError) {
            try channel.send(.challenge(challenge))
            let reply: TransferFrame
            if case let .fetch(request) = try channel.receive() {
                reply = waitFor { await self.answer(request, challenge: challenge, from: connection.remote) }
            } else {
                reply = .refusal(.init(code: .invalidRequest, message: "expected a fetch request"))
            }
            try channel.send(reply)
            connection.shutdownWrite()
            // Wait for the peer to close so the payload is not cut off by a reset.
            _ = try? connection.read(exactly: 1)
        } catch {
            log.info("transfer with \(connection.remote) ended: \(error.code.rawValue)")
        }
    }

    /// Decides what a fetch gets: the payload only for a trusted, correctly
    /// signed request that cites the summary that is current right now.
    func answer(_ request: TransferFrame.FetchRequest, challenge: TransferFrame.Challenge, from remote: String) -> TransferFrame {
        let requester = Ed25519.deviceID(of: request.clientKey)
        func refuse(_ code: HandoffError.Code, _ message: String) -> TransferFrame {
            refusedCount += 1
            log.info("refused fetch from \(requester) at \(remote): \(code.rawValue)")
            return .refusal(.init(code: code, message: message))
        }
        guard request.verify(for: challenge, with: verifier) else {
            return refuse(.trust, "the fetch request's signature does not verify")
        }
        guard trust.contains(request.clientKey) else {
            return refuse(.trust, "\(configuration.name) (\(deviceID)) does not trust device \(requester)")
        }
        guard let current = published, request.summarySender == identity.publicKey,
              request.summarySequence == current.summary.summary.sequence,
              constantTimeEqual(request.payloadDigest, current.summary.summary.payloadDigest),
              !current.activity.isExpired(nowMillis: wallClockMillis())
        else {
            return refuse(.notCurrent, "the activity you accepted is no longer the current one on \(configuration.name)")
        }
        servedCount += 1
        log.info("serving activity of type \(current.activity.type) to \(requester)")
        broadcast(["event": "payloadServed", "peer": .string(requester.description),
                   "type": .string(current.activity.type), "sequence": .integer(Int64(clamping: current.activity.sequence))])
        return .payload(current.payload)
    }

    // MARK: - Receiver

    /// Fetches and verifies an offer. Blocking; run it with `onThread`.
    nonisolated static func fetch(offer: SignedSummary, hosts: [String], port: UInt16, peerName: String,
                                  identity: Identity, timeoutMillis: Int) -> Result<Activity, HandoffError> {
        var failure = HandoffError(.network, "\(peerName) announced no address to fetch from.",
                                   fix: "Wait for its next announcement and accept again.")
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
            defer { connection.close() }
            try? connection.setTimeout(millis: timeoutMillis)
            return Result { () throws(HandoffError) -> Activity in
                try exchange(over: StreamFrameChannel(connection: connection), offer: offer, identity: identity)
            }
        }
        return .failure(failure)
    }

    nonisolated static func exchange(over channel: some FrameChannel, offer: SignedSummary,
                                     identity: Identity) throws(HandoffError) -> Activity {
        let summary = offer.summary
        guard case let .challenge(challenge) = try channel.receive() else {
            throw HandoffError(.payloadInvalid, "The peer did not open with a challenge.", fix: "Make sure both hosts run the same handoff version.")
        }
        guard challenge.serverKey == summary.senderKey else {
            throw HandoffError(.trust, "The host at that address is not the device that made the offer.",
                               fix: "Another device answered on the peer's address; check the network, then accept again.")
        }
        var request = TransferFrame.FetchRequest(clientKey: identity.publicKey, summarySender: summary.senderKey,
                                                 summarySequence: summary.sequence, payloadDigest: summary.payloadDigest)
        request.sign(for: challenge, with: identity)
        try channel.send(.fetch(request))
        switch try channel.receive() {
        case let .refusal(refusal):
            throw HandoffError(refusal.code, "\(summary.senderName) refused: \(refusal.message).", fix: fix(forRefusal: refusal.code, identity: identity))
        case let .payload(payload):
            guard payload.count == Int(summary.payloadSize) else {
                throw HandoffError(.payloadInvalid, "The payload is \(payload.count) bytes, the summary said \(summary.payloadSize).",
                                   fix: "Accept again; if it repeats, the sender is misbehaving.")
            }
            guard constantTimeEqual(Blake2b.digest(payload), summary.payloadDigest) else {
                throw HandoffError(.digestMismatch, "The payload does not match the digest in the signed summary.",
                                   fix: "Accept again; if it repeats, something between the hosts alters traffic.")
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

    nonisolated static func fix(forRefusal code: HandoffError.Code, identity: Identity) -> String {
        switch code {
        case .trust: "On the other host, run 'handoff-peer trust \(identity.publicKey.hex)' (this device, \(identity.deviceID))."
        case .notCurrent: "The other host has moved on; run 'handoff-peer list' to see what it offers now."
        default: "Check the other host's log (handoffd) for details."
        }
    }

    /// Accepts the offer of `reference`: willContinue, then exactly one of continued or failed.
    func accept(_ reference: String) async throws(HandoffError) -> (peer: Peer, activity: Activity) {
        let peer = try peers.resolve(reference)
        guard let offer = peer.visibleOffer(nowMillis: wallClockMillis()) else {
            throw HandoffError(.notFound, "\(peer.name) (\(peer.deviceID)) offers nothing to continue right now.",
                               fix: "Make an activity current on \(peer.name), e.g. 'handoff-peer publish', then run 'handoff-peer list'.")
        }
        nextAcceptID += 1
        let acceptID = Int64(nextAcceptID)
        let type = offer.summary.activityType
        broadcast(["event": "willContinue", "acceptId": .integer(acceptID), "peer": .string(peer.deviceID.description), "type": .string(type)])
        log.info("accepting type \(type) from \(peer.deviceID)")
        let started = monotonicMillis()
        let (identity, timeout) = (identity, configuration.transferTimeoutMillis)
        let (hosts, port, name) = (peer.hosts, peer.transferPort, peer.name)
        let outcome = await onThread(name: "fetch") {
            Daemon.fetch(offer: offer, hosts: hosts, port: port, peerName: name, identity: identity, timeoutMillis: timeout)
        }
        switch outcome {
        case let .success(activity):
            log.info("continued type \(type) from \(peer.deviceID) in \(monotonicMillis() - started) ms")
            broadcast(["event": "continued", "acceptId": .integer(acceptID), "peer": .string(peer.deviceID.description),
                       "activity": activity.json])
            return (peer, activity)
        case let .failure(error):
            log.info("accept of type \(type) from \(peer.deviceID) failed: \(error.code.rawValue)")
            broadcast(["event": "failed", "acceptId": .integer(acceptID), "peer": .string(peer.deviceID.description),
                       "type": .string(type), "error": Self.errorJSON(error)])
            throw error
        }
    }

    static func errorJSON(_ error: HandoffError) -> JSONValue {
        ["code": .string(error.code.rawValue), "message": .string(error.message), "fix": .string(error.fix)]
    }
}
