import CLinux
import FoundationEssentials
import Glibc
import HandoffAPI
import HandoffCore
import HandoffDBus
import HandoffKit
import HandoffTransport
import HandoffRuntime

/// The session agent: follows handoffd's events, shows each paired device's
/// offer as a desktop notification (org.freedesktop.Notifications on the
/// session bus) and in a panel item (`PanelItem`), and turns Continue / Not now
/// into `accept` / `decline`.
///
/// Threads: the event loop (`EventLoop`) owns the session-bus connection and
/// the `NotificationBook` once `run` has set them up (sd-bus is not
/// thread-safe; one owner). An events thread reads handoffd's event stream; a
/// requests thread makes the short local-API calls (`list`, `decline`); each
/// accept runs on a thread of its own, as it may wait for an app to start.
/// They hand results to the loop through `post` (its inbox). SIGTERM and SIGINT
/// arrive there too, through a signalfd.
public final class NotificationAgent: @unchecked Sendable {
    // @unchecked Sendable: `book`, `panel`, `bus`, `serverOwner`, `accepting`, `refreshAtMillis` and the loop's
    // handles are used on the loop only (set up by `run` before the loop has them); other threads only `post`.
    enum Message: Sendable {
        case offers([OfferNotice])
        case acceptFinished(peer: String, error: HandoffError?)
        case declineFinished(peer: String)
        /// A pairing event (pairable, pairingCode, pairingEnded, paired), for the pairing notifications.
        case pairing(Event)
        case pairFailed(peer: String, name: String, error: HandoffError)
        case confirmFinished(session: Int64, error: HandoffError?)
        case stop
    }

    /// Which book a notification belongs to.
    enum Shown {
        case offer(peer: String)
        case pairing(key: String)
    }

    /// How often offers on screen are re-listed: one may end with no event
    /// (it expires, or its device is no longer near).
    static let refreshMillis: UInt64 = 5_000

    private let socketPath: String?
    private let log: @Sendable (String) -> Void
    private let loop: EventLoop
    /// Signalled when the loop has closed what the agent showed and let go of the bus.
    private let finished = Signals(value: 0)
    private let requests = RequestQueue()
    private let settings: NotifySettings
    private var book = NotificationBook()
    private var pairingBook = PairingBook()
    private var panel: PanelMenu
    private var panelItem: PanelItem?
    /// Devices whose offer an accept runs for: the notification and the panel continue it once between them.
    private var accepting: Set<String> = []
    private var bus: BusConnection?
    private var serverOwner: String?
    private var refreshAtMillis: UInt64?
    /// The bus's socket as the loop watches it (sd-bus owns the descriptor), sd-bus's own
    /// timeout, and the agent's next refresh or panel retry.
    private var onLoop = BusOnLoop()
    private var tickDeadline: EventLoop.Deadline?
    private var stopped = false
    private var signalWatch: EventLoop.Watch?

    public init(socketPath: String?, settings: NotifySettings = NotifySettings(), loop: EventLoop = .shared,
                log: @escaping @Sendable (String) -> Void) throws(HandoffError) {
        self.socketPath = socketPath
        self.settings = settings
        self.loop = loop
        self.log = log
        panel = PanelMenu(enabled: settings.panel)
    }

    /// Asks `run` to close the notifications it shows and return. Callable from any thread.
    public func stop() { post(.stop) }

    /// Stops on these signals, read from a signalfd on the loop. Call first, before any thread
    /// starts: the signals are blocked in the calling thread, and threads inherit that.
    public func stopOnSignals(_ numbers: [Int32]) {
        var set = sigset_t()
        sigemptyset(&set)
        for number in numbers { sigaddset(&set, number) }
        pthread_sigmask(SIG_BLOCK, &set, nil)
        let fd = signalfd(-1, &set, Int32(SFD_CLOEXEC | SFD_NONBLOCK))
        guard fd >= 0 else {
            log("cannot read signals (signalfd: \(String(cString: strerror(errno)))); SIGTERM ends the agent without closing its notifications")
            pthread_sigmask(SIG_UNBLOCK, &set, nil)
            return
        }
        signalWatch = try? loop.watch(fd) { [self] _ in
            var info = signalfd_siginfo()
            while read(fd, &info, MemoryLayout<signalfd_siginfo>.size) > 0 {}
            stop()
        }
    }

