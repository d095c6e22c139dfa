import FoundationEssentials
import Glibc
import HandoffCommandLine
import HandoffCore
import HandoffKit
import HandoffTransport
import HandoffRuntime

/// `handoff-documents`: the documents agent's command line (Docs/APPS.md, "Documents").
public enum DocumentsCommand {
    public static let spec = CommandSpec(
        name: "handoff-documents",
        abstract: "handoff-documents: offers the document you last opened or saved (the freedesktop recently-used list) to paired laptops, and saves and opens documents continued here.",
        options: [
            CommandSpec.versionOption,
            .init("socket", value: "PATH", help: "handoffd's local API socket (default: $HANDOFF_SOCKET, else $XDG_RUNTIME_DIR/handoff/handoffd.sock)."),
        ],
        discussion: """
        Started with the desktop session (XDG autostart). Never offers files outside the home directory,
        under a hidden directory (~/.ssh, ~/.gnupg, any dot-directory) or hidden files, or above the size limit.
        Settings: $XDG_CONFIG_HOME/handoff/documents.conf (default ~/.config/handoff/documents.conf), lines of
          documents = on|off       the whole feature (default on)
          max-size-mib = N         the largest document offered (default 16, at most 48)
          exclude-app = NAME       never offer files opened in this app (as the list names it, e.g. Mousepad)
          exclude-dir = PATH       never offer files under this directory (~/ allowed)
        Continued documents are saved at the same path under the home directory when it is free or holds the
        same bytes, else as "NAME (from DEVICE).EXT" beside it; only an accept made here is acted on. A document
        type (text, PDF, office documents, images: shared-mime-info on the name and bytes) opens in this laptop's
        default document app for it; anything else is saved unopened. A notification says which.
        Exit status: 0 when switched off, 1 when it cannot start, 64 on misuse.
        """)

    public static func main(arguments: [String]) -> Never {
        let parsed = spec.argumentsOrExit(arguments)
        let environment = ProcessInfo.processInfo.environment
        let configuration = DocumentsAgent.Configuration(socketPath: parsed.value("socket"), environment: environment) { line in
            printError("handoff-documents: \(line)")
        }
        let agent = DocumentsAgent(configuration: configuration)
        do throws(HandoffError) {
            guard try agent.settings().enabled else {
                printError("handoff-documents: documents are off (\(configuration.settingsPath)); exiting.")
                exit(0)
            }
        } catch {
            printError("Error: \(error.message)\nFix: \(error.fix)")
            exit(1)
        }
        InstanceLock.exitIfAnotherRuns("handoff-documents", environment: environment, say: printError)
        // Openers started for continued documents are not waited for: the kernel reaps them.
        signal(SIGCHLD, SIG_IGN)
        let receiver = DocumentReceiver(configuration: configuration, environment: environment)
        Threads.start("documents receive") {
            // Declares the type while handoffd runs; waits for it (and for a restart) otherwise.
            while true {
                if let app = try? HandoffApp(name: "handoff-documents", types: [documentActivityType], socketPath: configuration.socketPath) {
                    app.serve(handler: receiver)
                }
                sleep(2)
            }
        }
        do throws(HandoffError) {
            try agent.watch()
        } catch {
            printError("Error: \(error.message)\nFix: \(error.fix)")
            exit(1)
        }
        exit(0)
    }

    static func printError(_ text: String) {
        writeStandardError((text + "\n"))
    }
}
