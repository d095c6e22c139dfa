import FoundationEssentials
import Glibc
import HandoffAPI
import HandoffCore
import HandoffCrypto
import HandoffTransport
import HandoffRuntime

// The six transport conditions (Docs/CONDITIONS.md). The daemon only gathers
// evidence here (and probes a peer that has gone silent); which condition
// fails is decided in one place, ConditionDecision in HandoffCore, for both
// accept and doctor.
extension Daemon {
    // MARK: - Which device a PEER argument names

    /// The paired device `reference` names: by its name (in the trust store, or as it
    /// announces itself), or by a unique prefix of 4 or more characters of its device id.
    /// Nil when it names none.
    func pairedKey(matching reference: String) throws(HandoffError) -> DeviceKey? {
        let named = trust.entries.values.filter { $0.name == reference }.map(\.key)
        if named.count == 1 { return named[0] }
        let announcing = peers.peers.values.filter { $0.name == reference }.map(\.key)
        if named.isEmpty, announcing.count == 1 { return announcing[0] }
        if named.count > 1 || announcing.count > 1 {
            throw HandoffError(.ambiguous, "More than one paired device is named '\(reference)'.",
                               fix: "Use the device id shown by 'handoff-peer devices' instead.")
        }
        if let key = DeviceKey(hex: reference), trust.contains(key) { return key }
        guard let prefix = DeviceID.normalize(reference), !prefix.isEmpty else { return nil }
        guard prefix.count >= 4 else {
            throw HandoffError(.invalidRequest, "'\(reference)' is too short: a device id prefix needs at least 4 characters.",
                               fix: "Give 4 or more characters of the device id, or the device name ('handoff-peer devices' lists both).")
        }
        let matches = trust.entries.keys.filter { Ed25519.deviceID(of: $0).compact.hasPrefix(prefix) }
        if matches.count > 1 {
            throw HandoffError(.ambiguous, "'\(reference)' matches \(matches.count) paired devices.",
                               fix: "Give more characters of the device id ('handoff-peer devices').")
        }
        return matches.first
    }

    // MARK: - Evidence

    /// Everything known without touching the network: this host, and what the peer last said.
    func evidence(for reference: String?, purpose: ConditionEvidence.Purpose,
                  nowMillis now: UInt64) throws(HandoffError) -> (ConditionEvidence, DeviceKey?) {
        var e = ConditionEvidence(purpose: purpose, nowMillis: now, hostName: configuration.name)
        e.utcOffsetSeconds = TimeZone.current.secondsFromGMT()
        e.enabled = settings.enabled
        if let bluetooth = discovery.bluetooth {
            let state = bluetooth.currentStatus
            let device = state.adapter ?? configuration.hci ?? "the Bluetooth adapter"
            e.bluetooth = state.available ? .working("\(device) \(state.text)") : .failed("\(device): \(state.text)")
        }
        e.thresholdDBM = discovery.proximity.settings.thresholdDBM
        e.freshnessMillis = discovery.proximity.settings.freshnessMillis
        let networkPaths = discovery.paths.filter { $0.abilities.contains(.find) }
        e.workingPaths = networkPaths.filter(\.health.isUsable).map(\.name)
        e.brokenPaths = networkPaths.map { "\($0.name): \($0.state)" }.joined(separator: "; ")
        e.linksUp = fixed.interfaces.current().linksUp(named: configuration.interface)
        e.transferPort = server.port
        e.pairedNames = trust.entries.values.map(\.name)
        e.declaredTypes = clients.declarations.allTypes().sorted()
        e.reference = reference
        guard let reference else { return (e, nil) }
        guard let key = try pairedKey(matching: reference), let entry = trust.entries[key] else {
            e.unpairedHereMillis = discovery.history.unpairedMillis(name: reference)
            return (e, nil)
        }
        let peer = peers.peers[key]
        let past = discovery.history.entries[key]
        var p = ConditionEvidence.Peer(name: peer?.name ?? (entry.name.isEmpty ? Ed25519.deviceID(of: key).description : entry.name))
        // History holds every path since the last goodbye, across absences; the live entry the latest.
        p.announcementsByPath = (past?.announcementsByPath ?? [:]).merging(peer?.lastSeenByPath ?? [:], uniquingKeysWith: max)
        p.ttlMillis = peer?.ttlMillis ?? past?.ttlMillis ?? UInt64(configuration.peerTTLSeconds) * 1000
        p.state = peer?.senderState ?? past?.state
        p.listedSinceMillis = peer?.appearedMillis
        p.multicastCheckMillis = discovery.multicastCheck(of: key)
        p.multicastAnswerWaitMillis = discovery.multicastAnswerWait(of: key)
        p.goodbyeMillis = past?.goodbyeMillis
        if let reading = discovery.proximity.readings[key] {
            p.beacon = .init(lastHeardMillis: reading.lastHeardMillis, smoothedRSSI: reading.smoothedRSSI)
        }
        let sighted = recognisedSightings(nowMillis: now).filter { $0.key == key }
        p.mdnsSeen = !sighted.isEmpty
        p.transferPort = peer?.transferPort ?? past.flatMap { $0.transferPort == 0 ? nil : $0.transferPort }
            ?? sighted.first?.sighting.port ?? configuration.transferPort
        p.offer = discovery.history.offerState(of: key, peer: peer, hasWebpage: peer?.senderState.contains(.offerHasWebpageURL) ?? false,
                                     nowMillis: now)
        if case let .offered(type, _) = p.offer { p.apps = clients.declarations.apps(for: type) }
        e.peer = p
        return (e, key)
    }