    /// Runs until `stop`: sets up the session bus on the calling thread, then hands it to the
    /// loop and waits.
    public func run() throws(HandoffError) {
        let bus: BusConnection
        do {
            bus = try BusConnection.openUser()
            // No sender='org.freedesktop.Notifications': sd-bus compares a rule's sender with the
            // message's locally, and that is the server's unique name. Checked in the handler.
            try bus.addMatch("type='signal',interface='\(Notifications.interface)',path='\(Notifications.path)'") {
                [unowned self] _, member, sender, values in
                guard sender == serverOwner else { return }
                serverSignal(member, values)
            }
            try bus.addMatch("type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='\(Notifications.name)'") {
                [unowned self] _, _, _, values in
                guard values.count == 3, let owner = values[2].string else { return }
                ownerChanged(owner.isEmpty ? nil : owner)
            }
        } catch {
            throw HandoffError(.daemonUnavailable, "Cannot use the session bus: \(error).",
                               fix: "Run handoff-notify in a desktop session (it finds the bus through DBUS_SESSION_BUS_ADDRESS or $XDG_RUNTIME_DIR/bus).")
        }
        self.bus = bus
        if settings.panel {
            do throws(BusError) {
                panelItem = try PanelItem(bus: bus, log: log, menu: { [unowned self] in panel },
                                          clicked: { [unowned self] id in execute(panel.clicked(id: id)) })
            } catch {
                log("no panel item: \(error)")
            }
        }
        if settings.notifications {
            // Asking for the capabilities starts a server that is D-Bus activated, as the first notification would.
            book.capabilities = capabilities(bus)
            pairingBook.markup = book.capabilities.bodyMarkup
            serverOwner = nameOwner(bus)
            log("notification server \(serverOwner ?? "not running yet"): actions \(book.capabilities.actions ? "yes" : "no"), body markup \(book.capabilities.bodyMarkup ? "yes" : "no")")
        } else {
            log("notifications are off: the panel item only")
        }
        startEventsThread()
        startRequestsThread()
        // From here on the loop owns the bus: this thread does not touch it again.
        loop.execute { [self] in turn() }
        finished.wait()
        requests.add(.stop)
    }

    // MARK: - On the loop

    /// After anything happened: lets sd-bus dispatch what arrived, runs what is due, and asks the
    /// loop to call again when the bus's socket is ready, its timeout due, or a refresh or the
    /// panel item's retry is.
    private func turn() {
        guard !stopped, let bus else { return }
        let more: Bool
        do throws(BusError) {
            more = try BusOnLoop.dispatch(bus) { !stopped }
        } catch {
            log("the session bus failed (\(error)); stopping")
            return finish()
        }
        guard !stopped else { return }
        if more { loop.execute { [self] in turn() } }
        let now = monotonicMillis()
        if let at = refreshAtMillis, now >= at {
            refreshAtMillis = nil
            requests.add(.refresh)
        }
        panelItem?.tick(nowMillis: now)
        guard onLoop.rearm(bus, on: loop, turn: { [self] in turn() }) else {
            log("cannot watch the session bus; stopping")
            return finish()
        }
        if let tickDeadline { loop.cancel(tickDeadline) }
        tickDeadline = [refreshAtMillis, panelItem?.retryAtMillis].compactMap { $0 }.min().map { at in
            loop.after(millis: at > now ? at - now : 0) { [self] in turn() }
        }
    }

    /// Closes what is shown (nothing can answer these once the agent is gone), lets go of the bus
    /// (which flushes the CloseNotification calls and takes the panel item's name with it), and
    /// lets `run` return.
    private func finish() {
        guard !stopped else { return }
        for id in book.shownIDs + pairingBook.shownIDs { close(id) }
        stopped = true
        onLoop.release(on: loop)
        if let tickDeadline { loop.cancel(tickDeadline) }
        panelItem = nil // it holds the connection too
        bus = nil
        signalWatch?.close()
        finished.signal()
    }

