import FoundationEssentials
import Glibc
import HandoffAPI
import HandoffCore
import HandoffCrypto
import HandoffTransport
import HandoffRuntime

/// Pairing (Docs/SECURITY.md, "Pairing"): the responder opens pairing
/// (`handoff-peer pair`), the initiator connects (`handoff-peer pair NAME`),
/// both complete the handshake, exchange committed nonces, and show the same
/// six-digit code with the other's device id; each user confirms on their own
/// screen. Only when both have confirmed do they exchange the keys the pair
/// needs, and the pairing is kept only if both sides stored it: each says
/// whether it did, and a side whose peer could not store rolls back.
///
/// While pairing is open, several devices may ask at once (one per address, a
/// few in all): each gets its own code, and they are shown to the local user one
/// after another. A stranger who asks first is shown as what it is (its name and
/// device id, with a code the other laptop does not show); declining it, or its
/// failing, leaves the window open for the next (Docs/SECURITY.md, "Pairing").
struct PairingState {
    /// A device announcing that it can be paired, heard in its clear beacon.
    struct Beacon {
        var key: DeviceKey
        var name: String
        var host: String
        var port: UInt16
        var seenMillis: UInt64
        var ttlMillis: UInt64
    }

    struct Offer: Sendable {
        var session: Int
        var code: String
        var name: String
        var key: DeviceKey
    }

    typealias OfferWaiter = CheckedContinuation<Result<Offer, HandoffError>, Never>

    /// One pairing dialog, from the connection to its outcome. The dialog runs on its
    /// connection's thread and asks the actor at each step; the local user answers through
    /// the local API (`pairConfirm`). Either may come first at the end: the state says who waits.
    enum Session {
        /// The dialog runs; the code is not known yet. An initiator's `pair` request waits for it.
        case connecting(ready: OfferWaiter?)
        /// The code is known and shown; the dialog waits for the local user's answer (nil once it
        /// stopped waiting: the answer timed out, or pairing closed for a candidate still waiting).
        case codeShown(Offer, decision: CheckedContinuation<Bool, Never>?)
        /// The user answered; the dialog exchanges confirmations and keys, and the answers wait for the
        /// outcome (the terminal that started it and a notification may both have answered).
        case confirmed(Offer, finish: [OfferWaiter])
        /// The dialog ended before the user answered: the answer gets this outcome.
        case finished(Offer, Result<Offer, HandoffError>)

        /// The code shown, once there is one.
        var offer: Offer? {
            switch self {
            case .connecting: nil
            case let .codeShown(offer, _), let .confirmed(offer, _), let .finished(offer, _): offer
            }
        }
    }

    var beacons: [DeviceKey: Beacon] = [:]
    var sessions: [Int: Session] = [:]
    /// The sessions this host answers as responder, with the address each came from.
    var responding: [Int: String] = [:]
    /// Responder sessions whose code is known, not yet shown to the user: the next `pairListen` takes the first.
    var waiting: [Offer] = []
    var nextSession = 0
    /// `pairListen` requests waiting for a device to ask.
    var listeners: [Int: CheckedContinuation<Result<Offer, HandoffError>, Never>] = [:]
    var nextListener = 0
    /// Pairing is open only while someone here asked for it: the local connections that opened
    /// it (`pair`, `pair --open`), each until its own deadline. It closes when the last one goes,
    /// when its time is up, when a device paired, or after `maximumRefusedCandidates`.
    var holders: [ObjectIdentifier: UInt64] = [:]
    var openUntilMillis: UInt64 = 0
    /// Candidates of this window declined on either side or whose code differed.
    var refusedCandidates = 0
    /// Openers whose window closed after too many refused candidates: they cannot open it again
    /// on the same connection (a script guessing codes starts over, and the person sees why).
    var barred: Set<ObjectIdentifier> = []
    /// When the last clear pairing beacon went out (monotonic ms).
    var lastBeaconMillis: UInt64?
    /// `pairable` events: at most one a second (burst 3), however many devices send beacons.
    var pairableNotices = SourceBudget(perSource: .init(perSecond: 1, burst: 3), overall: .init(perSecond: 1, burst: 3), maximumSources: 1)

