import FoundationEssentials
import Glibc
import HandoffAPI
import HandoffCore
import HandoffTransport
import HandoffRuntime

/// A continuation waiting for the app that was started to take it.
struct PendingDelivery {
    var app: String
    var type: String
    var events: [Event]
    /// The continuation's payload, for the app when it asked for payloads.
    var payload: PayloadBuffer
    var waiter: CheckedContinuation<Result<ObjectIdentifier, HandoffError>, Never>
}

// Handing a fetched activity to where it continues: an app that was not
// running is started and must take it within a bound; a web page opens in the
// browser, which must not fail. Either failure fails the accept.
extension Daemon {
    static let launchWaitMillis: UInt64 = 15_000
    /// xdg-open and browsers hand the page over and return; a failure shows by then.
    static let browserWaitMillis = 3_000
    /// After accepting at least this much, freed heap memory goes back to the system.
    static let trimAfterBytes: UInt32 = 1 << 20

    /// After the fetch: delivers to the target, then reports exactly one of continued or failed.
    func finishAccept(_ fetched: AcceptOutcome, acceptID: Int64, peer: Peer, willContinue: Event) async -> AcceptOutcome {
        guard let job = accepts.job(acceptID) else { preconditionFailure("an accept's job lasts until it ends") }
        let (type, target) = (job.type, job.target)
        var outcome = fetched
        if case let .failure(error) = fetched { outcome = .failure(await explainFetchFailure(error, peer: peer)) }
        var appConnection: ObjectIdentifier?
        if case let .success(result) = outcome, accepts.job(acceptID)?.reported == false {
            accepts.enter(.delivering, acceptID)
            let continued = Event.continued(ContinuedEvent(acceptID: acceptID, peer: job.peer.description,
                                                           activity: result.activity, deliverTo: target.app,
                                                           payloadBytes: Int64(result.payload.count), ticket: job.ticket))
            switch target.kind {
            case .running, .terminal:
                break
            case .browser:
                if let failure = await openInBrowser(result.activity.webpageURL ?? "") { outcome = .failure(failure) }
            case let .launch(exec, desktopID):
                switch await launch(app: target.app, exec: exec, desktopID: desktopID, type: type, acceptID: acceptID,
                                    events: [willContinue, continued], payload: result.payload) {
                case let .success(connection): appConnection = connection
                case let .failure(failure): outcome = .failure(failure)
                }
            }
        }
        // Already reported as failed when the daemon is stopping.
        guard accepts.report(acceptID) else { return outcome }
        // A large payload's buffers would stay in malloc's arenas, resident, until reused.
        if accepts.count == 1, (peer.offer?.summary.payloadSize ?? 0) >= Self.trimAfterBytes { Malloc.trim() }
        switch outcome {
        case let .success(result):
            log.info("continued type \(type) from \(job.peer) in \(target.app): handshake \(Int(result.timing.handshakeMillis)) ms, transfer \(Int(result.timing.transferMillis)) ms")
            // A started app already got it, with its willContinue, when it declared.
            broadcastContinued(ContinuedEvent(acceptID: acceptID, peer: job.peer.description, activity: result.activity,
                                              deliverTo: target.app, payloadBytes: Int64(result.payload.count), ticket: job.ticket),
                               payload: result.payload, except: appConnection)
        case let .failure(error):
            log.info("accept of type \(type) from \(job.peer) failed: \(error.code.rawValue)")
            broadcast(.failed(acceptID: acceptID, peer: job.peer.description, type: type, error: error, deliverTo: target.app))
        }
        return outcome
    }

    /// Starts a declared app and waits until it takes the continuation (it declares the type from the
    /// `.desktop` file it was started from), exits with an error, or the bound passes. Under the user
    /// manager the launcher starts it (handoff-launch, outside this sandbox, from the file alone);
    /// elsewhere (the lab, a daemon started by hand) handoffd starts it itself.
    func launch(app: String, exec: String, desktopID: String, type: String, acceptID: Int64,
                events: [Event], payload: PayloadBuffer) async -> Result<ObjectIdentifier, HandoffError> {
        let exited: @Sendable (Int32) -> Void = { [self] status in
            onActor { $0.launchedAppExited(acceptID, app: app, type: type, status: status) }
        }
        switch AppStarter.current.mode {
        case .userManager:
            if case let .failure(error) = await LaunchClient.start(.app(desktopID: desktopID, type: type, socket: configuration.socketPath),
                                                                   exited: exited) {
                log.warning("the launcher did not start app \(app): \(error.code.rawValue)")
                return .failure(error)
            }
            log.info("the launcher started app \(app) to continue \(type)")
        case .direct:
            let words = AppDeclarations.commandLine(exec: exec)
            guard !words.isEmpty else {
                return .failure(HandoffError(.app, "\(app) declares \(type), but the Exec line of \(desktopID) is empty.",
                                             fix: "Fix or reinstall \(desktopID) (Docs/APPS.md)."))
            }
            let command = AppStarter.current.command(words, adding: [
                "HANDOFF_SOCKET": configuration.socketPath,
                "HANDOFF_LAUNCHED_FOR": type,
                // HandoffKit declares with it, so the continuation is matched to the file the app was started from.
                "HANDOFF_DESKTOP_ID": desktopID,
            ])
            do throws(SystemError) {
                let started = try ChildProcess.spawn(command.executable, arguments: command.arguments, environment: command.environment)
                ChildProcess.onExit(started.pid, exited)
                log.info("started app \(app) (pid \(started.pid)) to continue \(type)")
            } catch {
                log.warning("cannot start app \(app): \(error)")
                return .failure(HandoffError(.app, "Cannot start \(app) (\(desktopID)) to continue \(type): \(error).",
                                             fix: "Check the Exec line of \(desktopID), or start the app yourself and accept again."))
            }
        }
        let bound = Self.launchWaitMillis
        return await withCheckedContinuation { waiter in
            accepts.waitForApp(acceptID, desktopID: desktopID, type: type,
                               wait: PendingDelivery(app: app, type: type, events: events, payload: payload, waiter: waiter))
            loop.after(millis: bound) { self.onActor { $0.endPending(acceptID, HandoffError(
                    .app, "\(app) was started to continue \(type) but did not take it within \(bound / 1000) s: it did not start, or it does not declare \(type) when it runs.",
                    fix: "Start \(app) by hand and accept again; if it never continues \(type), its .desktop file (\(desktopID)) declares a type the app does not.")) } }
        }
    }

