import FoundationEssentials
import Glibc
import HandoffAPI
import HandoffCore
import HandoffBluetooth
import HandoffCrypto
import HandoffMDNS
import HandoffTransport
import HandoffRuntime

/// The daemon's single owner of state: identity, trust, the published
/// activity, the peer table and the clients.subscribers. Socket threads and discovery
/// callbacks reach this actor on the event loop's thread, which is its executor
/// (`onActor`); blocking I/O runs on threads of its own.
public actor Daemon {
    /// What is set once, in `init`, and never changes: read from any thread.
    struct Fixed: Sendable {
        let configuration: DaemonConfiguration
        let log: Log
        let identity: Identity
        let deviceID: DeviceID
        let verifier = Ed25519()
        let stateDirectory: StateDirectory
        /// On the daemon's clock (`DaemonConfiguration.loop`), as every duration it reports.
        let startedAtMillis: UInt64
        /// The handshake candidates as the actor last derived them, for a served connection's
        /// thread to read without a trip to the actor; nil after the paired set changed, until
        /// the actor derives them again.
        let handshakeCandidates = Locked<[(key: DeviceKey, secrets: PairSecrets)]?>(nil)
        /// The interfaces, read again after each route netlink message (the network watcher's).
        let interfaces = InterfaceCache()
        /// What a served fetch is decided by, as the actor last changed it (its observers on
        /// trust, settings and offering), so a fetch's thread decides without a trip to the actor.
        let servable = Locked(Servable())
        /// Writes the replay state, off the loop unless it must be on disk before going on.
        let replayWriter: ReplayStateWriter
    }

    struct Servable: Sendable {
        var current: PublishedActivity?
        var enabled = false
        var trusted: Set<DeviceKey> = []
    }

    let fixed: Fixed
    nonisolated var configuration: DaemonConfiguration { fixed.configuration }
    nonisolated var log: Log { fixed.log }
    nonisolated var identity: Identity { fixed.identity }
    nonisolated var deviceID: DeviceID { fixed.deviceID }
    nonisolated var verifier: Ed25519 { fixed.verifier }
    nonisolated var stateDirectory: StateDirectory { fixed.stateDirectory }
    nonisolated var startedAtMillis: UInt64 { fixed.startedAtMillis }
    /// Where its deadlines run, and its time (`DaemonConfiguration.loop`).
    nonisolated var loop: EventLoop { fixed.configuration.loop }
    /// The actor runs on that loop's thread: what arrives there reaches the actor without a
    /// hand-off to another thread (`onActor`).
    public nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
    nonisolated var clock: any LoopClock { fixed.configuration.loop.clock }

    var trust: TrustStore {
        didSet { fixed.servable.withLock { $0.trusted = Set(trust.entries.keys) } }
    }
    var settings: Settings {
        didSet { fixed.servable.withLock { $0.enabled = settings.enabled } }
    }
    var peers: PeerTable
    /// What this host offers, the sequences it says it with and who hears it next (Offering).
    var offering: Offering {
        didSet { fixed.servable.withLock { $0.current = offering.current } }
    }
    /// Hints, tokens and secrets of the paired devices for the current period (PeriodKeys).
    var keys = PeriodKeys()
    var pairing = PairingState()
    /// The discovery paths, mDNS sightings, proximity and what paired devices last said (Discovery).
    var discovery: Discovery
    /// Subscriptions and app declarations on the local API, and installed apps' types (LocalClients).
    var clients = LocalClients()
    /// Every accept in progress (AcceptJobs).
    var accepts = Accepts()
    /// The timer, route netlink, the desktop watcher, the discovery inbox and the local API listener.
    var sources = EventSources()
    /// The transfer port and the one decision of what it serves (TransferServer).
    var server = TransferServer()

    /// The activity on the air. Streams waiting for one no longer current are told when it changes.
    var published: PublishedActivity? {
        get { offering.current }
        set {
            offering.current = newValue
            continuationStreamsActivityChanged()
        }
    }

    /// Loads (or creates) the identity and trust store. Fails, changing nothing,
    /// if either file is corrupt.
    public init(configuration: DaemonConfiguration) throws(HandoffError) {
        let log = Log(level: configuration.logLevel)
        let stateDirectory = StateDirectory(path: configuration.stateDirectory)
        try stateDirectory.prepare()
        let (identity, created) = try stateDirectory.loadOrCreateIdentity()
        fixed = Fixed(configuration: configuration, log: log, identity: identity, deviceID: identity.deviceID, stateDirectory: stateDirectory,
                      startedAtMillis: configuration.loop.clock.monotonicMillis(), replayWriter: ReplayStateWriter(directory: stateDirectory))
        trust = try TrustStore.load(from: stateDirectory)
        settings = try Settings.load(from: stateDirectory)
        peers = PeerTable(ownKey: identity.publicKey, fingerprint: Ed25519.deviceID(of:))
        discovery = Discovery(proximity: configuration.proximity)
        let loaded = try ReplayState.load(from: stateDirectory)
        offering = Offering(loaded: loaded,
                            schedule: AnnounceSchedule(keepaliveMillis: configuration.announceIntervalMillis,
                                                       minimumSpacingMillis: Self.minimumAnnounceSpacingMillis),
                            wallClockMillis: configuration.loop.clock.wallMillis())
        let trusted = trust
        peers.restoreHighestSequences(loaded.highest.filter { trusted.contains($0.key) })
        // The start's reservation is on disk before anything is sent.
        if let start = offering.replayToSave(highest: loaded.highest) {
            try start.save(to: stateDirectory)
            offering.replaySaved(start)
        }
        fixed.servable.withLock { [trusted, settings, offering] in
            $0 = Servable(current: offering.current, enabled: settings.enabled, trusted: Set(trusted.entries.keys))
        }
        if created { log.info("created a new identity, device id \(identity.deviceID)") }
    }

    // MARK: - Lifecycle

    /// A handful of peers fetch at once at most; one source needs no more than a
    /// few (a fetch, a doctor probe, a retry). Unauthenticated connections count too.
    /// An address a paired device is heard from gets 20 a second (accepts, doctor's
    /// probes and streams in a row from a person at the other laptop); any other 5.
    /// Every other address together gets 50 handshakes answered a second.
    static let transferConnectionLimits = ConnectionLimits(total: 32, perSource: 4,
                                                           perSourceRate: .init(perSecond: 5, burst: 10),
                                                           handshakeRate: .init(perSecond: 50, burst: 50),
                                                           preferredSourceRate: .init(perSecond: 20, burst: 40), evictsUnproven: true)
    /// Apps, the CLI and subscribers of this user; bounded so descriptors never run out.
    static let localConnectionLimits = ConnectionLimits(total: 128, perSource: 128)
    static let handshakeDeadlineMillis = 5_000

    /// The transfer port (TCP), free on UDP too when mDNS brings unicast announcements
    /// (the same number). The default taken is not fatal: another account's handoffd on this
    /// laptop holds it, or another program does; a free pair is used instead, and peers learn
    /// it from the announcements and the mDNS record as always. A --port given is used or fails.
    func openTransferPort() throws(HandoffError) -> StreamListener {
        let needsUDP = configuration.discovery.contains(.mdns)
        let attempts = configuration.transferPortGiven ? 1 : 8
        var failure = ""
        for attempt in 0..<attempts {
            let port = attempt == 0 ? configuration.transferPort : 0
            let transfer: StreamListener
            do {
                transfer = try StreamListener.tcp(port: port)
            } catch {
                failure = "\(port)/tcp: \(error)"
                continue
            }
            if !needsUDP || UnicastAnnouncer.canBind(port: transfer.port) {
                if attempt > 0 {
                    log.warning("port \(configuration.transferPort) is taken (\(failure)); using \(transfer.port) instead, which peers learn from announcements")
                }
                return transfer
            }
            failure = "\(transfer.port)/udp is in use"
            transfer.stop()
        }
        throw HandoffError(.network, "Cannot open the transfer port: \(failure).",
                           fix: configuration.transferPortGiven ? "Stop the program using the port or pass another with --port."
                               : "Free a port (handoffd tried \(configuration.transferPort) and \(attempts - 1) others).")
    }

    public func start() throws(HandoffError) {
        log.info("device id \(deviceID), name '\(configuration.name)', \(trust.entries.count) trusted device(s)")
        let transfer = try openTransferPort()
        server.listener = transfer
        server.port = transfer.port
        transfer.run(name: "transfer", limits: Self.transferConnectionLimits) { [self] connection in
            // The handshake must finish within this, however slowly bytes trickle in.
            connection.setDeadline(millisFromNow: Self.handshakeDeadlineMillis)
            serve(connection, listener: transfer)
        }
        try startLocalAPI()
        if let watcher = DesktopFileWatcher(directories: AppDeclarations.applicationDirectories(), log: log) {
            sources.desktopWatcher = watcher
            clients.declarations.disk.watch { watcher.changes() }
        }
        sources.timer = WakeTimer(loop: loop) { [self] in onActor { $0.wake() } }
        sources.networkWatcher = NetworkChangeWatcher(interfaces: fixed.interfaces) { [self] in onActor { $0.networkChanged() } }
        try startDiscovery()
        _ = discovery.networkChanged()  // what the paths see now, to compare the next change with
        // Nobody is known yet: every paired device gets a first contact, which it answers.
        offering.schedule.firstContact(all: true)
        flushAnnouncements()
    }

    private func startLocalAPI() throws(HandoffError) {
        let path = configuration.socketPath
        let directory = path.lastIndex(of: "/").map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? ""
        if !directory.isEmpty, mkdir(directory, 0o700) != 0, errno != EEXIST {
            throw HandoffError(.storage, "Cannot create \(directory) for the local API socket.",
                               fix: "Create it (mode 0700) or pass --socket with a writable location.")
        }
        // The directory is what keeps other users away from the socket: it must be ours alone.
        var info = stat()
        guard lstat(directory.isEmpty ? "." : directory, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR,
              info.st_uid == getuid(), info.st_mode & 0o077 == 0 else {
            throw HandoffError(.storage, "\(directory) must be a directory owned by this user and closed to others (mode 0700) to hold the local API socket.",
                               fix: "Run 'chmod 700 \(directory)' if it is yours, or pass --socket in a directory that is (e.g. $XDG_RUNTIME_DIR).")
        }
        do {
            let listener = try StreamListener.unix(path: path)
            sources.localAPI = listener
            listener.serveOnLoop(limits: Self.localConnectionLimits, loop: loop) { [self] connection, release in
                serveLocalClient(connection, release: release)
            }
        } catch {
            throw HandoffError(.storage, "Cannot listen on \(path): \(error).",
                               fix: error.errno == EADDRINUSE ? "Another handoffd runs with this socket; stop it or pass another --socket."
                                                              : "Pass --socket with a path in a directory you own.")
        }
    }

    /// `start()` from the program's main thread: it runs on the loop, and `failed` (on the loop)
    /// hears why it could not. No task, so handoffd at rest needs no executor thread.
    public nonisolated func startOnLoop(failed: @escaping @Sendable (HandoffError) -> Void) {
        onActor { daemon in
            do throws(HandoffError) {
                try daemon.start()
            } catch {
                failed(error)
            }
        }
    }

    /// `shutdown()` from a plain thread (handoffd's main thread, which took the stop signal).
    public nonisolated func shutdownWaiting() -> ShutdownHandle {
        onActorWaiting { $0.shutdown() }
    }

    /// Says goodbye so peers drop this host at once and stops every listener. Never blocks
    /// the actor (which runs on the loop): the discovery paths stop, and the subscribers get
    /// their last events, in `ShutdownHandle.finish`, off the loop, within a bound.
    public func shutdown() -> ShutdownHandle {
        log.info("stopping")
        sources.stopAll()
        sayGoodbye()
        saveReplayState(now: true)
        failActiveAccepts()
        server.listener?.stop()
        unlink(configuration.socketPath)
        return ShutdownHandle(paths: discovery.paths, sessions: clients.subscribers.removeAll())
    }

    /// What is left to do after `shutdown()`, on the caller's thread (not the loop's).
    public struct ShutdownHandle: Sendable {
        let paths: [any DiscoveryPath]
        let sessions: [LocalSession]

        /// Stops the discovery paths (Bluetooth withdraws its beacon, which takes the loop and
        /// bluetoothd's replies, or HCI commands), then gives subscribers at most `millis` to take
        /// their last events and disconnects them.
        public func finish(withinMillis millis: Int) {
            for path in paths { path.stop() }
            LocalSession.finish(sessions, withinMillis: millis)
        }
    }

    /// A link or address changed (netlink): multicast joins the interfaces there are now, and
    /// every paired device hears from this host at once, from its new address. Issue 24 measured
    /// 23 s until the next tick noticed an interface going down.
    func networkChanged() {
        // A transfer over a link that went away moves now (it resumes over one that works),
        // not after the 3 s without bytes that tells a stall.
        let moved = accepts.links.cut(keeping: Set(fixed.interfaces.current().linksUp(named: nil)).union(["lo"]))
        if moved > 0 { log.info("a link went away under \(moved) transfer(s): resuming them over another") }
        let changed = discovery.networkChanged()
        guard changed else { return }
        log.info("a network interface or address changed (netlink): announcing to every paired device")
        offering.schedule.firstContact(all: true)
        flushAnnouncements()
    }

    /// The timer fired: housekeeping, then whatever announcement is due; it re-arms itself.
    func wake() {
        sources.fired()
        housekeeping()
        flushAnnouncements()
    }

    /// Arms the one timer for the earliest thing to do, unless it already fires sooner.
    /// Nothing wakes the daemon when nothing is due: no polling.
    func armWake(devices: [AnnounceSchedule.Device]) {
        let delay = nextWakeDelay(devices: devices)
        let now = clock.monotonicMillis()
        sources.arm(at: now &+ delay, nowMillis: now)
    }

    /// Milliseconds until the earliest of: the next announcement (AnnounceSchedule), a
    /// peer's TTL running out, the activity expiring or its summary needing a new
    /// signature, the rotation period turning, the next pairing beacon.
    func nextWakeDelay(devices: [AnnounceSchedule.Device]) -> UInt64 {
        let mono = clock.monotonicMillis()
        let wall = clock.wallMillis()
        func until(_ deadline: UInt64, _ now: UInt64) -> UInt64 { deadline > now ? deadline - now : 0 }
        // Also while nobody is present: without route netlink, housekeeping is where new interfaces and addresses are noticed.
        var delay = until(offering.schedule.nextDeadline(nowMillis: mono, devices: devices), mono)
        for peer in peers.peers.values {
            delay = min(delay, until(peer.lastSeenMillis &+ peer.ttlMillis, wall))
            // The first multicast check of a newly listed device, once (a past deadline wakes nothing).
            if let check = discovery.firstMulticastCheck(of: Discovery.Listed(peer)), check > wall { delay = min(delay, check - wall) }
        }
        if let current = published {
            if let expires = current.activity.expiresAtMillis { delay = min(delay, until(expires, wall)) }
            else { delay = min(delay, until(current.summary.summary.expiresAtMillis &- configuration.summaryLifetimeMillis / 2, wall)) }
        }
        let rotation = ServiceRecord.rotationSeconds * 1000
        delay = min(delay, until((ServiceRecord.epoch(wallClockMillis: wall) &+ 1) * rotation, wall))
        if isPairingOpen() { delay = min(delay, until(pairing.nextBeaconMillis(intervalMillis: pairingBeaconIntervalMillis), mono)) }
        if let tokens = discovery.tokensDue { delay = min(delay, until(tokens.atMillis, mono)) }
        return delay
    }

    /// A pairing beacon as often as announcements used to go, at most every 5 s: pairing is short and user-driven.
    var pairingBeaconIntervalMillis: UInt64 { min(configuration.announceIntervalMillis, 5_000) }

    /// Timed work: expire peers and activities, re-sign the summary, notice new
    /// addresses and the period turning (both bring a first contact), rotate tokens.
    func housekeeping() {
        let now = clock.wallMillis()
        if now &- offering.replaySavedAtMillis >= Self.replayStateSaveIntervalMillis { saveReplayState() }
        emit(peers.expire(nowMillis: now))
        // With route netlink, changes arrive as they happen (networkChanged); only without it are they polled here.
        if sources.networkWatcher == nil, discovery.paths.compactMap({ $0.networkChanged() }).contains(true) {
            log.info("a network interface or address changed: announcing to every paired device by multicast")
            offering.schedule.firstContact(all: true)
        }
        offering.schedule.checkMulticast(discovery.multicastChecksDue(peers.peers.values.map(Discovery.Listed.init), nowMillis: now))
        enterPeriod(nowMillis: now)
        offerTokensIfDue(nowMillis: clock.monotonicMillis())
        if let current = published {
            if current.activity.isExpired(nowMillis: now) {
                log.info("activity of type \(current.activity.type) expired")
                offering.publishers.invalidate(current.publisher)
                broadcast(.activityEnded(type: current.activity.type, reason: "expired"))
                offerCurrentPublisher()
                offering.schedule.changed()
            } else if current.activity.expiresAtMillis == nil,
                      current.summary.summary.expiresAtMillis <= now + configuration.summaryLifetimeMillis / 2 {
                // Same activity, same sequence (so a decline still holds): only a later timestamp and expiry.
                var summary = current.summary.summary
                summary.timestampMillis = now
                summary.expiresAtMillis = now + configuration.summaryLifetimeMillis
                do {
                    published?.summary = try summary.signed(by: identity)
                    offering.schedule.changed()
                } catch {
                    log.warning("cannot re-sign the current activity's summary: \(error); peers drop it when it expires")
                }
            }
        }
    }

    // MARK: - Replay state

    static let replayStateSaveIntervalMillis: UInt64 = 60_000
    /// At most ten announcement rounds a second (each is one datagram per paired device it reaches).
    static let minimumAnnounceSpacingMillis: UInt64 = 100

    /// A sequence past the reservation on disk moves it up there before the sequence is sent.
    func reserve(_ reservation: Offering.Reservation) {
        if reservation == .mustSave { saveReplayState(now: true) }
    }

    /// Writes the replay state if it changed: on a pooled thread, or with `now` before
    /// returning (a reservation must be on disk before its sequences are sent). A failure is
    /// logged (the daemon keeps running; after a restart the clock still orders most sequences).
    func saveReplayState(now: Bool = false) {
        offering.replaySavedAtMillis = clock.wallMillis()
        guard let state = offering.replayToSave(highest: peers.highestSequences.filter { trust.contains($0.key) }) else { return }
        guard now else {
            fixed.replayWriter.writeLater(state) { [self] result in onActor { $0.replayStateWritten(result) } }
            return
        }
        do {
            try fixed.replayWriter.writeNow(state)
            // Posted as the writer's reports are, so it comes after theirs.
            onActor { $0.replayStateWritten(.success(state)) }
        } catch {
            log.warning("cannot save the replay state: \(error.message)")
        }
    }

    /// Every write's report arrives in the order the writes were made (each is posted to the
    /// loop after its write), so the last one is what the disk holds.
    private func replayStateWritten(_ result: Result<ReplayState, HandoffError>) {
        switch result {
        case let .success(state): offering.replaySaved(state)
        case let .failure(error): log.warning("cannot save the replay state: \(error.message)")
        }
    }

    // MARK: - Announcing

    /// What changed here (publish, resign, invalidate, enable, pairing) goes to every present
    /// paired device now, or as soon as the spacing allows, with the latest state.
    func announce() {
        offering.schedule.changed()
        flushAnnouncements()
    }

    /// Sends whatever round is due (AnnounceSchedule) and a pairing beacon while
    /// pairing is open, then arms the timer for what comes next.
    func flushAnnouncements() {
        let mono = clock.monotonicMillis()
        let wall = clock.wallMillis()
        let devices = announceDevices(nowMillis: wall)
        if let deliveries = offering.schedule.take(nowMillis: mono, devices: devices) {
            send(.present, deliveries, nowMillis: wall)
        }
        if isPairingOpen(), pairing.nextBeaconMillis(intervalMillis: pairingBeaconIntervalMillis) <= mono {
            pairing.lastBeaconMillis = mono
            sendPairingBeacon(nowMillis: wall)
        }
        armWake(devices: devices)
    }

    /// Stopping: a goodbye at once to every device that lists us.
    func sayGoodbye() {
        let now = clock.wallMillis()
        send(.goodbye, AnnounceSchedule.goodbye(devices: announceDevices(nowMillis: now)), nowMillis: now)
    }

    /// What the schedule needs to know of each paired device now.
    func announceDevices(nowMillis now: UInt64) -> [AnnounceSchedule.Device] {
        let sighted = recognisedSightings(nowMillis: now)
        return trust.entries.values.compactMap { entry in
            guard entry.material != nil else { return nil } // paired before version 3: nothing can be sealed to it
            let key = entry.key
            let peer = peers.peers[key].flatMap { $0.isExpired(nowMillis: now) ? nil : $0 }
            let sighting = sighted.first { $0.key == key }?.sighting
            var endpoint: (host: String, port: UInt16)?
            if discovery.sendsStraight {
                if let peer {
                    if peer.senderState.contains(.acceptsUnicast), let host = peer.hosts.first { endpoint = (host, peer.transferPort) }
                } else if let sighting {
                    endpoint = (sighting.host, sighting.port)
                }
            }
            let near = discovery.bluetooth != nil && discovery.proximity.isNear(key, nowMillis: now)
            return AnnounceSchedule.Device(key: key, present: peer != nil, seen: near || sighting != nil,
                                           eligible: !settings.enabled || discovery.isNear(key, nowMillis: now), unicast: endpoint)
        }
    }

    /// One signed announcement (two when some copies ask to be answered), sealed to
    /// each recipient and handed to the paths, each of which sends the copies routed its way.
    func send(_ kind: Announcement.Kind, _ deliveries: [AnnounceSchedule.Delivery], nowMillis now: UInt64) {
        guard !deliveries.isEmpty else { return }
        let (sequence, reservation) = offering.nextAnnouncement(wallClockMillis: now)
        reserve(reservation)
        // A disabled host still tells its paired devices it is there and disabled, and offers nothing.
        var announcement = Announcement(kind: kind, senderKey: identity.publicKey, sequence: sequence,
                                        timestampMillis: now, transferPort: server.port,
                                        ttlSeconds: configuration.peerTTLSeconds, name: configuration.name,
                                        summary: kind == .present && settings.enabled ? published?.summary : nil)
        announcement.state = senderState()
        let epoch = ServiceRecord.epoch(wallClockMillis: now)
        enterPeriod(nowMillis: now)
        var signed: [Bool: [UInt8]] = [:]
        var outgoing: [OutgoingAnnouncement] = []
        do {
            for delivery in deliveries {
                guard let periodKey = trust.entries[delivery.key]?.material?.sealChain.key(at: epoch) else { continue }
                let inner: [UInt8]
                if let done = signed[delivery.answerMe] {
                    inner = done
                } else {
                    var variant = announcement
                    if delivery.answerMe { variant.state.insert(.answerMe) }
                    inner = try variant.signedDatagram(by: identity)
                    signed[delivery.answerMe] = inner
                }
                outgoing.append(OutgoingAnnouncement(
                    recipient: delivery.key, route: delivery.route,
                    bytes: AnnouncementSeal.seal(inner, periodKey: periodKey, sender: identity.publicKey, minute: now / 60_000)))
            }
        } catch {
            log.error("cannot encode announcement: \(error)")
        }
        for path in discovery.paths { path.announce(outgoing) }
    }

    /// While pairing is open: the clear beacon `pair` lists, by multicast.
    func sendPairingBeacon(nowMillis now: UInt64) {
        let (sequence, reservation) = offering.nextAnnouncement(wallClockMillis: now)
        reserve(reservation)
        // In clear to anyone on the link: the device name (what Bluetooth's discoverable name says
        // too), its key and port, nothing of its state or activity. It lives a few intervals, so
        // a window that closed is soon forgotten by the other hosts.
        let ttl = min(configuration.peerTTLSeconds, UInt16(clamping: max(2, pairingBeaconIntervalMillis * 3 / 1000)))
        let beacon = Announcement(kind: .pairing, senderKey: identity.publicKey, sequence: sequence,
                                  timestampMillis: now, transferPort: server.port,
                                  ttlSeconds: ttl, name: configuration.name, summary: nil)
        do {
            let bytes = try beacon.signedDatagram(by: identity)
            for path in discovery.paths { path.announce([OutgoingAnnouncement(recipient: nil, route: .multicast, bytes: bytes)]) }
        } catch {
            log.error("cannot encode the pairing beacon: \(error)")
        }
    }

    func senderState() -> Announcement.SenderState {
        var state: Announcement.SenderState = []
        if !settings.enabled { state.insert(.disabled) }
        if settings.enabled, published?.activity.webpageURL != nil { state.insert(.offerHasWebpageURL) }
        if settings.enabled { state.formUnion(offering.endedBy) }
        if discovery.sendsStraight { state.insert(.acceptsUnicast) }
        if let bluetooth = discovery.bluetooth {
            state.insert(.bluetoothConfigured)
            if bluetooth.currentStatus.available { state.insert(.bluetoothWorking) }
        }
        return state
    }

    /// `enable` / `disable`: persisted first, then applied to every path.
    func setEnabled(_ enabled: Bool) throws(HandoffError) {
        var updated = settings
        updated.enabled = enabled
        try updated.save(to: stateDirectory)
        settings = updated
        log.info("handoff \(enabled ? "enabled" : "disabled")")
        offerOwnTokens(epoch: ServiceRecord.epoch(wallClockMillis: clock.wallMillis()))
        broadcast(enabled ? .enabled : .disabled)
        announce()
    }

    /// The handshake secrets shared with `key`; nil for a device paired by a version before 3.
    func pairSecrets(for key: DeviceKey) -> PairSecrets? {
        handshakeSecrets()[key]
    }

    /// Every device whose hint the transfer port answers: trusted ones, and
    /// untrusted ones we still remember (they are told so, authenticated).
    func handshakeCandidates() -> [(key: DeviceKey, secrets: PairSecrets)] {
        handshakeSecrets().map { ($0.key, $0.value) }
    }

    private func handshakeSecrets() -> [DeviceKey: PairSecrets] {
        if let cached = keys.handshakeSecrets { return cached }
        var secrets: [DeviceKey: PairSecrets] = [:]
        let known = trust.entries.values.compactMap { entry in entry.material.map { (entry.key, $0.agreementKey) } }
            + trust.revoked.map { ($0.key, $0.agreementKey) }
        for (key, agreementKey) in known {
            guard var pairKey = identity.pairKey(with: key, agreementKey: agreementKey) else { continue }
            secrets[key] = PairSecrets(pairKey: pairKey)
            wipe(&pairKey)
        }
        keys.handshakeSecrets = secrets
        fixed.handshakeCandidates.withLock { $0 = secrets.map { ($0.key, $0.value) } }
        return secrets
    }

    // MARK: - Publishing

    /// Makes `activity` `publisher`'s and the current one (the most recent wins), with a
    /// fresh sequence and signed summary. An invalid activity changes nothing.
    @discardableResult
    func publish(_ activity: Activity, by publisher: String = Daemon.defaultPublisher) throws(HandoffError) -> PublishedActivity {
        try activity.validate()
        return try publish(encoded: try EncodedActivity(activity), by: publisher)
    }

    /// The same for an activity that is already encoded (and checked: EncodedActivity scans it).
    @discardableResult
    func publish(encoded input: EncodedActivity, by publisher: String) throws(HandoffError) -> PublishedActivity {
        if input.isExpired(nowMillis: clock.wallMillis()) {
            throw HandoffError.invalidActivity("The activity has already expired.", fix: "Give an expiration in the future.")
        }
        offering.publishers.publish(input, by: publisher)
        guard let entry = offering.publishers.current else { preconditionFailure("a publish leaves its entry current") }
        do throws(HandoffError) {
            return try offer(entry)
        } catch {
            offering.publishers.invalidate(publisher)
            offerCurrentPublisher()
            throw error
        }
    }

    /// The publisher a request that names none stands for (scripts speaking JSON by hand).
    static let defaultPublisher = "default"

    /// After a resign, invalidate or expiry: the current publisher's activity goes on the
    /// air again (a new sequence), skipping any that expired meanwhile, or nothing does.
    func offerCurrentPublisher() {
        let now = clock.wallMillis()
        for gone in offering.publishers.removeAll(where: { $0.isExpired(nowMillis: now) }) {
            broadcast(.activityEnded(type: gone.item.type, reason: "expired"))
        }
        while let next = offering.publishers.current {
            if offering.isCurrent(next) { return }
            do throws(HandoffError) {
                try offer(next)
                return
            } catch {
                log.warning("cannot offer the activity of type \(next.item.type) again: \(error); dropping it")
                offering.publishers.invalidate(next.publisher)
            }
        }
        if published != nil {
            published = nil
            announce()
        }
    }

    /// Puts one publisher's entry on the air: sequence, payload, signed summary, announcement.
    @discardableResult
    private func offer(_ entry: PublisherStack<EncodedActivity>.Entry) throws(HandoffError) -> PublishedActivity {
        let now = clock.wallMillis()
        let (sequence, reservation) = offering.nextActivity(wallClockMillis: now)
        reserve(reservation)
        // In the publisher's own entry, so the payload stays one copy (unless a fetch still sends the old one).
        offering.publishers.update(entry.publisher) { $0.sequence = sequence }
        let encoded = offering.publishers.entry(of: entry.publisher)?.item ?? entry.item
        let payload = encoded.payload
        let summary = Summary(senderKey: identity.publicKey, senderName: configuration.name,
                              activityType: encoded.type, title: encoded.header.title,
                              payloadSize: UInt32(payload.count), payloadDigest: Blake2b.digest(payload),
                              sequence: encoded.sequence, timestampMillis: now,
                              expiresAtMillis: encoded.expiresAtMillis ?? now + configuration.summaryLifetimeMillis)
        let signed: SignedSummary
        do {
            signed = try summary.signed(by: identity)
        } catch {
            throw HandoffError.invalidActivity("The summary cannot be encoded: \(error).", fix: "Shorten the title or type.")
        }
        let published = PublishedActivity(encoded: encoded, summary: signed,
                                          publisher: entry.publisher, generation: entry.generation)
        self.published = published
        offering.invalidated = false
        log.info("published activity of type \(encoded.type) from \(entry.publisher), sequence \(sequence), \(payload.count) bytes")
        announce()
        return published
    }

    // MARK: - Events

    func emit(_ events: [PeerEvent]) {
        // Where paired devices are (a handful of addresses): their connections never wait behind a stranger's rate.
        server.listener?.setPreferredSources(Set(peers.peers.values.flatMap(\.hosts)))
        // A withdrawn or replaced offer and a goodbye must not come back from a
        // replayed datagram after a restart: the new high-water marks go to disk now.
        if events.contains(where: { if case .appeared = $0 { false } else { true } }) { saveReplayState() }
        for event in events {
            switch event {
            case let .appeared(key):
                guard let peer = peers.peers[key] else { continue }
                log.info("peer \(peer.deviceID) appeared")
                broadcast(.peerAppeared(peer: peer.deviceID.description, name: peer.name))
            case let .left(key):
                let id = Ed25519.deviceID(of: key)
                log.info("peer \(id) left")
                broadcast(.peerLeft(peer: id.description))
            case let .offerReceived(key):
                guard let peer = peers.peers[key], let offer = peer.offer else { continue }
                log.info("peer \(peer.deviceID) offers type \(offer.summary.activityType), sequence \(offer.summary.sequence)")
                broadcast(.summaryReceived(peer: peer.deviceID.description, offer: Self.offerInfo(offer.summary)))
            case let .offerWithdrawn(key):
                broadcast(.summaryWithdrawn(peer: Ed25519.deviceID(of: key).description))
            }
        }
    }

    /// One event to every subscriber, encoded once.
    func broadcast(_ event: Event) {
        // Not encoded for nobody.
        guard !clients.subscribers.all.isEmpty else { return }
        clients.subscribers.broadcast(line: JSONWriter.line(event.json))
    }
}