    static let decisionTimeoutSeconds = 120
    /// Dialogs that ended with a code shown and no answer yet (the user may still type it): the oldest go.
    static let maximumFinishedSessions = 16
    /// Devices answering as candidates at once while pairing is open; one per address.
    static let maximumCandidates = 4
    /// Candidates at once from one IPv4 /24 or IPv6 /64: a stranger with many addresses in its
    /// network cannot take every slot. It can still hold its network's share, and the real
    /// laptop is often in that network: the prompts it causes and the window's close after
    /// `maximumRefusedCandidates` bound that (Docs/SECURITY.md, "Pairing").
    static let maximumCandidatesPerPrefix = 2
    static let maximumBeacons = 32
    /// Beacons kept per source address: one host cannot crowd out the others.
    static let maximumBeaconsPerHost = 4
    /// Declined or mismatched candidates a window takes before it closes: a person compares
    /// codes with one other laptop, so a few strangers are plenty, and a script's `pair --code`
    /// gives a guesser that many tries per run (10⁻⁶ each), not the ~180k an hour the
    /// handshake budget would allow.
    static let maximumRefusedCandidates = 3

    enum Availability: Sendable, Equatable { case open, closed, busy }

    /// When the next clear pairing beacon is due (monotonic ms): at once if none went out yet.
    func nextBeaconMillis(intervalMillis: UInt64) -> UInt64 {
        lastBeaconMillis.map { $0 &+ intervalMillis } ?? 0
    }

    /// Whether a device at `host` may start a pairing handshake now: while pairing is open,
    /// one session per address, `maximumCandidatesPerPrefix` per network and `maximumCandidates` in all.
    func availability(host: String, open: Bool) -> Availability {
        guard open else { return .closed }
        guard responding.count < Self.maximumCandidates, !responding.values.contains(host) else { return .busy }
        let prefix = AddressPrefix.of(host) ?? host
        guard responding.values.count(where: { (AddressPrefix.of($0) ?? $0) == prefix }) < Self.maximumCandidatesPerPrefix else { return .busy }
        return .open
    }

    /// Remembers a beacon (the newest per key) within both bounds. Over the
    /// per-host bound the host's own oldest goes; over the total, the oldest
    /// of the host holding the most. So a flood of keys from one address
    /// evicts only that address's beacons.
    mutating func remember(_ beacon: Beacon) {
        beacons[beacon.key] = beacon
        let fromHost = beacons.values.filter { $0.host == beacon.host }
        if fromHost.count > Self.maximumBeaconsPerHost, let oldest = fromHost.min(by: { $0.seenMillis < $1.seenMillis }) {
            beacons.removeValue(forKey: oldest.key)
        }
        if beacons.count > Self.maximumBeacons {
            let byHost = Dictionary(grouping: beacons.values, by: \.host)
            if let crowded = byHost.values.max(by: { $0.count < $1.count }),
               let oldest = crowded.min(by: { $0.seenMillis < $1.seenMillis }) {
                beacons.removeValue(forKey: oldest.key)
            }
        }
    }
}

extension Daemon {
    func isPairingOpen() -> Bool {
        !pairing.holders.isEmpty && pairing.openUntilMillis > clock.wallMillis()
    }

    /// Whether a pairing handshake from `host` is answered now.
    func pairingAvailability(host: String) -> PairingState.Availability {
        pairing.availability(host: host, open: isPairingOpen())
    }

    func notePairingBeacon(_ beacon: Announcement, from host: String, nowMillis: UInt64) {
        // Our own beacon can come back through multicast loopback.
        guard beacon.senderKey != identity.publicKey else { return }
        let ttl = UInt64(beacon.ttlSeconds) * 1000
        guard PeerTable.isFresh(timestampMillis: beacon.timestampMillis, ttlMillis: ttl, nowMillis: nowMillis) else {
            return peers.recordDrop(\.expired)
        }
        let known = pairing.beacons[beacon.senderKey].map { $0.seenMillis + $0.ttlMillis > nowMillis } ?? false
        let remembered = PairingState.Beacon(key: beacon.senderKey, name: beacon.name, host: host,
                                             port: beacon.transferPort, seenMillis: nowMillis, ttlMillis: ttl)
        pairing.remember(remembered)
        if !known, pairing.beacons[beacon.senderKey] != nil { tellPairable(remembered) }
    }

