import FoundationEssentials
import Glibc
import HandoffAPI
import HandoffCore
import HandoffCrypto
import HandoffTransport
import HandoffRuntime

/// The local API (Docs/LOCAL-API.md): one JSON object per line each way, typed
/// by HandoffAPI (`RequestEnvelope`, `Reply`, `Event`). Requests carry `op` and an
/// optional `id` echoed in the reply; payloads travel as sealed memfds (SCM_RIGHTS).
extension Daemon {
    /// A request line: 1 MiB holds any request and a JSON publish with a generous userInfo;
    /// larger payloads travel by descriptor (HandoffKit and handoff-peer publish always do), so
    /// the local clients together hold at most `localConnectionLimits.total` MiB of lines.
    static let maximumRequestBytes = 1024 * 1024
    static let localSendTimeoutMillis = 5_000

    /// What a handler answers: the result, and the payload to attach (accept with `payload`).
    struct LocalReply {
        var result: JSONValue
        var payload: PayloadBuffer?
    }

    /// On the loop: a local client connected. Its request lines come one at a time (`LocalSession`);
    /// when it goes, its subscription and declarations end and its place in the limits is freed.
    nonisolated func serveLocalClient(_ connection: StreamConnection, release: @escaping @Sendable () -> Void) {
        // The socket's directory keeps other users out; the kernel's word on who connected is
        // checked as well, so a socket passed on or a directory opened up does not let them in.
        let uid = try? connection.peerUID()
        guard Self.admitsLocalClient(uid: uid, ownUID: getuid()) else {
            log.warning("refused a local API connection from uid \(uid.map(String.init) ?? "unknown"): only this user's programs are served")
            connection.close()
            release()
            return
        }
        let session = LocalSession(connection: connection, loop: loop, stallMillis: UInt64(Self.localSendTimeoutMillis))
        session.start(onLine: { [self] session, line in received(line, on: session) }, onClose: { [self] session in
            release()
            onActor { $0.unsubscribe(session.connection) }
        })
    }

    /// Only the user who runs handoffd (SO_PEERCRED); nil, when the kernel would not say, is refused.
    static func admitsLocalClient(uid: UInt32?, ownUID: UInt32) -> Bool {
        uid == ownUID
    }

    /// Lines longer than this are decoded on a thread of their own, not on the loop.
    static let loopDecodingBytes = 16 * 1024

    /// One request line, on the loop: decoded there when short, else on a thread; then handled
    /// on the actor, which queues the reply (`reply(to:payloadActivity:session:)`).
    private nonisolated func received(_ line: [UInt8], on session: LocalSession) {
        if line.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\r") }) { return session.requestDone() }
        guard line.count <= Self.loopDecodingBytes else {
            return Threads.start("local API request") { [self] in decode(line, on: session, onLoop: false) }
        }
        decode(line, on: session, onLoop: true)
    }

    private nonisolated func decode(_ line: [UInt8], on session: LocalSession, onLoop: Bool) {
        let envelope: RequestEnvelope
        switch RequestEnvelope.decode(line: line) {
        case let .failure(failure):
            // Whatever descriptors the bad line declared are taken and closed, so the next line gets its own.
            for descriptor in (try? session.connection.takeDescriptors(failure.descriptorCount)) ?? [] { close(descriptor) }
            session.send(line: JSONWriter.line(Reply(id: failure.id, outcome: .failure(failure.error)).json))
            return session.requestDone()
        case let .success(decoded):
            envelope = decoded
        }
        // A published payload is checked (and copied once) on a thread, never on the loop or the actor.
        if onLoop, envelope.request.descriptorCount > 0 {
            return Threads.start("local API request") { [self] in hand(envelope, on: session) }
        }
        hand(envelope, on: session)
    }

    private nonisolated func hand(_ envelope: RequestEnvelope, on session: LocalSession) {
        do throws(HandoffError) {
            let activity = try Self.publishedPayload(envelope.request, connection: session.connection)
            onActor(async: { await $0.reply(to: envelope, payloadActivity: activity, session: session) })
        } catch {
            session.send(line: JSONWriter.line(Reply(id: envelope.id, outcome: .failure(error)).json))
            session.requestDone()
        }
    }