    func launchedAppExited(_ id: Int64, app: String, type: String, status: Int32) {
        // Exiting 0 may hand over to an instance that then declares; only a failure ends the wait early.
        guard status != 0 else { return }
        endPending(id, HandoffError(.app, "\(app) was started to continue \(type) but exited with status \(status) before taking it.",
                                    fix: "Start \(app) by hand to see why it fails, then accept again."))
    }

    private func endPending(_ id: Int64, _ error: HandoffError) {
        guard let pending = accepts.endAppWait(id) else { return }
        log.info("app \(pending.app) did not take the continuation of \(pending.type): \(error.code.rawValue)")
        pending.waiter.resume(returning: .failure(error))
    }

    /// An app declared types on `connection`: hand it what was kept for it. Matched by
    /// the `.desktop` file id it was started from (HandoffKit passes $HANDOFF_DESKTOP_ID
    /// back), or by an app name that is that id; never by the file's display name.
    func deliverPending(to connection: StreamConnection, app: String, desktopID: String?, types: Set<String>) {
        guard let session = clients.subscribers.session(of: connection) else { return }
        for delivery in accepts.takeAppWaits(app: app, desktopID: desktopID, types: types) {
            log.info("handing the continuation of \(delivery.type) to \(app), which was started for it")
            // Addressed to the name it declared with, which its .desktop file's Name= need not be.
            for event in delivery.events {
                switch event {
                case let .willContinue(acceptID, peer, type, _):
                    _ = session.send(.willContinue(acceptID: acceptID, peer: peer, type: type, deliverTo: app))
                case var .continued(continued):
                    continued.deliverTo = app
                    _ = LocalClients.sendContinued(continued, payload: delivery.payload, to: session, app: app)
                default:
                    _ = session.send(event)
                }
            }
            delivery.waiter.resume(returning: .success(ObjectIdentifier(connection)))
        }
    }

    /// Opens an http(s) URL (validated when the activity was decoded) in the
    /// user's browser (`Launcher.browserCommand`: `$BROWSER`, else `xdg-open`),
    /// through the launcher under the user manager. Nil when it opened.
    func openInBrowser(_ url: String) async -> HandoffError? {
        let fix = "Set $BROWSER for handoffd to a browser command, or set the desktop's default browser ('xdg-settings set default-web-browser ...'); then accept again."
        let exit = ProcessExit()
        let program: String
        switch AppStarter.current.mode {
        case .userManager:
            // The launcher's environment is the user manager's, whose $BROWSER is what counts.
            program = "the browser"
            if case let .failure(error) = await LaunchClient.start(.browser(url: url), exited: { exit.finished($0) }) {
                log.warning("the launcher did not open the browser: \(error.code.rawValue)")
                return error
            }
        case .direct:
            let words = Launcher.browserCommand(url: url, environment: ProcessInfo.processInfo.environment)
            program = words[0]
            let command = AppStarter.current.command(words, adding: [:])
            do throws(SystemError) {
                let started = try ChildProcess.spawn(command.executable, arguments: command.arguments, environment: command.environment)
                ChildProcess.onExit(started.pid) { exit.finished($0) }
            } catch {
                log.warning("cannot start the browser \(program): \(error)")
                return HandoffError(.app, "Cannot start the browser (\(program)) to open the activity's web page: \(error).", fix: fix)
            }
        }
        // /usr/bin/env exits 127 when the command is missing; systemd-run exits 1.
        if let status = await exit.wait(millis: Self.browserWaitMillis), status != 0 {
            log.warning("the browser \(program) exited with status \(status)")
            return HandoffError(.app, "The browser (\(program)) exited with status \(status): the activity's web page was not opened.", fix: fix)
        }
        log.info("opened the activity's web page in the browser (\(program))")
        return nil
    }
}

/// One process's exit, awaited with a bound: its status, or nil while it still runs.
final class ProcessExit: Sendable {
    private struct State {
        var status: Int32?
        var waiter: CheckedContinuation<Int32?, Never>?
    }
    private let state = Locked(State())

    func finished(_ code: Int32) {
        let waiting = state.withLock { state in
            state.status = code
            defer { state.waiter = nil }
            return state.waiter
        }
        waiting?.resume(returning: code)
    }

    func wait(millis: Int) async -> Int32? {
        await withCheckedContinuation { continuation in
            let status = state.withLock { state in
                if state.status == nil { state.waiter = continuation }
                return state.status
            }
            if let status {
                continuation.resume(returning: status)
                return
            }
            EventLoop.shared.after(millis: UInt64(millis)) { self.timedOut() }
        }
    }

    private func timedOut() {
        let waiting = state.withLock { state in
            defer { state.waiter = nil }
            return state.waiter
        }
        waiting?.resume(returning: nil)
    }
}