    /// Where to probe `key`: the addresses it announced from, else where mDNS shows it.
    func probeTarget(_ key: DeviceKey, nowMillis: UInt64) -> (hosts: [String], port: UInt16) {
        if let peer = peers.peers[key] { return (peer.hosts, peer.transferPort) }
        let sighted = recognisedSightings(nowMillis: nowMillis).filter { $0.key == key }.map(\.sighting)
        let past = discovery.history.entries[key]
        let hosts = (past?.hosts ?? []) + sighted.map(\.host).filter { !(past?.hosts ?? []).contains($0) }
        let port = past.flatMap { $0.transferPort == 0 ? nil : $0.transferPort } ?? sighted.first?.port ?? configuration.transferPort
        return (hosts, port)
    }

    /// Adds the transfer-port probe and, when the port is open, the handshake probe.
    func probe(_ e: inout ConditionEvidence, key: DeviceKey) async {
        guard e.peer != nil else { return }
        let (hosts, port) = probeTarget(key, nowMillis: e.nowMillis)
        let identity = identity
        let secrets = pairSecrets(for: key)
        // Its link layer answering later than its next announcement was due means the link is up
        // while Handoff's traffic is not: an answer the kernel confirmed since then counts as now.
        let answeredAfter = e.peer?.lastAnnouncementMillis.map { $0 &+ max((e.peer?.ttlMillis ?? 0) / 3, 1_000) }
        let probed = await onThread(name: "condition probe") {
            Daemon.probe(hosts: hosts, port: port, expecting: key, identity: identity, secrets: secrets, answeredAfterMillis: answeredAfter)
        }
        e.peer?.portProbe = probed.port
        e.peer?.handshake = probed.handshake
        e.peer?.layer3 = probed.layer3
    }

    struct Probed: Sendable {
        var port: ConditionEvidence.PortProbe
        var handshake: ConditionEvidence.HandshakeProbe?
        var layer3: ConditionEvidence.Layer3?
    }

    /// How long the kernel's verdict on a silent address is awaited, counted from the first
    /// connection attempt: a stale ARP entry is re-checked after 5 s (DELAY), then 3 probes 1 s apart.
    static let linkVerdictMillis = 9_500