    /// Handles one request and queues its reply (with the payload it attaches), then lets the
    /// session read the next line. After awaitStream or openStream succeeded the connection
    /// carries the stream's bytes (Daemon+Streams): the relay takes it, with the reply.
    func reply(to envelope: RequestEnvelope, payloadActivity: EncodedActivity?, session: LocalSession) async {
        let reply: Reply
        var attached: PayloadBuffer?
        switch await handle(envelope.request, payloadActivity: payloadActivity, id: envelope.id, session: session) {
        case nil:
            return session.requestDone()
        case let .success(answer)?:
            attached = answer.payload
            reply = Reply(id: envelope.id, outcome: .success(answer.result))
        case let .failure(error)?:
            reply = Reply(id: envelope.id, outcome: .failure(error))
        }
        let bytes = JSONWriter.line(reply.json)
        if let relay = StreamRelay.claim(session.connection) { return session.handOver { relay.serveApp(reply: bytes) } }
        session.send(line: bytes, payload: attached)
        session.requestDone()
    }

    /// A publish by descriptor: adopts the sealed memfd (its size checked before it
    /// is mapped) and decodes the activity, on the client's thread, not the actor's.
    nonisolated static func publishedPayload(_ request: Request, connection: StreamConnection) throws(HandoffError) -> EncodedActivity? {
        guard case .publish(.descriptor, _) = request else { return nil }
        let descriptor: Int32
        do {
            descriptor = try connection.takeDescriptors(1)[0]
        } catch {
            throw .invalidRequest("The publish names \"payloadFd\": 0, but no descriptor came with it.")
        }
        let buffer: PayloadBuffer
        do {
            buffer = try PayloadBuffer(adopting: descriptor, maximumBytes: ActivityLimits.payloadBytes)
        } catch where error.errno == EMSGSIZE {
            throw HandoffError(.payloadTooLarge, "The payload is larger than \(ActivityLimits.payloadBytes) bytes, the limit.",
                               fix: "Shrink the activity's userInfo; put bulk content in a file whose location travels in userInfo.")
        } catch {
            throw .invalidRequest("The payload descriptor is not usable: \(error). It must be a sealed memfd (Docs/LOCAL-API.md).")
        }
        do {
            // One copy, checked in place: the userInfo is never decoded (the daemon keeps the payload only).
            return try EncodedActivity(payload: Array(buffer.bytes))
        } catch {
            // The decoder's own errors are about a received payload; here the caller made it.
            throw HandoffError(.invalidActivity, "The published payload is not an activity: \(error.message)",
                               fix: "Encode it with Activity.encodedPayload() (HandoffKit does).")
        }
    }

    /// Never throws: a bad request gets an error and changes nothing. nil when
    /// the reply was already sent (subscribe).
    func handle(_ request: Request, payloadActivity: EncodedActivity?, id: JSONValue?,
                session: LocalSession) async -> Result<LocalReply, HandoffError>? {
        do throws(HandoffError) {
            guard let result = try await perform(request, payloadActivity: payloadActivity, id: id, session: session) else { return nil }
            return .success(result)
        } catch {
            return .failure(error)
        }
    }

