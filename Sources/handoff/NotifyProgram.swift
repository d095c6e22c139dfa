import FoundationEssentials
import Glibc
import HandoffCommandLine
import HandoffCore
import HandoffDocuments
import HandoffNotify
import HandoffTransport

/// handoff-notify: the session agent that shows offers as notifications.
enum NotifyProgram {
    static func main(_ commandLine: [String]) -> Never {
        let spec = CommandSpec(
            name: "handoff-notify",
            abstract: "handoff-notify: shows what paired devices near this one offer as desktop notifications, with Continue and Not now.",
            options: [
                CommandSpec.versionOption,
                .init("socket", value: "PATH", help: "handoffd's local API socket (default: $HANDOFF_SOCKET, else $XDG_RUNTIME_DIR/handoff/handoffd.sock)."),
                .init("no-notifications", help: "Show none: exit at once, as 'notifications = off' in the settings file does."),
            ],
            discussion: """
            Started with the desktop session (XDG autostart). Talks to the notification
            server over the session bus and to handoffd over its local API; waits for
            handoffd when it is not running yet.
            Settings: $XDG_CONFIG_HOME/handoff/notify.conf (default ~/.config/handoff/notify.conf);
            the line 'notifications = off' switches the notifications off.
            Exit status: 0 after a clean stop or when switched off, 1 when it cannot start, 64 on misuse.
            """)


        let arguments = spec.argumentsOrExit(Array(commandLine.dropFirst()))

        let environment = ProcessInfo.processInfo.environment
        let settingsPath = NotifySettings.path(environment: environment)
        var enabled = !arguments.flag("no-notifications")
        if enabled, let data = FileManager.default.contents(atPath: settingsPath) {
            do throws(HandoffError) {
                enabled = try NotifySettings.notificationsEnabled(in: String(decoding: data, as: UTF8.self), path: settingsPath)
            } catch {
                printError("Error: \(error.message)\nFix: \(error.fix)")
                exit(1)
            }
        }
        guard enabled else {
            printError("handoff-notify: notifications are off (\(arguments.flag("no-notifications") ? "--no-notifications" : settingsPath)); exiting.")
            exit(0)
        }

        // Logs go to stderr (the session's journal under systemd); they never carry titles.
        let agent: NotificationAgent
        do throws(HandoffError) {
            agent = try NotificationAgent(socketPath: arguments.value("socket")) { line in printError("handoff-notify: \(line)") }
        } catch {
            printError("Error: \(error.message)\nFix: \(error.fix)")
            exit(1)
        }
        agent.stopOnSignals([SIGTERM, SIGINT])
        do throws(HandoffError) {
            try agent.run()
        } catch {
            printError("Error: \(error.message)\nFix: \(error.fix)")
            exit(1)
        }
        exit(0)
    }
}