    /// The agent offers to pair with a device newly pairable, only while the user here asked to
    /// pair (pairing open on this host too): anyone on the link can send beacons, under any name.
    /// Not for a device already paired, nor one claiming this host's name or a paired device's
    /// (`pair --list` still shows it, with its device id). At most one a second.
    private func tellPairable(_ beacon: PairingState.Beacon) {
        guard isPairingOpen(), !trust.contains(beacon.key), !claimsAKnownName(beacon),
              pairing.pairableNotices.allow("beacons", nowMillis: clock.monotonicMillis()) else { return }
        broadcast(.pairable(peer: Ed25519.deviceID(of: beacon.key).description, name: beacon.name))
    }

    func claimsAKnownName(_ beacon: PairingState.Beacon) -> Bool {
        let name = beacon.name.lowercased()
        return name == configuration.name.lowercased()
            || trust.entries.values.contains { $0.key != beacon.key && $0.name.lowercased() == name }
    }

    /// Devices that can be paired right now, for `pair` without a name.
    func pairableDevices() -> [PairingState.Beacon] {
        let now = clock.wallMillis()
        return pairing.beacons.values.filter { $0.seenMillis + $0.ttlMillis > now }.sorted { $0.name < $1.name }
    }

    // MARK: - Local API

    /// `pairOpen`: opens pairing for `seconds` (or keeps it open) while `holder`, the local
    /// connection that asked, stays; returns when it closes (wall ms). Devices that ask are told
    /// to subscribers (`pairingCode`), which answer with `pairConfirm`.
    func openPairing(seconds: Int, holder: ObjectIdentifier) -> Result<UInt64, HandoffError> {
        if let refused = holdPairing(seconds: seconds, holder: holder) { return .failure(refused) }
        return .success(pairing.openUntilMillis)
    }

    /// `pairListen`: as `pairOpen`, and returns the next device that asked, with the code to
    /// compare: one already waiting, else the next to ask.
    func listenForPairing(seconds: Int, holder: ObjectIdentifier) async -> Result<PairingState.Offer, HandoffError> {
        if let refused = holdPairing(seconds: seconds, holder: holder) { return .failure(refused) }
        if !pairing.waiting.isEmpty { return .success(pairing.waiting.removeFirst()) }
        pairing.nextListener += 1
        let id = pairing.nextListener
        return await withCheckedContinuation { continuation in
            pairing.listeners[id] = continuation
            loop.after(millis: UInt64(seconds) * 1000) { self.onActor { $0.closeListener(id) } }
        }
    }

    private func holdPairing(seconds: Int, holder: ObjectIdentifier) -> HandoffError? {
        guard !pairing.barred.contains(holder) else { return Self.tooManyRefused }
        let wasOpen = isPairingOpen()
        let until = clock.wallMillis() + UInt64(seconds) * 1000
        pairing.holders[holder] = max(pairing.holders[holder] ?? 0, until)
        pairing.openUntilMillis = max(pairing.openUntilMillis, until)
        log.info("pairing open for \(seconds) s")
        loop.after(millis: UInt64(seconds) * 1000 + 1) { self.onActor { $0.pairingTimePassed() } }
        if !wasOpen {
            pairing.refusedCandidates = 0
            announce()
            // Devices that opened pairing before this one did: the user here may pair with them now.
            let now = clock.wallMillis()
            for beacon in pairing.beacons.values.sorted(by: { $0.seenMillis > $1.seenMillis })
            where beacon.seenMillis + beacon.ttlMillis > now {
                tellPairable(beacon)
            }
        }
        return nil
    }

    static let tooManyRefused = HandoffError(.declined, "Pairing closed: \(PairingState.maximumRefusedCandidates) devices were declined or showed another code.",
        fix: "Someone may be guessing codes: pair elsewhere, or run 'handoff-peer pair' again when only your other laptop asks.")

    /// A local connection closed: pairing it held open closes unless another holds it too.
    func releasePairing(_ holder: ObjectIdentifier) {
        pairing.barred.remove(holder)
        guard pairing.holders.removeValue(forKey: holder) != nil else { return }
        if pairing.holders.isEmpty {
            closePairingWindow(reason: "opener-gone")
        } else {
            pairing.openUntilMillis = pairing.holders.values.max() ?? 0
        }
    }

