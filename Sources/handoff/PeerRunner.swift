import FoundationEssentials
import Glibc
import HandoffAPI
import HandoffBrowserHost
import HandoffCommandLine
import HandoffCore
import HandoffKit
import HandoffTransport
import HandoffRuntime

/// Runs one command against the daemon and prints the outcome for people or, with --json, for scripts.
struct Runner {
    let client: HandoffClient
    let arguments: ParsedArguments
    var wantsJSON: Bool { arguments.flag("json") }

    init(socketPath: String?, command: String, arguments: ParsedArguments) throws(HandoffError) {
        // publish offers as handoff-peer; resign and invalidate without --publisher stop everything this host offers.
        let named = arguments.value("publisher")
        let publisher = named ?? (["resign", "invalidate"].contains(command) ? nil : "handoff-peer")
        client = try HandoffClient(socketPath: socketPath, publisher: publisher)
        self.arguments = arguments
    }

    func run(_ command: String) throws(HandoffError) -> Int32 {
        switch command {
        case "list": try list()
        case "accept": return try accept()
        case "decline":
            print("Declined the current offer of \(try client.decline(peer: arguments.positionals[0])).")
        case "publish": try publish()
        case "resign":
            print(try client.resign() ? "Resigned: no longer offered." : "Nothing was being offered.")
        case "invalidate":
            print(try client.invalidate() ? "Invalidated." : "Nothing to invalidate.")
        case "status": try status()
        case "pair": return try pair()
        case "devices": try devices()
        case "untrust":
            print("No longer trusted: \(try client.untrust(peer: arguments.positionals[0]).untrusted).")
        case "id": try identity()
        case "watch": return try watch()
        case "doctor": return try doctor()
        case "enable", "disable":
            let enabled = try client.setEnabled(command == "enable")
            print(enabled ? "Handoff is on." : "Handoff is off: this host offers and accepts nothing until 'handoff-peer enable'.")
        case "apps": try apps()
        default: break
        }
        return 0
    }

    // MARK: - Commands

    private func list() throws(HandoffError) {
        let peers = try client.list()
        if wantsJSON {
            print(JSONValue.array(peers.map(\.json)).prettyPrinted())
            return
        }
        guard !peers.isEmpty else {
            print("No peers in range. Peers appear here when they run handoffd on this network and trust each other.")
            return
        }
        var rows = [["PEER", "NAME", "TYPE", "TITLE", "AGE", "CONTINUES IN"]]
        for peer in peers {
            let offer = peer.offer
            rows.append([
                peer.peer, safe(peer.name),
                offer.map { safe($0.type) } ?? "-",
                offer.map { safe($0.title) } ?? "(nothing offered)",
                offer.map { age(millis: $0.ageMillis ?? 0) } ?? "-",
                offer.map { continuesIn($0.deliverTo) } ?? "-",
            ])
        }
        printTable(rows)
        // What this host offers in turn, and which publisher it comes from (the most recent action wins).
        if let current = try? client.status().current {
            print("\nOffered from here: \(safe(current.type)) from \(safe(current.publisher))")
        }
    }

    /// Where accepting an offer continues it, for `list`.
    private func continuesIn(_ target: String?) -> String {
        switch target {
        case nil, "terminal": "- (printed)"
        case let app?: safe(app)
        }
    }

    /// The listed offer `reference` names, as handoffd resolves a peer (a name, else a device id
    /// prefix of four or more); nil when none or several match (the accept then says why).
    private func offerNamed(_ reference: String) throws(HandoffError) -> (PeerEntry, OfferInfo)? {
        let entries = try client.list()
        let compact = { (id: String) in id.uppercased().filter { $0 != "-" } }
        let byName = entries.filter { $0.name == reference }
        let matches = byName.count == 1 ? byName
            : compact(reference).count >= 4 ? entries.filter { compact($0.peer).hasPrefix(compact(reference)) } : []
        guard matches.count == 1, let offer = matches[0].offer else { return nil }
        return (matches[0], offer)
    }