    private func handle(_ message: Message) {
        switch message {
        case let .offers(offers):
            if settings.notifications { execute(book.update(offers: offers)) }
            execute(panel.update(offers: offers))
            if book.showsOffers || panel.shown {
                let soonest = [book.soonestExpiryMillis, offers.map(\.remainingMillis).min()].compactMap { $0 }.min()
                let expiry = soonest.map { UInt64(max(0, $0)) + 250 } ?? Self.refreshMillis
                refreshAtMillis = monotonicMillis() + min(Self.refreshMillis, expiry)
            } else {
                refreshAtMillis = nil
            }
        case let .acceptFinished(peer, error):
            if let error { log("continuing failed: \(error.code.rawValue)") }
            accepting.remove(peer)
            execute(book.acceptFinished(peer: peer, error: error))
            execute(panel.acceptFinished(peer: peer, error: error))
        case let .declineFinished(peer):
            execute(book.declineFinished(peer: peer))
        case let .pairing(event):
            guard settings.notifications else { return }
            switch event {
            case let .pairable(peer, name): execute(pairingBook.pairable(peer: peer, name: name))
            case let .pairingCode(code): execute(pairingBook.code(session: code.session, peer: code.peer, name: code.name, code: code.code))
            case let .pairingEnded(session, peer, name, error): execute(pairingBook.ended(session: session, peer: peer, name: name, error: error))
            case let .paired(peer, name): execute(pairingBook.paired(peer: peer, name: name))
            case let .unpaired(peer, name): execute(pairingBook.unpaired(peer: peer, name: name))
            case .pairingClosed: execute(pairingBook.pairingClosed())
            default: break
            }
        case let .pairFailed(peer, name, error):
            log("pairing did not start: \(error.code.rawValue)")
            execute(pairingBook.pairingFailed(peer: peer, name: name, error: error))
        case let .confirmFinished(_, error):
            if let error { log("pairing ended without pairing: \(error.code.rawValue)") }
        case .stop:
            break
        }
    }

    private func serverSignal(_ member: String, _ values: [BusValue]) {
        guard values.count >= 2, let id = values[0].uint32 else { return }
        switch member {
        case "ActionInvoked":
            guard let key = values[1].string else { return }
            if pairingBook.owns(id: id) { return execute(pairingBook.actionInvoked(id: id, key: key)) }
            execute(book.actionInvoked(id: id, key: key))
        case "NotificationClosed":
            book.closed(id: id)
            pairingBook.closed(id: id)
        default:
            break
        }
    }

    private func ownerChanged(_ owner: String?) {
        guard settings.notifications else { return }
        let previous = serverOwner
        serverOwner = owner
        guard let owner, owner != previous, let bus else { return }
        // A new server knows none of the ids: show what is offered again, as it can.
        log("notification server is now \(owner)")
        execute(book.serverChanged(capabilities(bus)))
        pairingBook = PairingBook()  // its ids meant the old server's; pairing dialogs still answer in the terminal
        pairingBook.markup = book.capabilities.bodyMarkup
    }

    private func execute(_ commands: [NotificationBook.Command]) {
        for command in commands {
            switch command {
            case let .notify(peer, notice, replaces): notify(.offer(peer: peer), notice: notice, replaces: replaces)
            case let .close(id): close(id)
            case let .accept(offer):
                execute(panel.acceptStarted(offer))
                accept(offer)
            case let .decline(offer): requests.add(.decline(offer))
            }
        }
    }

    private func execute(_ commands: [PanelMenu.Command]) {
        for command in commands {
            switch command {
            case .show: panelItem?.show()
            case .hide: panelItem?.hide()
            case let .layoutChanged(revision): panelItem?.changed(revision: revision)
            case let .accept(offer):
                book.continuedElsewhere(offer)
                accept(offer)
            }
        }
    }

    private func execute(_ commands: [PairingBook.Command]) {
        for command in commands {
            switch command {
            case let .notify(key, notice, replaces): notify(.pairing(key: key), notice: notice, replaces: replaces)
            case let .close(id): close(id)
            case let .pair(peer, name): startPairing(peer: peer, name: name)
            case let .confirm(session, accept): confirmPairing(session: session, accept: accept)
            }
        }
    }

    private func notified(_ shown: Shown, id: UInt32?) {
        switch (shown, id) {
        case let (.offer(peer), id?): execute(book.notified(peer: peer, id: id))
        case let (.offer(peer), nil): book.notifyFailed(peer: peer)
        case let (.pairing(key), id?): execute(pairingBook.notified(key: key, id: id))
        case let (.pairing(key), nil): pairingBook.notifyFailed(key: key)
        }
    }

