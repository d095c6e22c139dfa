import FoundationEssentials
import Glibc

/// How an app that continues an activity, or the browser, is started.
///
/// Under a systemd user manager, as transient units (`systemd-run --user`), as
/// desktop launchers do: handoff-launch does it for handoffd, whose own sandbox
/// cannot reach the manager (`Launcher`). They then get the session's environment as it is now
/// (DISPLAY, WAYLAND_DISPLAY, DBUS_SESSION_BUS_ADDRESS, which the desktop
/// imports into the manager, often after handoffd started), none of
/// handoffd's sandbox (an editor must be able to write the home directory, a
/// terminal must be able to run sudo), and they keep running when handoffd
/// restarts. Anywhere else (the lab, a daemon started by hand in a session)
/// handoffd starts them itself, as its children, with its own environment.
public struct AppStarter: Sendable, Equatable {
    public enum Mode: Sendable, Equatable {
        case direct
        /// The path of systemd-run.
        case userManager(systemdRun: String)
    }

    public var mode: Mode
    /// handoffd's own environment.
    public var environment: [String: String]

    public init(mode: Mode, environment: [String: String]) {
        self.mode = mode
        self.environment = environment
    }

    /// What to run: executable, arguments, and the environment to run it with.
    public struct Command: Sendable, Equatable {
        public var executable: String
        public var arguments: [String]
        public var environment: [String: String]
    }

    public static let current = AppStarter(
        mode: mode(environment: ProcessInfo.processInfo.environment, parentPID: getppid(),
                   systemdRun: ["/usr/bin/systemd-run", "/bin/systemd-run"].first(where: FileManager.default.isExecutableFile)),
        environment: ProcessInfo.processInfo.environment)

    /// Started by a user manager: it is our parent and told us so ($MANAGERPID
    /// is set only for processes a user manager starts). A daemon started by
    /// hand from a terminal inherits $MANAGERPID but has another parent.
    public static func mode(environment: [String: String], parentPID: pid_t, systemdRun: String?) -> Mode {
        guard let manager = environment["MANAGERPID"].flatMap(pid_t.init), manager > 1, manager == parentPID,
              let systemdRun else { return .direct }
        return .userManager(systemdRun: systemdRun)
    }

    /// Runs `words` (program and arguments; a program without a slash is looked
    /// up in PATH) with `extra` added to the environment.
    public func command(_ words: [String], adding extra: [String: String]) -> Command {
        switch mode {
        case .direct:
            let absolute = words.first?.hasPrefix("/") ?? false
            return Command(executable: absolute ? words[0] : "/usr/bin/env",
                           arguments: absolute ? Array(words.dropFirst()) : words,
                           environment: environment.merging(extra) { $1 })
        case let .userManager(systemdRun):
            // --wait: systemd-run exits when the app does, with a failure status if it
            // failed, as a child would; stopping systemd-run leaves the app running.
            // exec: a program that cannot be executed fails at once.
            var arguments = ["--user", "--wait", "--quiet", "--collect", "--service-type=exec"]
            arguments += extra.sorted { $0.key < $1.key }.map { "--setenv=\($0.key)=\($0.value)" }
            // systemd-run looks for the program in its own view of the files, which the
            // daemon's sandbox hides most of home from (an app in ~/.local/bin, an AppImage):
            // a shell in the started unit, outside the sandbox, runs it instead.
            // The manager expands $VAR and ${VAR} in a command line (systemd 252 has no way to turn it
            // off), so a URL such as https://x/?${HOME} would open with the manager's environment in
            // it: every $ in the words is doubled, which systemd reads back as one.
            return Command(executable: systemdRun, arguments: arguments + ["--", "/bin/sh", "-c", #"exec "$0" "$@""#]
                               + words.map { $0.replacing("$", with: "$$") },
                           environment: environment)
        }
    }
}
