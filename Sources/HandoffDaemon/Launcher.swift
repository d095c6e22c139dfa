import FoundationEssentials
import Glibc
import HandoffAPI
import HandoffCore
import HandoffTransport
import HandoffRuntime

/// `handoff-launch`: starts, outside handoffd's sandbox, what handoffd asks for, and
/// only what the user's `.desktop` files declare. Under its systemd user unit
/// handoffd cannot reach the user manager (its sandbox hides the manager's sockets),
/// so a daemon taken over from the network cannot start a program of its choosing;
/// it can ask this launcher for a declared app or the browser, nothing else.
///
/// Socket-activated (handoff-launch.socket, Accept=yes): each connection is one
/// instance whose standard input is the connection. It reads one `LaunchRequest`,
/// answers `started` or `refused`, then `exited` if the program ends within
/// `exitWaitMillis`, and exits.
public enum Launcher {
    /// How long the launcher reports on what it started: past handoffd's own wait for
    /// an app (15 s). Later the app is simply running; its systemd-run, ended with this
    /// instance, leaves it running (the app is a unit of the user manager's own).
    static let exitWaitMillis = 20_000
    /// A request must arrive this soon after the connection.
    static let requestWaitMillis = 5_000

    /// What to run for a request, or why it is refused.
    public struct Plan: Equatable, Sendable {
        /// Program and arguments (a program without a slash is looked up in PATH).
        public var words: [String]
        /// Added to the user manager's environment for the program.
        public var environment: [String: String]
    }

    /// Decides what `request` starts: an app only from the `.desktop` file it names, and only
    /// when that file declares the type; the browser only for an http or https page.
    static func plan(_ request: LaunchRequest, declarations: [AppDeclarations.DiskDeclaration],
                     environment: [String: String]) -> Result<Plan, HandoffError> {
        switch request.kind {
        case .app:
            guard let desktopID = request.desktopID, let type = request.type, let socket = request.socket else {
                return .failure(.invalidRequest("An app launch names its desktopID, type and socket."))
            }
            guard let declaration = declarations.first(where: { $0.desktopID == desktopID }) else {
                return .failure(HandoffError(.app, "No .desktop file named \(desktopID) that declares an activity type is installed.",
                                             fix: "Install the app (its .desktop file declares X-Handoff-ActivityTypes), or accept on a host that has it."))
            }
            guard declaration.types.contains(type) else {
                return .failure(HandoffError(.app, "\(desktopID) does not declare \(type), so it is not started for it.",
                                             fix: "Add \(type) to X-Handoff-ActivityTypes in \(desktopID) if the app continues it (Docs/APPS.md)."))
            }
            let words = AppDeclarations.commandLine(exec: declaration.exec ?? "")
            guard !words.isEmpty else {
                return .failure(HandoffError(.app, "\(declaration.name) declares \(type), but the Exec line of \(desktopID) is empty.",
                                             fix: "Fix or reinstall \(desktopID) (Docs/APPS.md)."))
            }
            return .success(Plan(words: words, environment: [
                "HANDOFF_SOCKET": socket,
                "HANDOFF_LAUNCHED_FOR": type,
                // HandoffKit declares with it, so the continuation is matched to the file the app was started from.
                "HANDOFF_DESKTOP_ID": desktopID,
            ]))
        case .browser:
            guard let url = request.url, (try? Activity.validateWebpageURL(url)) != nil else {
                return .failure(.invalidRequest("A browser launch names an http or https url."))
            }
            return .success(Plan(words: browserCommand(url: url, environment: environment), environment: [:]))
        }
    }

    /// The first command of `$BROWSER` (with `%s` replaced by the URL, else the URL
    /// appended), else `xdg-open URL`.
    public static func browserCommand(url: String, environment: [String: String]) -> [String] {
        guard let browser = environment["BROWSER"]?.split(separator: ":").first.map(String.init), !browser.isEmpty else {
            return ["xdg-open", url]
        }
        let command = AppDeclarations.commandLine(exec: browser.replacing("%s", with: "\u{1}"))
        return command.contains { $0.contains("\u{1}") } ? command.map { $0.replacing("\u{1}", with: url) } : command + [url]
    }