    private func notify(_ shown: Shown, notice: Notice, replaces: UInt32) {
        guard let bus else { return notified(shown, id: nil) }
        do throws(BusError) {
            let call = try bus.notificationsCall("Notify") { (body: inout MessageWriter) throws(BusError) in
                try body.string(Notice.appName)
                try body.uint32(replaces)
                try body.string("") // no icon: the summary names the device
                try body.string(notice.summary)
                try body.string(notice.body)
                try body.strings(notice.actions)
                try body.container("a", "{sv}") { (hints: inout MessageWriter) throws(BusError) in
                    try hints.container("e", "sv") { (entry: inout MessageWriter) throws(BusError) in
                        try entry.string("urgency")
                        try entry.container("v", "y") { (value: inout MessageWriter) throws(BusError) in try value.byte(1) }
                    }
                }
                try body.int32(notice.expireMillis)
            }
            try bus.callAsync(call, timeoutMillis: 5_000) { [unowned self] result in
                switch result {
                case let .success(values):
                    notified(shown, id: values.first?.uint32)
                case let .failure(error):
                    log("the notification server refused a notification: \(error)")
                    notified(shown, id: nil)
                }
            }
        } catch {
            log("cannot send a notification: \(error)")
            notified(shown, id: nil)
        }
    }

    private func close(_ id: UInt32) {
        guard let bus else { return }
        do throws(BusError) {
            let call = try bus.notificationsCall("CloseNotification") { (body: inout MessageWriter) throws(BusError) in try body.uint32(id) }
            // Closing one the server already closed (after its action, or dismissed) is an error reply; nothing to do then.
            try bus.callAsync(call, timeoutMillis: 5_000) { _ in }
        } catch {
            log("cannot close a notification: \(error)")
        }
    }

    private func capabilities(_ bus: BusConnection) -> ServerCapabilities {
        do throws(BusError) {
            let values = try bus.callBlocking(try bus.notificationsCall("GetCapabilities"), timeoutMillis: 5_000)
            // Its name decides whether a Continue beside the default action would be listed twice.
            let information = try? bus.callBlocking(try bus.notificationsCall("GetServerInformation"), timeoutMillis: 5_000)
            return ServerCapabilities(values.first?.strings ?? [], serverName: information?.first?.string)
        } catch {
            // No server yet: assume the common case; a server that appears later is asked again.
            log("cannot ask the notification server for its capabilities: \(error)")
            return ServerCapabilities(actions: true, bodyMarkup: false)
        }
    }

    private func nameOwner(_ bus: BusConnection) -> String? {
        do throws(BusError) {
            let call = try bus.methodCall("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                          "GetNameOwner") { (body: inout MessageWriter) throws(BusError) in
                try body.string(Notifications.name)
            }
            return try bus.callBlocking(call, timeoutMillis: 5_000).first?.string
        } catch {
            return nil
        }
    }

    // MARK: - Other threads

    private func post(_ message: Message) {
        loop.execute { [self] in
            guard !stopped else { return }
            if case .stop = message { return finish() }
            handle(message)
            turn()
        }
    }

    /// Events the pairing notifications follow.
    static let pairingEvents: Set<EventName> = [.pairable, .pairingCode, .pairingEnded, .pairingClosed, .paired, .unpaired]

    /// Events that can change what `list` shows.
    static let relevantEvents: Set<EventName> = [.peerAppeared, .peerLeft, .summaryReceived, .summaryWithdrawn, .declined,
                                                 .near, .enabled, .disabled]

    private func startEventsThread() {
        Threads.start("handoffd-events") { [self] in
            var waiting = false
            while true {
                guard let client = subscribedClient(sayingWhyNot: !waiting) else {
                    // Started with the session, maybe before handoffd: wait for it.
                    waiting = true
                    Threads.sleep(seconds: 2)
                    continue
                }
                waiting = false
                follow(client)
            }
        }
    }

    // The thread's steps are functions of their own, never inlined into its loop: with
    // HandoffClient's calls inlined there, Swift 6.3's loop-invariant code motion ran for
    // over 20 minutes on the release build (it had needed -Onone for this module).
    @inline(never)
    private func subscribedClient(sayingWhyNot: Bool) -> HandoffClient? {
        do throws(HandoffError) {
            let client = try HandoffClient(socketPath: socketPath)
            try client.subscribe()
            log("following handoffd at \(client.socketPath)")
            return client
        } catch {
            if sayingWhyNot { log("waiting for handoffd: \(error.message)") }
            return nil
        }
    }

