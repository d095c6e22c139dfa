import FoundationEssentials
import Glibc
import HandoffAPI
import HandoffCore
import HandoffCrypto
import HandoffMDNS
import HandoffTransport
import HandoffRuntime

// Discovery: which paths run, what each observation means, and the mDNS
// service record with its rotating token.
extension Daemon {
    func startDiscovery() throws(HandoffError) {
        let inbox = ObservationInbox(schedule: { [self] drain in onActor { _ in drain() } },
                                     deliver: { [self] batch in assumeIsolated { $0.observe(batch) } })
        sources.inbox = inbox
        let observer: @Sendable (DiscoveryObservation) -> Void = { observation in inbox.post(observation) }
        let context = DiscoveryPaths.Context(configuration: configuration, transferPort: server.port, log: log)
        for registration in DiscoveryPaths.registered {
            guard let path = registration.make(context) else { continue }
            try path.start(observer: observer)
            discovery.paths.append(path)
        }
        for path in configuration.extraDiscoveryPaths {
            try path.start(observer: observer)
            discovery.paths.append(path)
        }
        enterPeriod(nowMillis: clock.wallMillis())
        if let epoch = keys.epoch { offerOwnTokens(epoch: epoch) }
        for path in discovery.paths { log.info("\(path.name): \(path.state)") }
    }

    func observe(_ batch: [DiscoveryObservation]) {
        for observation in batch { observe(observation) }
        // Answers to devices that appeared or asked, probes of devices just seen; then the timer.
        flushAnnouncements()
    }

    func observe(_ observation: DiscoveryObservation) {
        let now = clock.wallMillis()
        switch observation {
        case let .announcement(bytes, host, path):
            let before = peers.drops
            receiveAnnouncement(bytes, from: host, path: path, nowMillis: now)
            if peers.drops != before { log.debug("dropped announcement from \(host) (\(path.rawValue)): \(JSONValueCoding.encode(peers.drops).encodedLine())") }
        case let .serviceFound(sighting):
            // Anyone on the link can publish services: a bounded number are kept (Discovery.found).
            guard discovery.found(sighting) == .changed else { return peers.recordDrop(\.tooMany) }
            log.debug("mdns: \(sighting.instance) at \(sighting.host) port \(sighting.port)")
            keys.sightingsChanged()
        case let .serviceLost(instance):
            if discovery.lost(instance: instance) == .changed { keys.sightingsChanged() }
        case .servicesReset:
            discovery.resetSightings()
            keys.sightingsChanged()
        case let .beacon(token, _, rssi):
            heardBeacon(token: token, rssi: rssi, nowMillis: now)
        }
    }

    /// Sealed announcements are opened with the pair key their hint points to;
    /// clear ones may only be pairing beacons.
    func receiveAnnouncement(_ bytes: [UInt8], from host: String, path: DiscoveryPathName, nowMillis now: UInt64) {
        switch SealedAnnouncement.version(of: bytes) {
        case SealedAnnouncement.version:
            guard let sealed = try? SealedAnnouncement(decoding: bytes) else { return peers.recordDrop(\.malformed) }
            enterPeriod(nowMillis: now)
            guard let (sender, periodKey) = keys.hints[sealed.hint] else { return peers.recordDrop(\.untrusted) }
            guard let inner = AnnouncementSeal.open(sealed, periodKey: periodKey, sender: sender) else {
                return peers.recordDrop(\.undecryptable)
            }
            // The inner announcement must come from the key the seal belongs to.
            guard let received = try? ReceivedAnnouncement(decoding: inner), received.announcement.senderKey == sender else {
                return peers.recordDrop(\.badSignature)
            }
            let before = peers.peers[sender]?.announceSequence
            let events = peers.receive(datagram: inner, fromHost: host, path: path, nowMillis: now,
                                       verifier: verifier, isTrusted: trust.contains)
            remember(announcementFrom: sender, events: events, nowMillis: now)
            emit(events)
            // Accepted (not a copy over the other family, not a replay), and it just
            // appeared or asks: it gets our current state at once, the way it came.
            if let peer = peers.peers[sender], peer.announceSequence != before,
               events.contains(.appeared(sender)) || received.announcement.state.contains(.answerMe) {
                offering.schedule.answer(sender, by: path == .multicast ? .multicast : nil)
            }
        case Announcement.version:
            guard let received = try? ReceivedAnnouncement(decoding: bytes) else { return peers.recordDrop(\.malformed) }
            guard received.announcement.kind == .pairing else { return peers.recordDrop(\.unsealed) }
            // A signature check costs far more than the datagram: anyone can send
            // self-signed beacons, so only so many are checked per second.
            guard discovery.pairingBeaconBudget.allow(host, nowMillis: clock.monotonicMillis()) else { return peers.recordDrop(\.overBudget) }
            guard received.verify(with: verifier) else { return peers.recordDrop(received.signature == nil ? \.unsigned : \.badSignature) }
            notePairingBeacon(received.announcement, from: host, nowMillis: now)
        default:
            peers.recordDrop(\.malformed)
        }
    }