    nonisolated static func probe(hosts: [String], port: UInt16, expecting key: DeviceKey, identity: Identity,
                                  secrets: PairSecrets?, answeredAfterMillis: UInt64? = nil) -> Probed {
        let started = monotonicMillis()
        let portProbe = probeTransferPort(hosts: hosts, port: port)
        switch portProbe {
        case .dropped, .unreachable:
            // No connection at all: ask the kernel what the link says of its addresses.
            return Probed(port: portProbe, layer3: NeighbourProbe.examine(hosts: hosts, port: port, startedMillis: started,
                                                                           answeredAfterWallMillis: answeredAfterMillis,
                                                                           waitMillis: linkVerdictMillis))
        case .refused:
            return Probed(port: portProbe)
        case .open:
            // Without the pair's secrets (not paired here) there is no handshake to try.
            guard let secrets else { return Probed(port: portProbe) }
            return Probed(port: portProbe, handshake: handshakeProbe(hosts: hosts, port: port, expecting: key, identity: identity, secrets: secrets))
        }
    }

    /// One TCP connection attempt to every address at once: open if any connected, else refused
    /// (RST: something answered) if any reset, else no answer (dropped), else unreachable.
    nonisolated static func probeTransferPort(hosts: [String], port: UInt16) -> ConditionEvidence.PortProbe {
        let outcomes = StreamConnection.connectOutcomes(hosts: hosts, port: port, timeoutMillis: 2000)
        if hosts.contains(where: { outcomes[$0] == 0 }) { return .open }
        if let host = hosts.first(where: { outcomes[$0] == ECONNREFUSED }) { return .refused(host: host) }
        if let host = hosts.first(where: { outcomes[$0] == ETIMEDOUT }) { return .dropped(host: host) }
        guard let host = hosts.last, let number = outcomes[host] else { return .unreachable("no address of it is known") }
        return .unreachable("\(host): \(String(cString: strerror(number)))")
    }

    /// A handshake, then a fetch for no offer: a device that trusts this one refuses it as
    /// not current; one that does not, as `trust`. Only a device that proved it is `key` counts.
    nonisolated static func handshakeProbe(hosts: [String], port: UInt16, expecting key: DeviceKey,
                                           identity: Identity, secrets: PairSecrets) -> ConditionEvidence.HandshakeProbe {
        do throws(HandoffError) {
            let channel = try connect(hosts: hosts, port: port, peerName: Ed25519.deviceID(of: key).description,
                                      identity: identity, purpose: .fetch, secrets: secrets, timeoutMillis: 3000)
            defer { channel.close() }
            guard channel.session.peerKey == key else { return .failed("another device answers at its address") }
            try channel.send(.fetch(.init(summarySender: key, summarySequence: 0, payloadDigest: [UInt8](repeating: 0, count: 32))))
            guard case let .refusal(refusal) = try channel.receive() else { return .trusted }
            switch refusal.code {
            case .trust: return .trustRefused
            case .enabled: return .disabled
            default: return .trusted
            }
        } catch {
            // A trust refusal arrives only over the authenticated channel.
            switch error.code {
            case .trust: return .trustRefused
            case .timedOut: return .noAnswer
            default: return .failed(error.message)
            }
        }
    }

    // MARK: - Accept

    /// Where a continuation goes: a running app, an installed one (started for it),
    /// the browser (a web page no app here declares), or the terminal that accepted it.
    struct DeliveryTarget: Sendable {
        enum Kind: Sendable { case running, launch(exec: String, desktopID: String), browser, terminal }
        var app: String
        var kind: Kind
    }

    func deliveryTarget(for type: String, hasWebpage: Bool) -> DeliveryTarget {
        if let running = clients.declarations.runningApp(for: type) { return DeliveryTarget(app: running, kind: .running) }
        if let installed = clients.declarations.installedApp(for: type), let exec = installed.exec {
            return DeliveryTarget(app: installed.name, kind: .launch(exec: exec, desktopID: installed.desktopID))
        }
        return DeliveryTarget(app: hasWebpage ? "browser" : "terminal", kind: hasWebpage ? .browser : .terminal)
    }