    /// Asks for a refresh now and on every event that may change the offers, until handoffd goes away.
    @inline(never)
    private func follow(_ client: HandoffClient) {
        requests.add(.refresh)
        while let received = try? client.nextEvent() {
            guard let event = received.event else { continue }
            if Self.relevantEvents.contains(event.name) { requests.add(.refresh) }
            if Self.pairingEvents.contains(event.name) { post(.pairing(event)) }
        }
        log("handoffd went away; waiting for it to come back")
        requests.add(.refresh) // fails, so nothing is offered: every notification is withdrawn
    }

    private func startRequestsThread() {
        Threads.start("handoffd-requests") { [self] in
            var client: HandoffClient?
            func connected() throws(HandoffError) -> HandoffClient {
                if let client { return client }
                let fresh = try HandoffClient(socketPath: socketPath)
                client = fresh
                return fresh
            }
            while true {
                switch requests.take() {
                case .stop:
                    return
                case .refresh:
                    do throws(HandoffError) {
                        post(.offers(OfferNotice.offers(inList: try connected().list())))
                    } catch {
                        client = nil
                        post(.offers([]))
                    }
                case let .decline(offer):
                    do throws(HandoffError) {
                        // Only this offer: one that replaced it since (and gets a notification of its
                        // own) is not declined unseen; handoffd answers not-current then.
                        _ = try connected().decline(peer: offer.peer, sequence: offer.sequence)
                    } catch where error.code == .notCurrent {
                        log("an offer was replaced before it was declined: the new one stays")
                    } catch {
                        if error.code == .daemonUnavailable { client = nil }
                        log("declining failed: \(error.code.rawValue)")
                    }
                    post(.declineFinished(peer: offer.peer))
                }
            }
        }
    }

    /// The same request as `handoff-peer accept` (with `--app` when an app is to continue it:
    /// never a silent fallback to the terminal, which nobody watches here).
    private func accept(_ offer: OfferNotice) {
        guard accepting.insert(offer.peer).inserted else { return }
        Threads.start("handoffd-accept") { [self] in
            var failure: HandoffError?
            do throws(HandoffError) {
                let client = try HandoffClient(socketPath: socketPath)
                // The payload goes to the app that continues it, not here.
                // Exactly the offer shown: a newer one is refused (not-current), not fetched unseen.
                _ = try client.acceptWithoutPayload(peer: offer.peer, requireApp: offer.deliverTo != "browser",
                                                    chosen: .init(sequence: offer.sequence, digest: offer.digest))
            } catch {
                failure = error
            }
            post(.acceptFinished(peer: offer.peer, error: failure))
        }
    }

    /// Pair with a device that opened pairing: its code arrives as a `pairingCode` event.
    private func startPairing(peer: String, name: String) {
        Threads.start("handoffd-pair") { [self] in
            do throws(HandoffError) {
                let client = try HandoffClient(socketPath: socketPath)
                let offer = try client.pair(peer: peer, address: nil)
                // Shown from the event too; the book shows one notification per dialog.
                post(.pairing(.pairingCode(PairingCodeEvent(session: offer.session, peer: offer.peer, name: offer.name,
                                                            code: offer.code, role: "initiator"))))
            } catch {
                post(.pairFailed(peer: peer, name: name, error: error))
            }
        }
    }

    /// The person's answer; returns when both sides have answered (the outcome comes as an event).
    private func confirmPairing(session: Int64, accept: Bool) {
        Threads.start("handoffd-pair") { [self] in
            var failure: HandoffError?
            do throws(HandoffError) {
                _ = try HandoffClient(socketPath: socketPath).pairConfirm(session: session, accept: accept)
            } catch {
                failure = error
            }
            post(.confirmFinished(session: session, error: failure))
        }
    }

}

/// Work for the requests thread, in order; repeated refreshes wait as one.
final class RequestQueue: Sendable {
    enum Job: Sendable, Equatable {
        case refresh
        case decline(OfferNotice)
        case stop
    }

    private let jobs = Locked<[Job]>([])
    private let ready = Signals(value: 0)

    func add(_ job: Job) {
        let added = jobs.withLock { jobs in
            if job == .refresh, jobs.contains(.refresh) { return false }
            jobs.append(job)
            return true
        }
        if added { ready.signal() }
    }

    func take() -> Job {
        ready.wait()
        return jobs.withLock { $0.removeFirst() }
    }
}