    /// Brings the paired devices' keys to the period of `nowMillis`. A new period first moves
    /// every seal chain forward, erasing the key of the period before the previous one (forward
    /// secrecy for recorded announcements), then checks the paths (AnnounceSchedule.periodTurned:
    /// a path that healed unnoticed, and proof that multicast still works) and offers this
    /// host's new tokens, so its mDNS name and beacon address change with the period.
    func enterPeriod(nowMillis: UInt64, pairedSetChanged: Bool = false) {
        let epoch = ServiceRecord.epoch(wallClockMillis: nowMillis)
        let change = keys.change(at: epoch)
        guard change != .unchanged || pairedSetChanged else { return }
        if change == .first {
            for entry in trust.entries.values where entry.needsRepairing {
                log.warning("\(entry.name) (\(Ed25519.deviceID(of: entry.key))) was paired by a handoff version before 3: pair it again")
            }
        }
        do {
            if try trust.advanceSealChains(to: epoch &- 1) { log.debug("seal keys moved to period \(epoch)") }
        } catch {
            // Still works from the older key; only its erasure on disk waits for the next period.
            log.warning("cannot save the advanced seal keys: \(error.message)")
        }
        if pairedSetChanged {
            keys.pairedSetChanged()
            fixed.handshakeCandidates.withLock { $0 = nil }
        }
        keys.rebuild(epoch: epoch, devices: trust.entries.values.compactMap { entry in
            entry.material.map { PeriodKeys.Device(key: entry.key, discoverySecret: $0.discoverySecret, sealChain: $0.sealChain) }
        })
        guard case let .turned(from) = change else { return } // the first tokens go out when the paths start (startDiscovery)
        // Nothing of this happens at the turn itself, where every host of a network would do it in
        // the same minute: each device's multicast copy, and this host's new mDNS name (which avahi
        // announces to the whole link) and beacon, go at random times in the period. Peers accept
        // tokens up to two periods old (DiscoveryToken.recognisedEpochs) and seals of the previous
        // period meanwhile. A clock that skipped a period (a laptop that slept) moves the tokens at once.
        let periodMillis = ServiceRecord.rotationSeconds * 1000
        let intoPeriod = nowMillis &- epoch &* periodMillis
        let mono = clock.monotonicMillis()
        var random = SystemRandomNumberGenerator()
        offering.schedule.periodTurned(due: AnnounceSchedule.periodCopyDues(
            for: trust.entries.keys, nowMillis: mono, intoPeriodMillis: intoPeriod, periodMillis: periodMillis, using: &random))
        let tokensOffset = from &+ 1 == epoch ? UInt64.random(in: 0..<periodMillis, using: &random) : 0
        discovery.tokensDue = (epoch: epoch, atMillis: mono &+ (tokensOffset > intoPeriod ? tokensOffset - intoPeriod : 0))
    }

    /// The period's new tokens once their random time in the period has come (`enterPeriod`).
    func offerTokensIfDue(nowMillis: UInt64) {
        guard let due = discovery.tokensDue, nowMillis >= due.atMillis else { return }
        discovery.tokensDue = nil
        offerOwnTokens(epoch: due.epoch)
    }

    /// The discovery secrets of paired devices, for recognising their tokens.
    func trustedDiscoverySecrets() -> [(key: DeviceKey, secret: [UInt8])] {
        trust.entries.values.compactMap { entry in entry.material.map { (entry.key, $0.discoverySecret) } }
    }

    /// Called after pairing or untrusting: new keys and hints; a new device gets a first contact at once.
    func trustChanged() {
        enterPeriod(nowMillis: clock.wallMillis(), pairedSetChanged: true)
        for key in discovery.proximity.readings.keys where !trust.contains(key) { discovery.proximity.forget(key) }
        offering.schedule.firstContact(all: false)
        announce()
    }

    /// Which trusted device published each sighting, by its rotating token.
    func recognisedSightings(nowMillis: UInt64) -> [(key: DeviceKey, sighting: ServiceSighting)] {
        enterPeriod(nowMillis: nowMillis)
        return keys.recognise(discovery.sightings.values)
    }

    /// This host's tokens for `epoch` on mDNS and Bluetooth; none while disabled (not on mDNS at
    /// all, and no beacon: the controller keeps scanning, so status can still say who is near).
    func offerOwnTokens(epoch: UInt64) {
        let secret = settings.enabled ? identity.discoverySecret() : nil
        let tokens = secret.map { PeriodTokens(service: DiscoveryToken.token(secret: $0, epoch: epoch),
                                               beacon: DiscoveryToken.beaconToken(secret: $0, epoch: epoch)) }
        for path in discovery.paths { path.show(tokens) }
    }

    /// Paths by which `key` is currently seen, for `list` and `status`.
    func paths(of peer: Peer, nowMillis: UInt64) -> [DiscoveryPathName] {
        var names = Set(peer.livePaths(nowMillis: nowMillis))
        if recognisedSightings(nowMillis: nowMillis).contains(where: { $0.key == peer.key }) { names.insert(.mdns) }
        if discovery.bluetooth != nil, discovery.proximity.readings[peer.key].map({ $0.lastHeardMillis + discovery.proximity.settings.freshnessMillis > nowMillis }) == true {
            names.insert(.bluetooth)
        }
        return names.sorted()
    }
}