    private func pairingTimePassed() {
        let now = clock.wallMillis()
        pairing.holders = pairing.holders.filter { $0.value > now }
        if !pairing.holders.isEmpty || pairing.openUntilMillis != 0, !isPairingOpen() { closePairingWindow(reason: "timed-out") }
    }

    private func closeListener(_ id: Int) {
        if let listener = pairing.listeners.removeValue(forKey: id) {
            listener.resume(returning: .failure(HandoffError(.timedOut, "No device asked to pair.",
                fix: "On the other host run 'handoff-peer pair \(configuration.name)' while this one waits.")))
        }
    }

    /// Pairing closes: its beacon stops (the next announcement has none), every candidate still
    /// waiting for an answer here is declined, waiting `pairListen`s hear why, and subscribers
    /// (the agent) are told, so "can be paired" notifications go.
    private func closePairingWindow(reason: String) {
        let wasOpen = pairing.openUntilMillis != 0 || !pairing.holders.isEmpty
        pairing.openUntilMillis = 0
        pairing.holders.removeAll()
        for id in pairing.responding.keys {
            if case let .codeShown(shown, decision?) = pairing.sessions[id] {
                pairing.sessions[id] = .codeShown(shown, decision: nil)
                decision.resume(returning: false)
            }
        }
        pairing.waiting.removeAll()
        let error = reason == "too-many-declined" ? Self.tooManyRefused
            : HandoffError(.timedOut, reason == "paired" ? "Pairing closed: a device paired." : "Pairing closed before a device asked.",
                           fix: "Run 'handoff-peer pair' again to pair another device.")
        let listeners = pairing.listeners
        pairing.listeners.removeAll()
        for listener in listeners.values { listener.resume(returning: .failure(error)) }
        if wasOpen {
            log.info("pairing closed: \(reason)")
            broadcast(.pairingClosed(reason: reason))
        }
    }

    /// Connections a pairing initiator makes when each is reset before its handshake ends (0.2 s, 0.4 s, ... apart).
    static let pairingConnectAttempts = 8

    /// `pair`: connects to a device that has pairing open and returns the code to compare.
    func startPairing(reference: String?, address: String?) async -> Result<PairingState.Offer, HandoffError> {
        let target: (hosts: [String], port: UInt16, name: String, key: DeviceKey?)
        do throws(HandoffError) {
            target = try pairingTarget(reference: reference, address: address)
        } catch {
            return .failure(error)
        }
        let (identity, timeout) = (identity, configuration.transferTimeoutMillis)
        log.info("pairing with \(target.name)")
        return await pair(named: target.name, expecting: target.key) { () throws(HandoffError) -> SecureChannel in
            // A device pairing is a stranger to the responder until the dialog ends: its hello
            // shares the handshake rate for unknown addresses (Docs/SECURITY.md) with anyone else on
            // the link, and may be closed unanswered. Asking again is what a person would do.
            var attempt = 0
            while true {
                do throws(HandoffError) {
                    return try Daemon.connect(hosts: target.hosts, port: target.port, peerName: target.name, identity: identity,
                                              purpose: .pair, secrets: nil, timeoutMillis: timeout)
                } catch where error.code == .connectionLost && attempt < Self.pairingConnectAttempts - 1 {
                    attempt += 1
                    usleep(UInt32(200_000 * attempt))
                }
            }
        }
    }

    /// Runs the initiator's side over the channel `open` makes, on a thread of
    /// its own; returns once the code is known (or pairing failed).
    /// `expecting` is the key the responder's beacon carried: the handshake must prove that key.
    func pair(named peerName: String, expecting expected: DeviceKey?,
              open: @escaping @Sendable () throws(HandoffError) -> SecureChannel) async -> Result<PairingState.Offer, HandoffError> {
        pairing.nextSession += 1
        let id = pairing.nextSession
        let ownName = configuration.name
        return await withCheckedContinuation { continuation in
            pairing.sessions[id] = .connecting(ready: continuation)
            Threads.start("pairing") { [self] in
                do throws(HandoffError) {
                    let channel = try open()
                    defer { channel.close() }
                    if let expected, channel.session.peerKey != expected {
                        throw HandoffError(.trust, "The device that answered is not the \(peerName) whose pairing beacon this host heard.",
                                           fix: "Someone else may be answering for it: do not pair on this network now, or give its device id.")
                    }
                    try initiatePairing(over: channel, session: id, ownName: ownName, peerName: peerName)
                } catch {
                    onActorWaiting { $0.pairingEnded(id, .failure(error)) }
                }
            }
        }
    }