    private func accept() throws(HandoffError) -> Int32 {
        let reference = arguments.positionals[0]
        // On a terminal, the transfer's progress: events on this connection while the accept runs.
        let showsProgress = isatty(STDERR_FILENO) == 1
        var display = ProgressDisplay()
        let reply: ReceivedMessage
        let result: AcceptResult
        do {
            // The offer taken is the one listed now, said before anything is fetched; handoffd
            // refuses it (not-current) if the peer offers something else by the time it fetches.
            let chosen = try offerNamed(reference)
            if let (entry, offer) = chosen {
                printError("Accepting \u{201C}\(safe(offer.title))\u{201D} (\(offer.type), offer \(offer.sequence)) from \(safe(entry.name)) (\(entry.peer))")
            }
            if showsProgress { try client.subscribe() }
            reply = try client.send(.accept(peer: reference, requireApp: arguments.flag("app"), payload: true, sequence: chosen?.1.sequence,
                                            digest: chosen?.1.digest, ticket: AcceptTickets.mint(peer: reference)),
                                    onEvent: showsProgress ? { if let event = $0.event { display.handle(event) } } : nil)
            display.finish()
            result = try AcceptResult(json: reply.json, context: "the accept result")
        } catch where error.code != .daemonUnavailable {
            display.finish()
            if wantsJSON {
                print(JSONValue.object(["continued": false, "error": error.json]).prettyPrinted())
            }
            printError("Failed (\(error.code.rawValue)): \(error.message)\nFix: \(error.fix)")
            return ExitCode.failure
        }
        guard let payload = reply.payload else {
            throw HandoffError(.internal, "handoffd accepted but passed no payload.", fix: "Make sure handoff-peer and handoffd are the same version.")
        }
        let activity = result.activity
        // The terminal is the app of last resort: say so once, on stderr, so stdout keeps its format.
        if result.deliverTo == "terminal" {
            printError("No app here declares \(activity.type): printed here (use --app to require one).")
        }
        // Straight from the payload's mapping to stdout (a 64 MiB userInfo is not decoded first).
        var output = PayloadJSON(sink: standardOutputSink)
        fflush(nil)
        // A pipe to a script: a 1 MiB pipe buffer takes each write whole instead of in 64 KiB turns.
        if payload.count > PayloadJSON.flushBytes { _ = fcntl(STDOUT_FILENO, 1031 /* F_SETPIPE_SZ, which Glibc does not import */, Int32(PayloadJSON.flushBytes)) }
        if wantsJSON {
            try output.write(payload: payload.bytes)
            return 0
        }
        output.write(text: """
            Continued from \(safe(result.name)) (\(result.peer)):
              type:      \(activity.type)
              title:     \(safe(activity.title))

            """)
        if let id = activity.targetContentIdentifier { output.write(text: "  content:   \(safe(id))\n") }
        if let url = activity.webpageURL { output.write(text: "  url:       \(safe(url))\n") }
        output.write(text: "  userInfo:  ")
        try output.write(userInfoOf: payload.bytes, indent: 13)
        return 0
    }