    /// The dispatch table: one handler per request case (exhaustive, so a new op cannot go unhandled).
    private func perform(_ request: Request, payloadActivity: EncodedActivity?, id: JSONValue?,
                         session: LocalSession) async throws(HandoffError) -> LocalReply? {
        let connection = session.connection
        func plain(_ result: some JSONCodable) -> LocalReply { LocalReply(result: result.json) }
        switch request {
        case .hello: return plain(HelloResult())
        case let .publish(body, publisher): return plain(try publishRequest(body, payloadActivity: payloadActivity, publisher: publisher ?? Self.defaultPublisher))
        case let .becomeCurrent(publisher): return plain(try becomeCurrentRequest(publisher ?? Self.defaultPublisher))
        case let .resign(publisher): return plain(resignRequest(publisher))
        case let .invalidate(publisher): return plain(invalidateRequest(publisher))
        case .list: return plain(PeerList(peers: peerList()))
        case let .accept(peer, requireApp, payload, sequence, digest, ticket):
            let chosen = sequence.map { ChosenOffer(sequence: UInt64($0), digest: digest.flatMap(Hex.decode)) }
            return try await acceptRequest(peer, requireApp: requireApp, payload: payload, chosen: chosen, ticket: ticket)
        case let .decline(peer, sequence): return plain(try declineRequest(peer, sequence: sequence.map(UInt64.init)))
        case .status: return plain(status())
        case .id:
            return plain(IdentityInfo(deviceID: deviceID.description, publicKey: identity.publicKey.hex, name: configuration.name))
        case let .pair(peer, address):
            return plain(pairingOffer(try await startPairing(reference: peer, address: address).get()))
        // A client that closed while this waited for the actor would hold pairing open forever.
        case .pairListen where session.isClosed, .pairOpen where session.isClosed:
            return nil
        case let .pairListen(seconds):
            return plain(pairingOffer(try await listenForPairing(seconds: Int(seconds), holder: ObjectIdentifier(connection)).get()))
        case let .pairOpen(seconds):
            let until = try openPairing(seconds: Int(seconds), holder: ObjectIdentifier(connection)).get()
            return plain(PairingWindow(openUntilMillis: Int64(clamping: until)))
        case let .pairConfirm(session, accept):
            let offer = try await confirmPairing(session: Int(clamping: session), accept: accept).get()
            return plain(PairingResult(peer: Ed25519.deviceID(of: offer.key).description, name: offer.name))
        case .pairable:
            return plain(PairableList(devices: pairableDevices().map {
                PairableDevice(peer: Ed25519.deviceID(of: $0.key).description, name: $0.name, host: $0.host)
            }))
        case .devices: return plain(DeviceList(devices: deviceList()))
        case .enable, .disable:
            try setEnabled(request == .enable)
            return plain(EnabledResult(enabled: settings.enabled))
        case let .doctor(peer): return plain(try await doctor(reference: peer))
        // A client that closed while its request waited for the actor (its unsubscribe may come
        // first) must leave nothing behind: a reused connection would inherit it.
        case .declare where session.isClosed, .subscribe where session.isClosed:
            return nil
        case let .declare(app, types, desktopID, payloads):
            return plain(try declareRequest(app: app, types: types, desktopID: desktopID, payloads: payloads, connection: connection))
        case .declarations: return plain(AppList(apps: declarationList()))
        case let .untrust(peer): return plain(try untrustRequest(peer))
        case let .awaitStream(sequence): return plain(try await awaitStream(sequence: sequence, connection: connection))
        case let .openStream(peer, sequence): return plain(try await openStream(peer: peer, sequence: sequence, connection: connection))
        case let .subscribe(payloads):
            let declared = clients.subscribe(session, payloads: payloads)
            // Queued in this step, so the reply comes before the first event.
            session.send(line: JSONWriter.line(Reply(id: id, outcome: .success(SubscribedResult().json)).json))
            if let declared {
                deliverPending(to: connection, app: declared.app, desktopID: declared.desktopID, types: declared.types)
            }
            return nil
        }
    }

    private func publishRequest(_ body: Request.PublishBody, payloadActivity: EncodedActivity?, publisher: String) throws(HandoffError) -> PublishReceipt {
        switch body {
        case let .json(decoded):
            try requireEnabledToOffer()
            return publishResult(try publish(decoded, by: publisher))
        case .descriptor:
            guard let payloadActivity else { throw .invalidRequest("The publish's payload descriptor was not read.") }
            try requireEnabledToOffer()
            return publishResult(try publish(encoded: payloadActivity, by: publisher))
        }
    }

    private func becomeCurrentRequest(_ publisher: String) throws(HandoffError) -> PublishReceipt {
        guard let encoded = offering.publishers.entry(of: publisher)?.item else {
            throw HandoffError(.notFound, "There is no activity of '\(publisher)' to make current again.",
                               fix: "Publish the activity instead.")
        }
        try requireEnabledToOffer()
        return publishResult(try publish(encoded: encoded, by: publisher))
    }

