import Glibc
import HandoffCommandLine
import HandoffDaemon

/// handoff-launch: started by handoff-launch.socket for each of handoffd's requests.
enum LaunchProgram {
    static func main(_ commandLine: [String]) -> Never {
        let spec = CommandSpec(
            name: "handoff-launch",
            abstract: "handoff-launch: start a declared app or the browser for handoffd, outside its sandbox.",
            options: [CommandSpec.versionOption],
            discussion: """
            Started by the systemd user unit handoff-launch.socket (Accept=yes) with the connection as standard
            input; not run by hand. It reads one request from handoffd: an app, named by its .desktop file and
            the activity type it is started for, or an http(s) page for the browser. It starts an app only when
            that .desktop file declares the type (X-Handoff-ActivityTypes), with the Exec line of that file,
            through the user manager (systemd-run --user). Docs/SECURITY.md says why.
            Exit status: 0 when it started what was asked, 1 when it refused, 64 on misuse.
            """)
        _ = spec.argumentsOrExit(Array(commandLine.dropFirst()))
        exit(Launcher.serve(fd: 0, log: Log(level: .info, program: "handoff-launch")))
    }
}