    private func publish() throws(HandoffError) {
        let type = arguments.value("type") ?? ""
        var fields: [String: JSONValue] = ["type": .string(type), "title": .string(arguments.value("title") ?? "")]
        if let text = arguments.value("user-info") {
            fields["userInfo"] = try parseUserInfo(text, source: "--user-info")
        } else if let path = arguments.value("user-info-file") {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw HandoffError(.invalidActivity, "Cannot read \(path).", fix: "Check the path given to --user-info-file.")
            }
            fields["userInfo"] = try parseUserInfo(String(decoding: data, as: UTF8.self), source: path)
        }
        if let url = arguments.value("url") { fields["webpageURL"] = .string(url) }
        if let id = arguments.value("content-id") { fields["targetContentIdentifier"] = .string(id) }
        if let seconds = arguments.value("expires").flatMap(Double.init) {
            fields["expiresAtMillis"] = .integer(Int64(Date().timeIntervalSince1970 * 1000 + seconds * 1000))
        }
        let activity = try Activity(json: .object(fields))
        // By descriptor: a large userInfo is never base64 in JSON on the socket.
        let receipt = try client.publish(activity)
        for warning in receipt.warnings {
            printError("Warning: \(warning)")
        }
        if wantsJSON {
            print(receipt.json.prettyPrinted())
        } else {
            print("Offered \(type) (sequence \(receipt.sequence), \(receipt.payloadBytes) bytes) to paired devices.")
        }
    }

    private func parseUserInfo(_ text: String, source: String) throws(HandoffError) -> JSONValue {
        // JSON has no infinity; a number too large for a double would otherwise fail the whole text without saying where.
        if let path = JSONNumbers.firstNonFinite(in: text, root: "userInfo") {
            throw HandoffError(.invalidActivity, "\(path) in \(source) is a number too large for a double (it would be infinite).",
                               fix: "Use a finite number (at most about 1.8e308), or a string.")
        }
        do {
            return try JSONValue.parse(text)
        } catch {
            throw HandoffError(.invalidActivity, "\(source) is not valid JSON.", fix: "Give a JSON object, e.g. '{\"page\": 3}'.")
        }
    }

    private func status() throws(HandoffError) {
        let status = try client.status()
        if wantsJSON {
            print(status.json.prettyPrinted())
            return
        }
        print("Device:     \(safe(status.name)) (\(status.deviceID))")
        print("Handoff:    \(status.enabled ? "on" : "off ('handoff-peer enable' turns it on)")")
        print("Transfer:   port \(status.transferPort)/tcp")
        for path in status.discovery {
            print("Discovery:  \(path.path): \(path.state)")
        }
        print("Bluetooth:  \(safe(status.bluetooth["state"]?.stringValue ?? "?"))")
        print("Paired:     \(status.trustedDevices) device(s); \(status.peers) in range")
        if let current = status.current, status.offering {
            print("Offering:   \(current.type) from \(safe(current.publisher)) (sequence \(current.sequence))")
        } else if let current = status.current {
            print("Offering:   nothing: Handoff is off (\(current.type) is kept and offered again once enabled)")
        } else {
            print("Offering:   nothing")
        }
        // The most recent user action wins; a resign hands back to the next one still offered.
        for entry in status.publishers where entry.state != "current" {
            print("            then \(safe(entry.publisher)): \(safe(entry.type)) (\(entry.state))")
        }
        let drops = status.drops.objectValue ?? [:]
        let counts = drops.keys.sorted().map { "\($0) \(drops[$0]?.integerValue ?? 0)" }.joined(separator: ", ")
        print("Dropped:    \(counts)")
        print("Transfers:  served \(status.transfers.served), refused \(status.transfers.refused)")
    }

    private func pair() throws(HandoffError) -> Int32 {
        if arguments.flag("list") {
            let devices = try client.pairable()
            if wantsJSON {
                print(JSONValue.array(devices.map(\.json)).prettyPrinted())
            } else if devices.isEmpty {
                print("No device has pairing open. Run 'handoff-peer pair' on the other host.")
            } else {
                printTable([["PEER", "NAME", "ADDRESS"]] + devices.map { [$0.peer, safe($0.name), $0.host] })
            }
            return 0
        }
        // Range checked by Commands.validate.
        let timeout = arguments.value("timeout").flatMap { Int64($0) } ?? 120
        if arguments.flag("open") {
            // Pairing stays open while this command runs (its connection holds it): it returns
            // when a device paired, the time is up, or on Ctrl-C.
            let window = try client.pairOpen(timeoutSeconds: timeout)
            if wantsJSON {
                print(window.json.prettyPrinted())
            } else {
                print("Pairing is open for \(timeout) s, while this runs (Ctrl-C closes it). On the other host, open pairing too")
                print("and choose Pair in its notification (or run: handoff-peer pair \(try ownName())); then compare the codes and")
                print("choose Pair in both notifications.")
            }
            fflush(nil)
            try client.subscribe()
            while let received = try client.nextEvent() {
                guard case let .pairingClosed(reason)? = received.event else { continue }
                if reason == "paired" {
                    if !wantsJSON { print("Paired; pairing is closed.") }
                    return 0
                }
                throw reason == "too-many-declined"
                    ? HandoffError(.declined, "Pairing closed: too many devices were declined or showed another code.",
                                   fix: "Someone may be guessing codes: pair elsewhere, or open pairing again when only your other laptop asks.")
                    : HandoffError(.timedOut, "No device paired within \(timeout) s.",
                                   fix: "Open pairing on both hosts, then choose Pair in one notification.")
            }
            throw HandoffError(.daemonUnavailable, "handoffd went away while pairing was open.",
                               fix: "Start handoffd again ('systemctl --user start handoffd'), then pair again.")
        }
        if let peer = arguments.positionals.first ?? arguments.value("address").map({ _ in "" }) {
            let offer = try client.pair(peer: peer.isEmpty ? nil : peer, address: arguments.value("address"))
            return try confirm(offer, listening: false).exitCode
        }
        if !wantsJSON { print("Pairing is open for \(timeout) s. On the other host run: handoff-peer pair \(try ownName())") }
        fflush(nil)
        // Several devices may ask while pairing is open (a stranger first, say): each is shown
        // with its own code, and one that is declined or fails leaves pairing open for the next.
        let deadline = monotonicSeconds() + timeout
        while true {
            let remaining = deadline - monotonicSeconds()
            guard remaining > 0 else {
                throw HandoffError(.timedOut, "No device paired within \(timeout) s.",
                                   fix: "On the other host run 'handoff-peer pair \(try ownName())' while this one waits.")
            }
            let offer = try client.pairListen(timeoutSeconds: remaining)
            let outcome = try confirm(offer, listening: true)
            if outcome.paired || arguments.flag("yes") { return outcome.exitCode }
            if !wantsJSON { print("Pairing stays open for \(max(0, deadline - monotonicSeconds())) s for another device.") }
            fflush(nil)
        }
    }

    private func monotonicSeconds() -> Int64 { Int64(monotonicMillis() / 1000) }

    private enum Answer: Sendable {
        case typed(String)
        /// Answered in the notification (handoff-notify): nil when it paired, else why not.
        case elsewhere(HandoffError?)
    }

    /// The terminal's answer, or the dialog's end when the person answered in the notification
    /// instead (both show the code): whichever comes first.
    private func answer(session: Int64, peer: String) -> Answer {
        let answer = Locked<Answer?>(nil)
        let ready = Signals(value: 0)
        @Sendable func settle(_ value: Answer) {
            let first = answer.withLock { current in
                guard current == nil else { return false }
                current = value
                return true
            }
            if first { ready.signal() }
        }
        Threads.start("terminal") { settle(.typed(readLine() ?? "")) }
        let socketPath = client.socketPath
        Threads.start("pairing events") {
            guard let events = try? HandoffClient(socketPath: socketPath), (try? events.subscribe()) != nil else { return }
            while let received = try? events.nextEvent() {
                switch received.event {
                case let .paired(paired, _)? where paired == peer: return settle(.elsewhere(nil))
                case let .pairingEnded(ended, _, _, error)? where ended == session: return settle(.elsewhere(error))
                default: continue
                }
            }
        }
        ready.wait()
        return answer.withLock { $0 } ?? .typed("")
    }

    /// Shows the code, takes the user's answer and reports how pairing with this device ended.
    private func confirm(_ offer: PairingOffer, listening: Bool) throws(HandoffError) -> (paired: Bool, exitCode: Int32) {
        let code = offer.code
        let name = safe(offer.name)
        let shown = String(code.prefix(3)) + " " + String(code.dropFirst(3))
        if !wantsJSON {
            print(listening ? "\(name) (\(offer.peer)) asks to pair." : "Pairing with \(name) (\(offer.peer)).")
            print("Both screens must show the same code:  \(shown)")
            fflush(nil)  // before waiting for the other side: a script reading this sees the code now
        }
        let accept: Bool
        if arguments.flag("yes") {
            accept = true
        } else if let expected = arguments.value("code") {
            accept = expected.filter(\.isNumber) == code
            if !accept { printError("The code is \(shown), not \(expected): declining.") }
        } else {
            print("Do both screens show \(shown)? [y/N] ", terminator: "")
            fflush(nil)
            switch answer(session: offer.session, peer: offer.peer) {
            case let .typed(line):
                accept = ["y", "yes"].contains(line.trimmingSpaces().lowercased())
            case let .elsewhere(error):
                // Answered in the notification: this terminal reports the outcome.
                print("")
                guard let error else {
                    print("Paired with \(name) (\(offer.peer)), confirmed in the notification.")
                    return (true, 0)
                }
                printError("Not paired with \(name) (\(error.code.rawValue)): \(error.message)\nFix: \(error.fix)")
                return (false, ExitCode.failure)
            }
        }
        let result: PairingResult
        do {
            result = try client.pairConfirm(session: offer.session, accept: accept)
        } catch where error.code != .daemonUnavailable {
            // Listening, the next device may still pair: only the last outcome is printed as JSON.
            if wantsJSON && (!listening || arguments.flag("yes")) {
                print(JSONValue.object(["paired": false, "code": .string(code), "peer": .string(offer.peer),
                                        "error": error.json]).prettyPrinted())
            }
            printError("Not paired with \(name) (\(error.code.rawValue)): \(error.message)\nFix: \(error.fix)")
            return (false, ExitCode.failure)
        }
        if wantsJSON {
            print(JSONValue.object(["paired": true, "code": .string(code), "peer": .string(result.peer),
                                    "name": .string(result.name)]).prettyPrinted())
        } else {
            print("Paired with \(name) (\(result.peer)).")
        }
        return (true, 0)
    }

    private func doctor() throws(HandoffError) -> Int32 {
        var report = try client.doctor(peer: arguments.positionals.first)
        // Whether each browser can start the extension's host: checked here, in the user's files.
        let browsers = browserHostFindings()
        if wantsJSON {
            report.browsers = .array(browsers.map(\.json))
            print(report.json.prettyPrinted())
            return report.ok ? 0 : ExitCode.failure
        }
        let subject = report.peer.map { "\(safe(report.host)) and \(safe($0))" } ?? safe(report.host)
        print("Handoff conditions for \(subject):")
        var fixes: [String] = []
        for condition in report.conditions {
            print("  \(condition.code.padded(to: 10))\(condition.status.padded(to: 5))  \(safe(condition.evidence))")
            if condition.status == "fail" || condition.status == "warn", !condition.fix.isEmpty {
                fixes.append("  \(condition.code): \(condition.fix)")
            }
        }
        if let verdict = report.verdict, !ConditionDecision.transportCodes.map(\.rawValue).contains(verdict.code) {
            // Not a transport condition (an offer declined or withdrawn): all six hold, and this is why nothing continues.
            print("\nBut (\(verdict.code)): \(safe(verdict.message))")
            fixes.append("  \(verdict.code): \(verdict.fix)")
        }
        if !fixes.isEmpty { print("\nFix:\n" + fixes.joined(separator: "\n")) }
        let used = browsers.filter { $0.status != "off" }
        if !used.isEmpty {
            print("\nBrowser extension (the focused tab; not one of the six conditions):")
            for finding in used {
                print("  \(finding.browser.padded(to: 14))\(finding.status.padded(to: 5))  \(safe(finding.evidence))")
                if !finding.fix.isEmpty { print("  \(String(repeating: " ", count: 21))Fix: \(finding.fix)") }
            }
        }
        return report.ok ? 0 : ExitCode.failure
    }

    private func browserHostFindings() -> [HostManifestCheck.Finding] {
        let running = Set(((try? client.declarations()) ?? []).filter(\.running).flatMap(\.types))
        let home = ProcessInfo.processInfo.environment["HOME"] ?? String(cString: getpwuid(getuid()).pointee.pw_dir)
        return HostManifestCheck.check(home: home, read: { path in
            FileManager.default.contents(atPath: path).flatMap { $0.count <= 64 * 1024 ? String(decoding: $0, as: UTF8.self) : nil }
        }, exists: { FileManager.default.fileExists(atPath: $0) }, isExecutable: { access($0, X_OK) == 0 },
           connected: { running.contains($0.activityType) })
    }

    private func apps() throws(HandoffError) {
        let apps = try client.declarations()
        if wantsJSON {
            print(JSONValue.array(apps.map(\.json)).prettyPrinted())
            return
        }
        guard !apps.isEmpty else {
            print("No app declares an activity type. Apps declare them with X-Handoff-ActivityTypes in their .desktop file (Docs/APPS.md).")
            return
        }
        printTable([["APP", "RUNNING", "TYPES"]] + apps.map { [safe($0.app), $0.running ? "yes" : "no", $0.types.joined(separator: " ")] })
    }

    private func ownName() throws(HandoffError) -> String {
        try client.identity().name
    }

    private func devices() throws(HandoffError) {
        let devices = try client.devices()
        if wantsJSON {
            print(JSONValue.array(devices.map(\.json)).prettyPrinted())
            return
        }
        guard !devices.isEmpty else {
            print("No paired devices. Pair with 'handoff-peer pair' (see 'handoff-peer pair --help').")
            return
        }
        var rows = [["PEER", "NAME", "IN RANGE", "PAIRED"]]
        for device in devices {
            let paired = Date(timeIntervalSince1970: Double(device.pairedAtMillis) / 1000)
            rows.append([device.peer, safe(device.name), device.inRange ? "yes" : "no",
                         localMinute(paired) + (device.needsPairingAgain ? " (pair again)" : "")])
        }
        printTable(rows)
        if devices.contains(where: \.needsPairingAgain) {
            print("Devices marked (pair again) were paired with an older handoff: run 'handoff-peer pair' with each once more.")
        }
    }

    private func identity() throws(HandoffError) {
        let result = try client.identity()
        if arguments.flag("key") {
            print(result.publicKey)
        } else if wantsJSON {
            print(result.json.prettyPrinted())
        } else {
            print("Device id:  \(result.deviceID)")
            print("Name:       \(safe(result.name))")
            print("Public key: \(result.publicKey)")
        }
    }

    /// Ends only when handoffd goes away, which it says, exiting 69 like any command that cannot reach handoffd.
    private func watch() throws(HandoffError) -> Int32 {
        try client.subscribe()
        while true {
            let next: ReceivedEvent?
            do {
                next = try client.nextEvent()
            } catch {
                next = nil
            }
            guard let received = next else {
                printError("handoffd went away (it stopped, or its socket closed): no more events.\nFix: Start handoffd again ('systemctl --user start handoffd'), then run 'handoff-peer watch' again.")
                return ExitCode.unavailable
            }
            if wantsJSON {
                print(String(decoding: JSONWriter.line(received.json).dropLast(), as: UTF8.self))
            } else {
                let name = received.json["event"]?.stringValue ?? "?"
                let detail = received.event.map(describe) ?? ""
                print([Date().formatted(.iso8601.time(includingFractionalSeconds: false)), name, received.event?.peer ?? "", detail]
                    .filter { !$0.isEmpty }.joined(separator: "  "))
            }
            fflush(nil)
        }
    }

    // MARK: - Formatting

    /// What `watch` shows after an event's name and peer.
    private func describe(_ event: Event) -> String {
        switch event {
        case let .summaryReceived(_, offer): safe(offer.type)
        case let .declined(_, type), let .willContinue(_, _, type, _), let .payloadServed(_, type, _), let .activityEnded(type, _): safe(type)
        case let .continued(continued): safe(continued.activity.type)
        case let .failed(_, _, type, error, _): "\(safe(type))  \(error.code.rawValue)"
        case let .progress(progress):
            "\(safe(progress.type))  " + ProgressDisplay.bar(bytes: progress.bytes, total: progress.total, bytesPerSecond: progress.bytesPerSecond)
        case let .transferWaiting(waiting): "waiting for \(safe(waiting.name)): \(safe(waiting.reason))"
        case let .transferResumed(_, _, fromByte): "resumed at \(ProgressDisplay.mebibytes(fromByte)) MiB"
        case let .pairable(_, name), let .unpaired(_, name): safe(name)
        case let .pairingCode(code): "\(safe(code.name))  \(code.role)  session \(code.session)"
        case let .pairingEnded(session, _, name, error): "\(safe(name))  session \(session)  \(error.code.rawValue)"
        case let .pairingClosed(reason): reason
        case .peerAppeared, .peerLeft, .summaryWithdrawn, .paired, .near, .enabled, .disabled: ""
        }
    }

    /// Strips control characters a peer could use to rewrite the terminal.
    private func safe(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.filter { !Activity.containsUnsafeCharacters(String($0)) }))
    }

    private func age(millis: Int64) -> String {
        let seconds = max(0, millis / 1000)
        if seconds < 60 { return "\(seconds)s" }
        if seconds < 3600 { return "\(seconds / 60)m" }
        return "\(seconds / 3600)h"
    }

    private func printTable(_ rows: [[String]]) {
        let widths = (0..<rows[0].count).map { column in min(48, rows.map { $0[column].count }.max() ?? 0) }
        for row in rows {
            let cells = row.enumerated().map { index, cell in
                let clipped = cell.count > widths[index] ? String(cell.prefix(widths[index] - 1)) + "…" : cell
                return index == row.count - 1 ? clipped : clipped.padded(to: widths[index])
            }
            print(cells.joined(separator: "  "))
        }
    }
}


/// A date as this host's local time to the minute, like "2026-12-02 14:05" (a fixed
/// form: localized formats need full Foundation and ICU).
func localMinute(_ date: Date) -> String {
    var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
    var parts = tm()
    guard localtime_r(&seconds, &parts) != nil else { return "\(date)" }
    func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
    return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday)) \(two(parts.tm_hour)):\(two(parts.tm_min))"
}