    /// Before an accept: the peer, its offer and where it goes, or the one cause that stands
    /// in the way. A silent peer is probed first, so its cause is named from evidence.
    func prepareAccept(_ reference: String, requireApp: Bool) async throws(HandoffError) -> (Peer, SignedSummary, DeliveryTarget) {
        let now = clock.wallMillis()
        var (evidence, key) = try evidence(for: reference, purpose: .accept(requireApp: requireApp), nowMillis: now)
        // Silent (gone from the table, or past its TTL before the next expiry sweep), or its beacon
        // gone quiet (asleep, or only far?): probe it.
        let beaconQuiet = evidence.bluetooth != .notUsed
            && (evidence.peer?.beacon.map { $0.lastHeardMillis + evidence.freshnessMillis <= now } ?? true)
        if let key, peers.peers[key]?.isExpired(nowMillis: now) ?? true || beaconQuiet { await probe(&evidence, key: key) }
        if let verdict = ConditionDecision.decide(evidence), !verdict.cause.isWarning { throw verdict.error }
        guard let key, let peer = peers.peers[key], let offer = peer.visibleOffer(nowMillis: clock.wallMillis()) else {
            throw HandoffError(.notFound, "'\(reference)' offers nothing to continue right now.", fix: "Run 'handoff-peer list'.")
        }
        let target = deliveryTarget(for: offer.summary.activityType, hasWebpage: peer.senderState.contains(.offerHasWebpageURL))
        return (peer, offer, target)
    }

    /// A failed fetch, explained from evidence: a trust refusal or a connection that fails is
    /// probed again and decided like any other accept failure; other failures say what happened.
    func explainFetchFailure(_ error: HandoffError, peer: Peer) async -> HandoffError {
        guard [.trust, .network, .enabled, .timedOut].contains(error.code),
              var (evidence, _) = try? evidence(for: peer.deviceID.description, purpose: .accept(requireApp: false), nowMillis: clock.wallMillis())
        else { return error }
        await probe(&evidence, key: peer.key)
        guard let verdict = ConditionDecision.decide(evidence), !verdict.cause.isWarning, verdict.code.isTransportCondition else { return error }
        return verdict.error
    }

    // MARK: - doctor

    /// All six conditions for this host, and for `reference` when given, and the one verdict.
    func doctor(reference: String?) async throws(HandoffError) -> DoctorReport {
        var (evidence, key) = try evidence(for: reference, purpose: .doctor, nowMillis: clock.wallMillis())
        // A listed device quiet on multicast lately is asked by multicast, and its answer awaited:
        // multicast that stopped passing (a switch, client isolation) is named in this run.
        if let key, let peer = peers.peers[key], discovery.doctorChecksMulticast(Discovery.Listed(peer), nowMillis: evidence.nowMillis) {
            offering.schedule.checkMulticast([key])
            flushAnnouncements()
            let loop = loop
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                _ = loop.after(millis: Discovery.doctorAnswerWaitMillis) { done.resume() }
            }
            (evidence, _) = try self.evidence(for: reference, purpose: .doctor, nowMillis: clock.wallMillis())
        }
        if let key { await probe(&evidence, key: key) }
        let verdict = ConditionDecision.decide(evidence)
        let lines = ConditionDecision.lines(evidence, verdict: verdict)
        return DoctorReport(
            host: configuration.name, peer: evidence.peer?.name ?? reference, ok: !lines.contains { $0.status == .fail },
            verdict: verdict.map {
                .init(cause: $0.cause.rawValue, code: $0.code.rawValue, status: $0.cause.isWarning ? "warn" : "fail", message: $0.message, fix: $0.fix)
            },
            conditions: lines.map {
                .init(code: $0.code.rawValue, status: $0.status.rawValue, ok: $0.status != .fail, evidence: $0.evidence, fix: $0.fix)
            })
    }

    // MARK: - Memory

    /// After an announcement from `key` went through the peer table: remember what it said.
    func remember(announcementFrom key: DeviceKey, events: [PeerEvent], nowMillis: UInt64) {
        if events.contains(.left(key)) {
            discovery.history.saidGoodbye(key, nowMillis: nowMillis)
        } else if let peer = peers.peers[key] {
            discovery.history.heard(peer, nowMillis: nowMillis)
        }
    }
}

