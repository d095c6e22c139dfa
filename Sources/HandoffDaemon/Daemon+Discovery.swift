import FoundationEssentials
import Glibc
import HandoffCore
import HandoffCrypto
import HandoffMDNS
import HandoffTransport

// Discovery: which paths run, what each observation means, and the mDNS
// service record with its rotating token.
extension Daemon {
    /// Distinct mDNS instances kept (a household or office has far fewer Handoff hosts).
    static let maximumSightings = 256
    static let maximumAddressesPerSighting = 4
    /// Clear pairing beacons whose signatures are checked, per source and overall.
    static let pairingBeaconRate = SourceBudget.Rate(perSecond: 2, burst: 4)
    static let pairingBeaconOverallRate = SourceBudget.Rate(perSecond: 50, burst: 50)

    func startDiscovery() throws(HandoffError) {
        let inbox = ObservationInbox { [self] batch in await self.observe(batch) }
        self.inbox = inbox
        let observer: @Sendable (DiscoveryObservation) -> Void = { observation in inbox.post(observation) }
        if configuration.discovery.contains(.multicast) {
            var settings = configuration.multicast
            settings.interface = configuration.interface
            let path = MulticastDiscovery(configuration: settings)
            try path.start(observer: observer)
            discoveryPaths.append(path)
            multicast = path
        }
        if configuration.discovery.contains(.mdns) {
            let unicast = UnicastAnnouncer(port: transferPort)
            try unicast.start(observer: observer)
            discoveryPaths.append(unicast)
            self.unicast = unicast
            // Avahi being absent is not fatal: the path waits for it and says so in status.
            let mdns = AvahiDiscovery(servicePort: transferPort, interface: configuration.interface)
            try mdns.start(observer: observer)
            discoveryPaths.append(mdns)
            self.mdns = mdns
            rotateServiceRecord()
        }
        try startBluetooth(observer: observer)
        for path in discoveryPaths { log.info("\(path.name): \(path.state)") }
    }

    func observe(_ batch: [DiscoveryObservation]) {
        for observation in batch { observe(observation) }
        // Answers to devices that appeared or asked, probes of devices just seen; then the timer.
        flushAnnouncements()
    }

    func observe(_ observation: DiscoveryObservation) {
        let now = wallClockMillis()
        switch observation {
        case let .announcement(bytes, host, path):
            let before = peers.drops
            receiveAnnouncement(bytes, from: host, path: path, nowMillis: now)
            if peers.drops != before { log.debug("dropped announcement from \(host) (\(path.rawValue)): \(peers.drops.json.encodedLine())") }
        case let .serviceFound(sighting):
            // Anyone on the link can publish services: keep a bounded number, and
            // a bounded number of addresses for each.
            guard sightings[sighting.instance] != nil || sightings.count < Self.maximumSightings else {
                return peers.recordDrop(\.tooMany)
            }
            var known = sightings[sighting.instance, default: []]
            known.removeAll { $0.host == sighting.host }
            known.append(sighting)
            sightings[sighting.instance] = Array(known.suffix(Self.maximumAddressesPerSighting))
            log.debug("mdns: \(sighting.instance) at \(sighting.host) port \(sighting.port)")
            recognisedCache = nil
        case let .serviceLost(instance):
            sightings.removeValue(forKey: instance)
            recognisedCache = nil
        case .servicesReset:
            sightings.removeAll()
            recognisedCache = nil
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
            refreshHints(nowMillis: now)
            guard let (sender, periodKey) = hintTable[sealed.hint] else { return peers.recordDrop(\.untrusted) }
            guard let inner = AnnouncementSeal.open(sealed, periodKey: periodKey, sender: sender) else {
                return peers.recordDrop(\.undecryptable)
            }
            // The inner announcement must come from the key the seal belongs to.
            guard let received = try? ReceivedAnnouncement(decoding: inner), received.announcement.senderKey == sender else {
                return peers.recordDrop(\.badSignature)
            }
            let before = peers.peers[sender]?.announceSequence
            let events = peers.receive(datagram: inner, fromHost: host, path: path.rawValue, nowMillis: now,
                                       verifier: verifier, isTrusted: trust.contains)
            remember(announcementFrom: sender, events: events, nowMillis: now)
            emit(events)
            // Accepted (not a copy over the other family, not a replay), and it just
            // appeared or asks: it gets our current state at once, the way it came.
            if let peer = peers.peers[sender], peer.announceSequence != before,
               events.contains(.appeared(sender)) || received.announcement.state.contains(.answerMe) {
                schedule.answer(sender, by: path == .multicast ? .multicast : nil)
            }
        case Announcement.version:
            guard let received = try? ReceivedAnnouncement(decoding: bytes) else { return peers.recordDrop(\.malformed) }
            guard received.announcement.kind == .pairing else { return peers.recordDrop(\.unsealed) }
            // A signature check costs far more than the datagram: anyone can send
            // self-signed beacons, so only so many are checked per second.
            guard pairingBeaconBudget.allow(host, nowMillis: monotonicMillis()) else { return peers.recordDrop(\.overBudget) }
            guard received.verify(with: verifier) else { return peers.recordDrop(received.signature == nil ? \.unsigned : \.badSignature) }
            notePairingBeacon(received.announcement, from: host, nowMillis: now)
        default:
            peers.recordDrop(\.malformed)
        }
    }