    /// Only the named publisher's activity stops; if it was current, the one offered before it
    /// comes back. No publisher named: this host stops offering anything (a person at a terminal).
    private func resignRequest(_ publisher: String?) -> ResignResult {
        let had = publisher.map { offering.publishers.resign($0) } ?? offering.publishers.resignAll()
        offerCurrentPublisher()
        return ResignResult(resigned: had)
    }

    private func invalidateRequest(_ publisher: String?) -> InvalidateResult {
        let had = publisher.map { offering.publishers.invalidate($0) } ?? offering.publishers.invalidateAll()
        if had && offering.publishers.entries.isEmpty { offering.invalidated = true }
        offerCurrentPublisher()
        return InvalidateResult(invalidated: had)
    }

    private func acceptRequest(_ reference: String, requireApp: Bool, payload: Bool, chosen: ChosenOffer?,
                               ticket: String?) async throws(HandoffError) -> LocalReply {
        let accepted = try await accept(reference, requireApp: requireApp, chosen: chosen, ticket: ticket)
        let (peer, timing, buffer) = (accepted.peer, accepted.timing, accepted.payload)
        let result = AcceptResult(
            peer: peer.deviceID.description, name: peer.name, activity: accepted.activity,
            deliverTo: accepted.target.app, payloadBytes: Int64(buffer.count),
            handshakeMillis: (timing.handshakeMillis * 1000).rounded() / 1000,
            transferMillis: (timing.transferMillis * 1000).rounded() / 1000, payloadFd: payload ? 0 : nil)
        return LocalReply(result: result.json, payload: payload ? buffer : nil)
    }

    private func declineRequest(_ reference: String, sequence: UInt64?) throws(HandoffError) -> DeclineResult {
        let peer = try peers.resolve(reference)
        guard let offer = peer.visibleOffer(nowMillis: clock.wallMillis()) else {
            throw HandoffError(.notFound, "\(peer.name) offers nothing to decline.", fix: "Run 'handoff-peer list'.")
        }
        if let sequence, sequence != offer.summary.sequence { throw Self.notCurrent(peer.name) }
        peers.decline(peer.key, sequence: offer.summary.sequence)
        discovery.history.declined(peer.key, sequence: offer.summary.sequence, nowMillis: clock.wallMillis())
        broadcast(.declined(peer: peer.deviceID.description, type: offer.summary.activityType))
        return DeclineResult(declined: peer.deviceID.description)
    }

    private func deviceList() -> [DeviceEntry] {
        let inRange = Set(peers.peers.keys)
        return trust.entries.values.sorted { $0.name < $1.name }.map {
            DeviceEntry(peer: Ed25519.deviceID(of: $0.key).description, name: $0.name, publicKey: $0.key.hex,
                        pairedAtMillis: Int64(clamping: $0.addedAtMillis), inRange: inRange.contains($0.key),
                        // Paired before discovery secrets existed: it can no longer be found until paired again.
                        needsPairingAgain: $0.needsRepairing)
        }
    }

    private func declareRequest(app: String, types list: [String], desktopID: String?, payloads: Bool,
                                connection: StreamConnection) throws(HandoffError) -> DeclaredResult {
        var types: Set<String> = []
        for type in list {
            try Activity.validateType(type)
            types.insert(type)
        }
        // Held while this connection stays open: an app that quits stops declaring.
        // Either order works: subscribed first, the payloads wish and the kept continuation apply now;
        // else when it subscribes (Docs/LOCAL-API.md, "declare").
        clients.declare(connection, .init(app: app, types: types, desktopID: desktopID, payloads: payloads))
        log.info("app \(app) declares \(types.count) activity type(s)")
        deliverPending(to: connection, app: app, desktopID: desktopID, types: types)
        return DeclaredResult(declared: types.sorted())
    }

    private func declarationList() -> [AppEntry] {
        let running = clients.declarations.registered.values.map { AppEntry(app: $0.app, running: true, types: $0.types.sorted(), desktopFile: nil) }
        let disk = clients.declarations.disk.current().map { AppEntry(app: $0.name, running: false, types: $0.types, desktopFile: $0.desktopID) }
        return running + disk
    }

