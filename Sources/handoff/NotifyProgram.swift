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
            abstract: "handoff-notify: shows what paired devices near this one offer as desktop notifications, with Continue and Not now, and in a panel item.",
            options: [
                CommandSpec.versionOption,
                .init("socket", value: "PATH", help: "handoffd's local API socket (default: $HANDOFF_SOCKET, else $XDG_RUNTIME_DIR/handoff/handoffd.sock)."),
                .init("no-notifications", help: "Show no notifications, as 'notifications = off' in the settings file does."),
                .init("no-panel", help: "Show no panel item, as 'panel = off' in the settings file does. With both off it exits at once."),
            ],
            discussion: """
            Started with the desktop session (XDG autostart). Talks to the notification
            server over the session bus and to handoffd over its local API; waits for
            handoffd when it is not running yet. While a paired laptop offers something,
            a panel item (StatusNotifierItem) lists each offer; choosing one continues it.
            Panels without StatusNotifierItem support show no item, and nothing else changes.
            Settings: $XDG_CONFIG_HOME/handoff/notify.conf (default ~/.config/handoff/notify.conf);
            the line 'notifications = off' switches the notifications off, 'panel = off' the item.
            Exit status: 0 after a clean stop or when switched off, 1 when it cannot start, 64 on misuse.
            """)


        let arguments = spec.argumentsOrExit(Array(commandLine.dropFirst()))

        let environment = ProcessInfo.processInfo.environment
        let settingsPath = NotifySettings.path(environment: environment)
        var settings = NotifySettings()
        if let data = FileManager.default.contents(atPath: settingsPath) {
            do throws(HandoffError) {
                settings = try NotifySettings.parse(String(decoding: data, as: UTF8.self), path: settingsPath)
            } catch {
                printError("Error: \(error.message)\nFix: \(error.fix)")
                exit(1)
            }
        }
        if arguments.flag("no-notifications") { settings.notifications = false }
        if arguments.flag("no-panel") { settings.panel = false }
        guard settings.notifications || settings.panel else {
            let source = arguments.flag("no-notifications") && arguments.flag("no-panel") ? "--no-notifications --no-panel" : settingsPath
            printError("handoff-notify: notifications and the panel item are off (\(source)); exiting.")
            exit(0)
        }

        InstanceLock.exitIfAnotherRuns("handoff-notify", environment: environment, say: printError)

        // Logs go to stderr (the session's journal under systemd); they never carry titles.
        let agent: NotificationAgent
        do throws(HandoffError) {
            agent = try NotificationAgent(socketPath: arguments.value("socket"), settings: settings) { line in printError("handoff-notify: \(line)") }
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