    /// Rebuilds the hint table when the period turns or the trusted set
    /// changes. A new period first moves every seal chain forward, erasing the
    /// key of the period before the previous one (forward secrecy for recorded
    /// announcements).
    func refreshHints(nowMillis: UInt64, force: Bool = false) {
        let epoch = ServiceRecord.epoch(wallClockMillis: nowMillis)
        guard force || epoch != hintEpoch else { return }
        if hintEpoch == nil {
            for entry in trust.entries.values where entry.needsRepairing {
                log.warning("\(entry.name) (\(Ed25519.deviceID(of: entry.key))) was paired by a handoff version before 3: pair it again")
            }
        }
        hintEpoch = epoch
        do {
            if try trust.advanceSealChains(to: epoch &- 1) { log.debug("seal keys moved to period \(epoch)") }
        } catch {
            // Still works from the older key; only its erasure on disk waits for the next period.
            log.warning("cannot save the advanced seal keys: \(error.message)")
        }
        var table: [[UInt8]: (key: DeviceKey, periodKey: [UInt8])] = [:]
        for entry in trust.entries.values {
            guard let chain = entry.material?.sealChain else { continue }
            // Every minute of the three periods: 45 hints per paired device, built once a period.
            for candidate in [epoch &- 1, epoch, epoch &+ 1] {
                guard let periodKey = chain.key(at: candidate) else { continue }
                for minute in AnnouncementSeal.minutes(of: candidate) {
                    table[AnnouncementSeal.hint(periodKey: periodKey, sender: entry.key, minute: minute)] = (entry.key, periodKey)
                }
            }
        }
        hintTable = table
    }

    /// The discovery secrets of paired devices, for recognising their tokens.
    func trustedDiscoverySecrets() -> [(key: DeviceKey, secret: [UInt8])] {
        trust.entries.values.compactMap { entry in entry.material.map { (entry.key, $0.discoverySecret) } }
    }

    /// Called after pairing or untrusting: new keys and hints; a new device gets a first contact at once.
    func trustChanged() {
        pairSecretsCache = nil
        recognisedCache = nil
        refreshHints(nowMillis: wallClockMillis(), force: true)
        refreshBeaconTable(nowMillis: wallClockMillis(), force: true)
        for key in proximity.readings.keys where !trust.contains(key) { proximity.forget(key) }
        schedule.firstContact(all: false)
        announce()
    }

    /// Which trusted device published each sighting, by its rotating token (matched
    /// once per change of sightings, trust or period).
    func recognisedSightings(nowMillis: UInt64) -> [(key: DeviceKey, sighting: ServiceSighting)] {
        let epoch = ServiceRecord.epoch(wallClockMillis: nowMillis)
        if let cached = recognisedCache, cached.epoch == epoch { return cached.found }
        var found: [(key: DeviceKey, sighting: ServiceSighting)] = []
        for list in sightings.values {
            for sighting in list {
                guard let record = try? ServiceRecord(txt: sighting.txt), record.capabilities.contains("udp"),
                      let key = DiscoveryToken.match(record.token, among: trustedDiscoverySecrets(), epoch: epoch) else { continue }
                found.append((key, sighting))
            }
        }
        recognisedCache = (epoch, found)
        return found
    }

    /// Publishes the service record for the current rotation period; a new period brings a new token and name.
    func rotateServiceRecord() {
        guard let mdns else { return }
        let epoch = ServiceRecord.epoch(wallClockMillis: wallClockMillis())
        guard epoch != publishedEpoch else { return }
        publishedEpoch = epoch
        // Disabled: not on mDNS at all.
        mdns.publish(settings.enabled ? ServiceRecord(token: DiscoveryToken.token(secret: identity.discoverySecret(), epoch: epoch)) : nil)
    }

    /// Paths by which `key` is currently seen, for `list` and `status`.
    func paths(of peer: Peer, nowMillis: UInt64) -> [String] {
        var names = Set(peer.livePaths(nowMillis: nowMillis))
        if recognisedSightings(nowMillis: nowMillis).contains(where: { $0.key == peer.key }) { names.insert("mdns") }
        if bluetooth != nil, proximity.readings[peer.key].map({ $0.lastHeardMillis + proximity.settings.freshnessMillis > nowMillis }) == true {
            names.insert("bluetooth")
        }
        return names.sorted()
    }
}

extension AvahiDiscovery: AvahiDiscoveryStatusReporting {
    var isAvailable: Bool { currentStatus.available }
}