    private func pairingTarget(reference: String?, address: String?) throws(HandoffError)
        -> (hosts: [String], port: UInt16, name: String, key: DeviceKey?) {
        if let address {
            let (host, port) = try Self.parseAddress(address)
            return ([host], port, reference ?? address, nil)
        }
        let candidates = pairableDevices()
        let matches: [PairingState.Beacon]
        if let reference {
            let prefix = DeviceID.normalize(reference) ?? ""
            matches = candidates.filter {
                $0.name == reference || (prefix.count >= 4 && Ed25519.deviceID(of: $0.key).compact.hasPrefix(prefix))
            }
        } else {
            matches = candidates
        }
        guard matches.count == 1, let beacon = matches.first else {
            let names = candidates.map { "\($0.name) (\(Ed25519.deviceID(of: $0.key)))" }.joined(separator: ", ")
            if matches.isEmpty {
                throw HandoffError(.notFound, reference.map { "No device named '\($0)' has pairing open." } ?? "No device has pairing open.",
                                   fix: "Run 'handoff-peer pair' on the other host first (it waits), then run this again"
                                        + (names.isEmpty ? "; or give its address with --address." : ". Pairable now: \(names)."))
            }
            // Names are not authenticated: several devices may claim one. Say so, with each key's id.
            let claimants = matches.map { "\($0.name) (\(Ed25519.deviceID(of: $0.key)))" }.joined(separator: ", ")
            throw HandoffError(.ambiguous, reference.map { "\(matches.count) devices named '\($0)' have pairing open: \(claimants)." }
                                   ?? "More than one device has pairing open: \(names).",
                               fix: "Give the device id that the other host shows (handoff-peer id), e.g. 'handoff-peer pair \(Ed25519.deviceID(of: matches[0].key))'.")
        }
        return ([beacon.host], beacon.port, beacon.name, beacon.key)
    }

