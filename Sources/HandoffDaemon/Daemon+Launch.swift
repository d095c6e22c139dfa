import Foundation
import HandoffCore
import HandoffTransport

/// A continuation waiting for the app that was started to receive it.
struct PendingDelivery {
    var app: String
    var type: String
    var events: [JSONValue]
    var expiresMillis: UInt64
}

// Starting a declared app that is not running, and handing it the activity
// once it has connected and declared the type (through HandoffKit).
extension Daemon {
    static let launchWaitMillis: UInt64 = 30_000

    func launch(app: String, exec: String, type: String, events: [JSONValue]) {
        let words = AppDeclarations.commandLine(exec: exec)
        guard let program = words.first else {
            log.warning("app \(app) declares \(type) but its Exec line is empty")
            return
        }
        let process = Process()
        var command = program.hasPrefix("/") ? words : ["/usr/bin/env"] + words
        // Under the service unit handoffd holds CAP_NET_RAW and CAP_NET_ADMIN as ambient
        // capabilities; an app it starts must not inherit them.
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") {
            command = ["/usr/bin/setpriv", "--inh-caps=-all", "--ambient-caps=-all", "--"] + command
        }
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        var environment = ProcessInfo.processInfo.environment
        environment["HANDOFF_SOCKET"] = configuration.socketPath
        environment["HANDOFF_LAUNCHED_FOR"] = type
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        do {
            try process.run()
            log.info("started app \(app) (pid \(process.processIdentifier)) to continue \(type)")
            pendingDeliveries.removeAll { $0.expiresMillis < wallClockMillis() }
            pendingDeliveries.append(PendingDelivery(app: app, type: type, events: events,
                                                     expiresMillis: wallClockMillis() + Self.launchWaitMillis))
        } catch {
            log.warning("cannot start app \(app): \(error.localizedDescription)")
        }
    }

    /// Opens an http(s) URL (validated when the activity was decoded) in the
    /// user's browser: the first command of `$BROWSER` (with `%s` replaced by the
    /// URL, else the URL appended), else `xdg-open`.
    func openInBrowser(_ url: String) {
        var words = ["xdg-open", url]
        if let browser = ProcessInfo.processInfo.environment["BROWSER"]?.split(separator: ":").first.map(String.init),
           !browser.isEmpty {
            let command = AppDeclarations.commandLine(exec: browser.replacingOccurrences(of: "%s", with: "\u{1}"))
            words = command.contains { $0.contains("\u{1}") }
                ? command.map { $0.replacingOccurrences(of: "\u{1}", with: url) } : command + [url]
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: words[0].hasPrefix("/") ? words[0] : "/usr/bin/env")
        process.arguments = words[0].hasPrefix("/") ? Array(words.dropFirst()) : words
        process.standardInput = FileHandle.nullDevice
        do {
            try process.run()
            log.info("opened the activity's web page in the browser (\(words[0]))")
        } catch {
            log.warning("cannot start the browser \(words[0]): \(error.localizedDescription)")
        }
    }

    /// An app declared types on `connection`: hand it what was kept for it.
    func deliverPending(to connection: StreamConnection, app: String, types: Set<String>) {
        let now = wallClockMillis()
        let (ready, rest) = (pendingDeliveries.filter { $0.expiresMillis >= now && $0.app == app && types.contains($0.type) },
                             pendingDeliveries.filter { !($0.expiresMillis >= now && $0.app == app && types.contains($0.type)) })
        guard !ready.isEmpty, let sink = subscribers.values.first(where: { $0.connection === connection }) else { return }
        pendingDeliveries = rest.filter { $0.expiresMillis >= now }
        for delivery in ready {
            log.info("handing the continuation of \(delivery.type) to \(app), which was started for it")
            for event in delivery.events { _ = sink.send(event) }
        }
    }
}