    /// Sends `continued` to every subscriber but `skipped` (LocalClients.broadcastContinued).
    func broadcastContinued(_ event: ContinuedEvent, payload: PayloadBuffer, except skipped: ObjectIdentifier? = nil) {
        clients.broadcastContinued(event, payload: payload, except: skipped)
    }

    private func publishResult(_ entry: PublishedActivity) -> PublishReceipt {
        let userInfoBytes = entry.activity.userInfoBytes
        var warnings: [String] = []
        if userInfoBytes > ActivityLimits.recommendedUserInfoBytes {
            warnings.append("userInfo is \(userInfoBytes) bytes, above Apple's 3 KB guidance; it still transfers, but keep activities small.")
        }
        return PublishReceipt(sequence: Int64(clamping: entry.activity.sequence), payloadBytes: Int64(entry.payload.count),
                              userInfoBytes: Int64(userInfoBytes), warnings: warnings)
    }

    func peerList() -> [PeerEntry] {
        let now = clock.wallMillis()
        // With Bluetooth on, only devices that are near are listed (design: "near each other").
        return peers.peers.values.filter { discovery.isNear($0.key, nowMillis: now) }
            .sorted { ($0.name, $0.deviceID) < ($1.name, $1.deviceID) }.map { peer in
            var offer: OfferInfo?
            if let visible = peer.visibleOffer(nowMillis: now) {
                offer = Self.offerInfo(visible.summary)
                offer?.ageMillis = Int64(clamping: peer.age(of: visible.summary.timestampMillis, nowMillis: now))
                // Where accepting it would continue it: an app, "browser" or "terminal" (none here declares it).
                offer?.deliverTo = deliveryTarget(for: visible.summary.activityType,
                                                  hasWebpage: peer.senderState.contains(.offerHasWebpageURL)).app
            }
            return PeerEntry(peer: peer.deviceID.description, name: peer.name, hosts: peer.hosts, port: Int64(peer.transferPort),
                             lastSeenMillisAgo: Int64(clamping: now &- peer.lastSeenMillis),
                             paths: paths(of: peer, nowMillis: now).map(\.rawValue), proximity: proximityJSON(peer.key, nowMillis: now), offer: offer)
        }
    }

    static func offerInfo(_ summary: Summary) -> OfferInfo {
        OfferInfo(type: summary.activityType, title: summary.title, payloadSize: Int64(summary.payloadSize),
                  sequence: Int64(clamping: summary.sequence), timestampMillis: Int64(clamping: summary.timestampMillis),
                  expiresAtMillis: Int64(clamping: summary.expiresAtMillis), digest: Hex.encode(summary.payloadDigest))
    }

    func status() -> StatusReport {
        let current = published.map {
            StatusReport.Current(type: $0.activity.type, sequence: Int64(clamping: $0.activity.sequence),
                                 payloadBytes: Int64($0.payload.count), publisher: $0.publisher)
        }
        // Most recent first: the first offered one is current (Docs/LOCAL-API.md, "Which activity is current").
        let publisherList = offering.publishers.entries.reversed().map { entry in
            StatusReport.Publisher(publisher: entry.publisher, type: entry.item.type,
                                   state: offering.isCurrent(entry) ? "current" : entry.offered ? "waiting" : "resigned")
        }
        let paths = discovery.paths.map {
            // Off, no beacon goes out, whatever the controller was last told.
            let state = !settings.enabled && $0.abilities.contains(.tellNear) && discovery.bluetooth?.currentStatus.available == true
                ? "scanning only on \(discovery.bluetooth?.currentStatus.adapter ?? configuration.hci ?? "the adapter"): no beacon while Handoff is off" : $0.state
            return StatusReport.Path(path: $0.name.rawValue, state: state)
        }
        return StatusReport(
            deviceID: deviceID.description, publicKey: identity.publicKey.hex, name: configuration.name, transferPort: Int64(server.port),
            socket: configuration.socketPath, stateDirectory: configuration.stateDirectory,
            uptimeSeconds: Int64((clock.monotonicMillis() - startedAtMillis) / 1000), discovery: paths,
            peers: Int64(peers.peers.values.filter { discovery.isNear($0.key, nowMillis: clock.wallMillis()) }.count),
            trustedDevices: Int64(trust.entries.count), drops: JSONValueCoding.encode(peers.drops), budgets: budgetStatus(), current: current,
            publishers: publisherList, mdns: mdnsStatus(), bluetooth: bluetoothStatusOnAir(),
            // Disabled, the current activity is kept but offered to nobody.
            enabled: settings.enabled, offering: settings.enabled && published != nil,
            transfers: .init(served: Int64(server.served), refused: Int64(server.refused)))
    }