    /// HOST, HOST:PORT, or [IPV6]:PORT; the port defaults to 47181 and must be 1 to 65535.
    static func parseAddress(_ text: String) throws(HandoffError) -> (String, UInt16) {
        let invalid = HandoffError(.invalidRequest, "'\(text)' is not an address.",
                                   fix: "Give a numeric address: 169.254.10.2, 169.254.10.2:47181 or [fe80::1%eth0]:47181.")
        func port(_ digits: Substring) throws(HandoffError) -> UInt16 {
            guard !digits.isEmpty, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber),
                  let value = UInt16(digits), value > 0 else { throw invalid }
            return value
        }
        let host: String
        var number: UInt16 = 47181
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw invalid }
            host = String(text[text.index(after: text.startIndex)..<close])
            let rest = text[text.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { throw invalid }
                number = try port(rest.dropFirst())
            }
        } else {
            let parts = text.split(separator: ":", omittingEmptySubsequences: false)
            if parts.count > 2 {
                host = text // a bare IPv6 address: it takes the default port (brackets carry a port)
            } else {
                host = String(parts[0])
                if parts.count == 2 { number = try port(parts[1]) }
            }
        }
        guard !host.isEmpty else { throw invalid }
        return (host, number)
    }

    /// `pairConfirm`: the local user's answer; returns once both sides have answered.
    func confirmPairing(session id: Int, accept: Bool) async -> Result<PairingState.Offer, HandoffError> {
        let notWaiting = HandoffError(.notFound, "There is no pairing session \(id) waiting for an answer.",
                                      fix: "Start again with 'handoff-peer pair'.")
        switch pairing.sessions[id] {
        case nil, .connecting?:
            return .failure(notWaiting)
        case let .confirmed(offer, finish)?:
            // Answered already (in a notification, say): this answer gets the same outcome.
            return await withCheckedContinuation { continuation in
                pairing.sessions[id] = .confirmed(offer, finish: finish + [continuation])
            }
        case let .finished(_, outcome)?:
            pairing.sessions.removeValue(forKey: id)
            return outcome
        case let .codeShown(offer, decision)?:
            // A dialog that stopped waiting (timed out) goes on with "no" and its outcome comes here.
            decision?.resume(returning: accept)
            // Answered here, it is no longer for a `pairListen` to show.
            pairing.waiting.removeAll { $0.session == id }
            return await withCheckedContinuation { continuation in
                pairing.sessions[id] = .confirmed(offer, finish: [continuation])
            }
        }
    }

    // MARK: - Dialog (runs on the connection's thread)

    nonisolated func initiatePairing(over channel: SecureChannel, session id: Int, ownName: String,
                                     peerName: String) throws(HandoffError) {
        try channel.send(.pairRequest(name: ownName))
        let theirName: String
        let commitment: [UInt8]
        switch try channel.receive() {
        case let .pairCommit(name, committed):
            (theirName, commitment) = (name, committed)
        case let .refusal(refusal):
            throw HandoffError(refusal.code, "\(peerName) refused: \(refusal.message).",
                               fix: "Run 'handoff-peer pair' on \(peerName) first (it waits for this host), then pair again here.")
        default:
            throw HandoffError(.payloadInvalid, "Unexpected answer while pairing.", fix: "Make sure both hosts run the same handoff version.")
        }
        let nonce = Random.bytes(TransferFrame.pairNonceBytes)
        try channel.send(.pairNonce(nonce))
        guard case let .pairReveal(theirNonce) = try channel.receive(),
              constantTimeEqual(PairingCode.commitment(to: theirNonce), commitment) else {
            throw HandoffError(.signatureMismatch, "\(peerName)'s pairing nonce does not match its commitment.",
                               fix: "Do not pair on this network now: someone may be interfering. Try again elsewhere.")
        }
        let code = PairingCode.code(transcriptHash: channel.session.transcriptHash, initiator: identity.publicKey,
                                    responder: channel.session.peerKey, initiatorNonce: nonce, responderNonce: theirNonce)
        try decideAndConfirm(over: channel, session: id, offer: .init(session: id, code: code, name: theirName, key: channel.session.peerKey))
    }

    nonisolated func respondToPairing(over channel: SecureChannel) throws(HandoffError) {
        // The handshake was answered only because pairing was open; take the session now or refuse.
        let host = StreamListener.sourceKey(channel.connection.remoteHost ?? channel.connection.remote)
        guard let id = onActorWaiting({ $0.acceptPairingRequest(from: host) }) else {
            try channel.send(.refusal(.init(code: .trust, message: "pairing is not open here")))
            return
        }
        do throws(HandoffError) {
            guard case let .pairRequest(theirName) = try channel.receive() else {
                throw HandoffError(.payloadInvalid, "Expected a pairing request.", fix: "Make sure both hosts run the same handoff version.")
            }
            let nonce = Random.bytes(TransferFrame.pairNonceBytes)
            try channel.send(.pairCommit(name: configuration.name, commitment: PairingCode.commitment(to: nonce)))
            guard case let .pairNonce(theirNonce) = try channel.receive() else {
                throw HandoffError(.payloadInvalid, "Expected the initiator's pairing nonce.", fix: "Make sure both hosts run the same handoff version.")
            }
            try channel.send(.pairReveal(nonce))
            let code = PairingCode.code(transcriptHash: channel.session.transcriptHash, initiator: channel.session.peerKey,
                                        responder: identity.publicKey, initiatorNonce: theirNonce, responderNonce: nonce)
            try decideAndConfirm(over: channel, session: id, offer: .init(session: id, code: code, name: theirName, key: channel.session.peerKey))
        } catch {
            onActorWaiting { $0.pairingEnded(id, .failure(error)) }
        }
    }

    /// Shows the code (through the waiting API request), waits for the local
    /// user, exchanges confirmations, then the keys, then whether each side
    /// stored them: the pairing is kept on both sides or on neither.
    private nonisolated func decideAndConfirm(over channel: SecureChannel, session id: Int,
                                              offer: PairingState.Offer) throws(HandoffError) {
        let accepted = onActorWaiting(async: { await $0.pairingReady(offer) })
        try channel.send(.pairConfirm(accepted: accepted))
        guard case let .pairConfirm(theirs) = try channel.receive() else {
            throw HandoffError(.payloadInvalid, "Expected the other side's confirmation.", fix: "Pair again.")
        }
        guard accepted else {
            throw HandoffError(.declined, "Pairing with \(offer.name) was declined here.", fix: "Pair again if that was a mistake.")
        }
        guard theirs else {
            throw HandoffError(.declined, "\(offer.name) declined, or its screen showed another code.",
                               fix: "If the codes differed, do not pair on this network now; otherwise pair again.")
        }
        // Secrets go only to the device both users just confirmed, over the channel the code vouched for.
        var secret = identity.discoverySecret()
        defer { wipe(&secret) }
        let epoch = ServiceRecord.epoch(wallClockMillis: clock.wallMillis())
        try channel.send(.pairKeys(.init(agreementKey: identity.agreementKey, discoverySecret: secret, epoch: epoch)))
        guard case let .pairKeys(keys) = try channel.receive() else {
            throw HandoffError(.payloadInvalid, "Expected the other side's keys.", fix: "Make sure both hosts run the same handoff version, then pair again.")
        }
        guard identity.pairKey(with: offer.key, agreementKey: keys.agreementKey) != nil else {
            throw HandoffError(.signatureMismatch, "\(offer.name) sent an unusable agreement key.", fix: "Pair again; if it repeats, do not pair with that device.")
        }
        let material = TrustStore.PairMaterial(
            agreementKey: keys.agreementKey, discoverySecret: keys.discoverySecret,
            sealChain: .seed(exporterKey: channel.session.exporterKey, epoch: min(epoch, keys.epoch) &- 1))
        let stored = onActorWaiting { $0.storePairing(offer, material) }
        var theirsStored = false
        do throws(HandoffError) {
            try channel.send(.pairStored(stored.isSuccess))
            if case let .pairStored(flag) = try channel.receive() { theirsStored = flag }
        } catch {
            theirsStored = false
        }
        switch stored {
        case let .failure(error):
            throw error
        case let .success(before) where !theirsStored:
            onActorWaiting { $0.rollBackPairing(to: before, offer) }
            throw HandoffError(.storage, "\(offer.name) could not store the pairing (or the connection ended first), so this host did not keep it either.",
                               fix: "Check the state directory on \(offer.name) (disk full or read-only?), then pair again.")
        case .success:
            onActorWaiting { $0.pairingEnded(id, .success(offer)) }
        }
    }

    // MARK: - Session bookkeeping (on the actor)

    /// A device asked to pair: a session of its own while pairing is open and the
    /// bounds allow it (one per address, a few in all), else nil (refused).
    func acceptPairingRequest(from host: String) -> Int? {
        guard pairingAvailability(host: host) == .open else { return nil }
        pairing.nextSession += 1
        let id = pairing.nextSession
        pairing.sessions[id] = .connecting(ready: nil)
        pairing.responding[id] = host
        return id
    }

    /// Stores the confirmed peer; returns what the store held before, to roll back to.
    func storePairing(_ offer: PairingState.Offer, _ material: TrustStore.PairMaterial) -> Result<TrustStore.Snapshot, HandoffError> {
        let before = trust.snapshot
        do throws(HandoffError) {
            try trust.add(offer.key, name: offer.name, material: material, nowMillis: clock.wallMillis())
            return .success(before)
        } catch {
            log.warning("cannot store the pairing with \(Ed25519.deviceID(of: offer.key)): \(error.message)")
            return .failure(error)
        }
    }

    /// The other side did not store: put the trust store back as it was.
    func rollBackPairing(to before: TrustStore.Snapshot, _ offer: PairingState.Offer) {
        do throws(HandoffError) {
            try trust.restore(offer.key, from: before)
            log.info("rolled back the pairing with \(Ed25519.deviceID(of: offer.key)): the other side did not store it")
        } catch {
            log.error("cannot roll back the pairing with \(Ed25519.deviceID(of: offer.key)): \(error.message); run 'handoff-peer untrust \(Ed25519.deviceID(of: offer.key))'")
        }
        trustChanged()
    }

    /// The code is known: hand it to the waiting request (a responder's goes to the next
    /// `pairListen`, now or when one comes), then wait for the user's answer.
    func pairingReady(_ offer: PairingState.Offer) async -> Bool {
        guard case let .connecting(ready)? = pairing.sessions[offer.session] else { return false }
        // Whoever shows codes (the notification agent) shows this one, on either side.
        broadcast(.pairingCode(PairingCodeEvent(session: Int64(offer.session), peer: Ed25519.deviceID(of: offer.key).description,
                                                name: offer.name, code: offer.code,
                                                role: pairing.responding[offer.session] != nil ? "responder" : "initiator")))
        if let ready {
            ready.resume(returning: .success(offer))
        } else if pairing.responding[offer.session] != nil {
            if let (listenerID, listener) = pairing.listeners.min(by: { $0.key < $1.key }) {
                pairing.listeners.removeValue(forKey: listenerID)
                listener.resume(returning: .success(offer))
            } else {
                pairing.waiting.append(offer)
            }
        }
        return await withCheckedContinuation { continuation in
            pairing.sessions[offer.session] = .codeShown(offer, decision: continuation)
            let session = offer.session
            loop.after(millis: UInt64(PairingState.decisionTimeoutSeconds) * 1000) {
                self.onActor { $0.expireDecision(session) }
            }
        }
    }

    private func expireDecision(_ id: Int) {
        guard case let .codeShown(offer, decision?)? = pairing.sessions[id] else { return }
        pairing.sessions[id] = .codeShown(offer, decision: nil)
        decision.resume(returning: false)
    }

    /// Reports the outcome (both sides have stored on success) to whoever waits for it.
    func pairingEnded(_ id: Int, _ outcome: Result<PairingState.Offer, HandoffError>) {
        let wasResponding = pairing.responding.removeValue(forKey: id) != nil
        pairing.waiting.removeAll { $0.session == id }
        switch outcome {
        case let .success(offer):
            log.info("paired with \(Ed25519.deviceID(of: offer.key))")
            broadcast(.paired(peer: Ed25519.deviceID(of: offer.key).description, name: offer.name))
            // The user paired the device they wanted: pairing closes for the others.
            closePairingWindow(reason: "paired")
            trustChanged()
        case let .failure(error):
            log.info("pairing ended without pairing: \(error.code.rawValue)")
            // A dialog whose code was shown: whoever shows it (a notification) hears how it ended.
            if let offer = pairing.sessions[id]?.offer {
                broadcast(.pairingEnded(session: Int64(id), peer: Ed25519.deviceID(of: offer.key).description, name: offer.name, error: error))
                // A candidate declined (on either side, or for another code): a window takes a few.
                if wasResponding, isPairingOpen() {
                    pairing.refusedCandidates += 1
                    if pairing.refusedCandidates >= PairingState.maximumRefusedCandidates {
                        pairing.barred.formUnion(pairing.holders.keys)
                        closePairingWindow(reason: "too-many-declined")
                    }
                }
            }
        }
        switch pairing.sessions.removeValue(forKey: id) {
        case nil, .finished?:
            break
        case let .connecting(ready)?:
            // An initiator hears why; a responder's dialog that ended before its code was known
            // was never shown, and nobody will ask for it.
            ready?.resume(returning: outcome)
        case let .confirmed(_, finish)?:
            for waiter in finish { waiter.resume(returning: outcome) }
        case let .codeShown(offer, decision)?:
            // Shown and not answered yet: the answer, when it comes, gets the outcome.
            decision?.resume(returning: false)
            pairing.sessions[id] = .finished(offer, outcome)
            let unanswered = pairing.sessions.filter { if case .finished = $0.value { true } else { false } }.keys.sorted()
            for old in unanswered.dropLast(PairingState.maximumFinishedSessions) { pairing.sessions.removeValue(forKey: old) }
        }
    }
}

extension Result {
    var isSuccess: Bool {
        if case .success = self { return true }
        return false
    }
}