    /// Serves the connection on `fd` (standard input under socket activation) and returns the exit status:
    /// 0 when the program was started, 1 when the request was refused or could not be read.
    public static func serve(fd: Int32, log: Log) -> Int32 {
        // Socket activation's variables describe this instance's descriptors, not a program's it starts.
        let environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("LISTEN_") }
        return serve(StreamConnection.adopting(fd: fd, remote: "handoffd"), log: log,
                     declarations: { AppDeclarations.scanDisk() }, environment: environment,
                     starter: AppStarter(mode: AppStarter.current.mode, environment: environment))
    }

    static func serve(_ connection: StreamConnection, log: Log, declarations: () -> [AppDeclarations.DiskDeclaration],
                      environment: [String: String], starter: AppStarter) -> Int32 {
        defer { connection.close() }
        // The socket is 0600 in a 0700 directory; this is the second lock on that door.
        guard let peer = try? connection.peerUID(), peer == getuid() else {
            log.warning("refused a launch request from another user")
            return 1
        }
        func answer(_ reply: LaunchReply) { try? connection.write(reply.line) }
        let request: LaunchRequest
        do throws(HandoffError) {
            connection.setDeadline(millisFromNow: requestWaitMillis)
            guard let line = try? connection.readLine(maxBytes: LaunchRequest.maximumBytes) else {
                throw .invalidRequest("No launch request arrived.")
            }
            request = try LaunchRequest.parse(line)
        } catch {
            log.warning("refused a launch request: \(error.code.rawValue)")
            answer(.refused(error))
            return 1
        }
        let plan: Plan
        switch Self.plan(request, declarations: declarations(), environment: environment) {
        case let .success(planned): plan = planned
        case let .failure(error):
            log.warning("refused to start \(request.desktopID ?? "the browser"): \(error.message)")
            answer(.refused(error))
            return 1
        }
        let command = starter.command(plan.words, adding: plan.environment)
        let started: ChildProcess.Started
        do throws(SystemError) {
            started = try ChildProcess.spawn(command.executable, arguments: command.arguments, environment: command.environment)
        } catch {
            answer(.refused(HandoffError(.app, "Cannot start \(plan.words[0]): \(error).",
                                         fix: "Check the Exec line of \(request.desktopID ?? "$BROWSER"), or start the app yourself and accept again.")))
            return 1
        }
        log.info("started \(request.desktopID.map { "app \($0)" } ?? "the browser") (pid \(started.pid))")
        answer(.started)
        if let status = ChildProcess.waitForExit(started.pid, millis: exitWaitMillis) { answer(.exited(status)) }
        return 0
    }
}

/// handoffd's side of the launcher: one request per start, on a thread of its own (a
/// start is rare, and the launcher's answers must not hold the daemon's actor).
enum LaunchClient {
    /// Where handoff-launch.socket listens: `$XDG_RUNTIME_DIR/handoff-launch/socket`.
    static func socketPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        environment["XDG_RUNTIME_DIR"].flatMap { $0.hasPrefix("/") ? $0 + "/handoff-launch/socket" : nil }
    }

    /// Asks the launcher to start what `request` names. Returns once it answered `started`
    /// or refused; `exited` is called later with the program's status if it ends while the
    /// launcher watches it.
    static func start(_ request: LaunchRequest, exited: @escaping @Sendable (Int32) -> Void) async -> Result<Void, HandoffError> {
        guard let path = socketPath() else {
            return .failure(HandoffError(.app, "handoffd runs under the user manager without $XDG_RUNTIME_DIR, so it cannot reach handoff-launch.",
                                         fix: "Start handoffd with 'systemctl --user start handoffd.service' from a login session."))
        }
        return await withCheckedContinuation { answered in
            Threads.start("launch") {
                let connection: StreamConnection
                do throws(SystemError) {
                    connection = try StreamConnection.connect(unixPath: path)
                } catch {
                    answered.resume(returning: .failure(HandoffError(
                        .app, "The launcher (handoff-launch.socket) does not answer at \(path): \(error). handoffd starts apps and the browser only through it.",
                        fix: "Run 'systemctl --user enable --now handoff-launch.socket', then accept again.")))
                    return
                }
                defer { connection.close() }
                connection.setDeadline(millisFromNow: Launcher.requestWaitMillis)
                let first: LaunchReply
                do throws(HandoffError) {
                    let line: [UInt8]
                    do throws(SystemError) {
                        try connection.write(request.line)
                        guard let read = try connection.readLine(maxBytes: LaunchRequest.maximumBytes) else {
                            throw SystemError("read", errno: ECONNRESET)
                        }
                        line = read
                    } catch {
                        throw HandoffError(.app, "The launcher (handoff-launch.socket) did not answer: \(error).",
                                           fix: "See 'journalctl --user -u \"handoff-launch@*\"', then accept again.")
                    }
                    first = try LaunchReply.parse(line)
                } catch {
                    answered.resume(returning: .failure(error))
                    return
                }
                guard first.state == .started else {
                    answered.resume(returning: .failure(first.error ?? .invalidRequest("refused")))
                    return
                }
                answered.resume(returning: .success(()))
                connection.setDeadline(millisFromNow: Launcher.exitWaitMillis + 5_000)
                if let line = try? connection.readLine(maxBytes: LaunchRequest.maximumBytes),
                   let reply = try? LaunchReply.parse(line), reply.state == .exited, let status = reply.status {
                    exited(status)
                }
            }
        }
    }
}