    /// Work refused to unauthenticated senders because a budget ran out (Docs/SECURITY.md).
    private func budgetStatus() -> JSONValue {
        func listener(_ listener: StreamListener?) -> JSONValue {
            guard let counters = listener?.counters else { return .null }
            return ["active": .integer(Int64(counters.active)), "windingDown": .integer(Int64(counters.windingDown)),
                    "refusedOverLimit": .integer(Int64(counters.refusedOverLimit)),
                    "acceptFailures": .integer(Int64(counters.acceptFailures)), "evictedUnproven": .integer(Int64(counters.evictedUnproven)),
                    "handshakesRefused": .integer(Int64(counters.handshakesRefused))]
        }
        return ["discovery": sources.inbox?.counters.json ?? .null,
                "transferConnections": listener(server.listener), "localConnections": listener(sources.localAPI)]
    }

    /// Handoff off: no beacon goes out, whatever the controller does.
    private func bluetoothStatusOnAir() -> JSONValue {
        guard case var .object(fields) = bluetoothStatus(), fields["available"] == .bool(true) else { return bluetoothStatus() }
        fields["beacon"] = .bool(settings.enabled)
        if !settings.enabled { fields["state"] = .string("scanning only on \(discovery.bluetooth?.currentStatus.adapter ?? configuration.hci ?? "the adapter"): no beacon while Handoff is off") }
        return .object(fields)
    }

    /// Disabled, nothing is offered: publishing then would be a success that offers nothing.
    private func requireEnabledToOffer() throws(HandoffError) {
        guard settings.enabled else {
            throw HandoffError(.enabled, "Handoff is switched off on this host: nothing would be offered.",
                               fix: "Run 'handoff-peer enable', then publish again.")
        }
    }

    private func mdnsStatus() -> JSONValue {
        guard let mdns = discovery.mdns else { return ["enabled": false] }
        let state = mdns.currentStatus
        let recognised = recognisedSightings(nowMillis: clock.wallMillis())
        return ["enabled": true, "available": .bool(state.available), "state": .string(state.text),
                "instance": state.publishedInstance.map { .string($0) } ?? .null,
                "servicesSeen": .integer(Int64(discovery.sightings.count)),
                "trustedServicesSeen": .integer(Int64(Set(recognised.map(\.sighting.instance)).count))]
    }

    private func pairingOffer(_ offer: PairingState.Offer) -> PairingOffer {
        PairingOffer(session: Int64(offer.session), code: offer.code, name: offer.name, peer: Ed25519.deviceID(of: offer.key).description)
    }

    private func untrustRequest(_ text: String) throws(HandoffError) -> UntrustResult {
        guard let key = try pairedKey(matching: text), let entry = trust.entries[key] else {
            throw HandoffError(.notFound, "No paired device is called or has the id '\(text)'.",
                               fix: "Run 'handoff-peer devices' to see the paired devices, their names and ids.")
        }
        try trust.remove(entry.key, nowMillis: clock.wallMillis())
        discovery.history.unpairedHere(entry.key, name: entry.name, nowMillis: clock.wallMillis())
        emit(peers.remove(entry.key))
        trustChanged()
        log.info("no longer trusting \(Ed25519.deviceID(of: entry.key))")
        broadcast(.unpaired(peer: Ed25519.deviceID(of: entry.key).description, name: entry.name))
        return UntrustResult(untrusted: Ed25519.deviceID(of: entry.key).description)
    }

    /// A local client went away: its subscription and its app registration end.
    func unsubscribe(_ connection: StreamConnection) {
        releasePairing(ObjectIdentifier(connection))
        if clients.disconnected(connection) {
            log.info("an app's run-time declaration ended with its connection")
        }
    }
}
