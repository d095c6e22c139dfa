import FoundationEssentials
import Glibc
import HandoffCore
import HandoffDBus
import HandoffKit
import HandoffTransport

/// Continues a document here: saves its bytes under the home directory (never
/// over a different file) and opens it only when it is a document type and this
/// laptop's default application for that type is a document app
/// (`DocumentOpening`); what the sender says about its application is not read.
/// HandoffKit calls `continueActivity` exactly once per accept this user made.
final class DocumentReceiver: ContinuationHandler, @unchecked Sendable {
    // @unchecked: immutable after init.
    let configuration: DocumentsAgent.Configuration
    let environment: [String: String]

    init(configuration: DocumentsAgent.Configuration, environment: [String: String]) {
        self.configuration = configuration
        self.environment = environment
    }

    private func log(_ line: String) { configuration.log(line) }

    func willContinue(activityType: String) {}

    func didFailToContinue(activityType: String, error: HandoffError) {
        log("a document was not continued: \(error.code.rawValue)")
    }

    func continueActivity(_ activity: Activity) {
        guard case let .string(relative)? = activity.userInfo["path"], case let .data(bytes)? = activity.userInfo["bytes"],
              bytes.count <= DocumentSettings.hardMaximumBytes else {
            return log("a continued document had no path or bytes: ignored")
        }
        let device: String
        if case let .string(name)? = activity.userInfo["device"], !name.isEmpty { device = name } else { device = "another laptop" }
        let home = configuration.home
        guard DocumentPolicy.relativePathIsPlain(relative), let placement = DocumentPolicy.placement(
            relative: relative, home: home, from: device, state: { self.state(of: $0, comparedWith: bytes) }) else {
            return log("a continued document's path is not a plain path under the home directory: not saved")
        }
        let path: String
        switch placement {
        case let .alreadyThere(existing):
            path = existing
            log("continued a document already here with the same bytes (\(bytes.count) bytes)")
        case let .write(destination):
            do throws(HandoffError) {
                try write(bytes, to: destination)
                path = destination
                log("saved a continued document (\(bytes.count) bytes)")
            } catch {
                // The user asked for it (Continue): say why it is not there; nothing partial is left.
                notify(summary: "Document from \(device) not saved", body: error.message + (error.fix.isEmpty ? "" : " " + error.fix))
                // Not the message: it names the file, and logs never carry a document's name.
                return log("cannot save a continued document (\(error.code.rawValue)): the notification says why")
            }
        }
        // The sender's "application" and "exec" are not read: this laptop decides what opens it.
        open(path, bytes: bytes, from: device)
    }

    /// What is at `path` now, compared with the bytes to save. A symbolic link or anything
    /// but a regular file counts as different: it is never written through.
    func state(of path: String, comparedWith bytes: [UInt8]) -> DocumentPolicy.FileState {
        var info = stat()
        guard lstat(path, &info) == 0 else { return errno == ENOENT ? .absent : .different }
        guard info.st_mode & S_IFMT == S_IFREG, Int(info.st_size) == bytes.count else { return .different }
        guard let existing = FileManager.default.contents(atPath: path) else { return .different }
        return Array(existing) == bytes ? .sameBytes : .different
    }

    /// Into a temporary file beside it, then linked into place: link(2) fails rather than
    /// replace a file that appeared meanwhile. Missing directories are created (0700),
    /// never through a symbolic link.
    func write(_ bytes: [UInt8], to path: String) throws(HandoffError) {
        let home = configuration.home
        guard let relative = DocumentPolicy.relativePath(path, home: home) else {
            throw HandoffError(.invalidRequest, "\(path) is not under \(home).", fix: "")
        }
        var directory = home
        for component in relative.split(separator: "/").dropLast() {
            directory += "/" + component
            var info = stat()
            if lstat(directory, &info) == 0 {
                guard info.st_mode & S_IFMT == S_IFDIR else {
                    throw HandoffError(.storage, "\(directory) is not a directory (or is a symbolic link).", fix: "Move it away, then continue again.")
                }
            } else if mkdir(directory, 0o700) != 0 {
                throw HandoffError(.storage, "Cannot create \(directory): \(String(cString: strerror(errno))).", fix: "Check the permissions of its parent.")
            }
        }
        var template = Array((directory + "/.handoff-XXXXXX").utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else {
            throw HandoffError(.storage, "Cannot create a file in \(directory): \(String(cString: strerror(errno))).", fix: "Check free space and permissions.")
        }
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) // not inherited by an app started meanwhile
        let temporary = String(cString: template)
        defer { unlink(temporary) }
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + written, $0.count - written) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                close(descriptor)
                throw HandoffError(.storage, "Cannot write \(path): \(String(cString: strerror(errno))).", fix: "Check free space.")
            }
            written += count
        }
        fchmod(descriptor, 0o644 & ~currentUmask())
        let synced = fsync(descriptor) == 0
        close(descriptor)
        guard synced, link(temporary, path) == 0 else {
            throw HandoffError(.storage, "Cannot put the document at \(path): \(String(cString: strerror(errno))).", fix: "Continue it again.")
        }
    }

    private func currentUmask() -> mode_t {
        let mask = umask(0o022)
        umask(mask)
        return mask
    }

    /// Opens the saved document in this laptop's default document application for its type, or
    /// leaves it saved (DocumentOpening decides); either way a notification names the local path
    /// and the application, before anything starts.
    func open(_ path: String, bytes: [UInt8], from device: String) {
        let decision = DocumentOpening.decide(path: path, bytes: bytes, database: mimeDatabase(), associations: mimeApps(),
                                              apps: installedApps())
        let shown = configuration.home == "/" ? path : path.replacing(configuration.home + "/", with: "~/", maxReplacements: 1)
        switch decision {
        case let .open(type, app, arguments):
            let name = app.entry.name ?? app.desktopID
            notify(summary: "Document from \(device)", body: "Saved as \(shown) and opened in \(name) (\(type)).")
            if spawn(arguments) { return log("opened a continued document (\(type)) in \(app.desktopID)") }
            log("cannot start \(app.desktopID) for a continued document")
        case let .saveOnly(type, reason):
            notify(summary: "Document from \(device)", body: "Saved as \(shown), not opened: \(reason.sentence).")
            log("saved a continued document (\(type ?? "no document type")) without opening it: \(Self.logReason(reason))")
        }
    }

    /// The log carries types and application ids, never the document's name.
    static func logReason(_ reason: DocumentOpening.Reason) -> String {
        switch reason {
        case .notADocumentType: "its name's type is not a document type"
        case let .contentDisagrees(_, content): "its bytes are \(content.first ?? "of no known type"), not what its name says"
        case let .noApplication(type): "no document application here opens \(type)"
        case let .defaultIsNotADocumentApp(type, id): "the default for \(type), \(id), is not a document application"
        }
    }

    /// The notification server on the session bus; without one the document is still saved
    /// (and opened as decided): the log says so.
    func notify(summary: String, body: String) {
        do throws(BusError) {
            let bus = try BusConnection.openUser()
            let (name, path) = ("org.freedesktop.Notifications", "/org/freedesktop/Notifications")
            let capabilities = try bus.callBlocking(try bus.methodCall(name, path, name, "GetCapabilities"), timeoutMillis: 3_000)
            // Escaped only where the server reads markup; elsewhere "&amp;" would show as such.
            let markup = capabilities.first?.strings.contains("body-markup") == true
            let text = { (line: String) in markup ? NotificationMarkup.escape(NotificationMarkup.clean(line)) : NotificationMarkup.clean(line) }
            let call = try bus.methodCall(name, path, name, "Notify") { (message: inout MessageWriter) throws(BusError) in
                try message.string("Handoff")
                try message.uint32(0)
                try message.string("")
                try message.string(NotificationMarkup.clean(summary))
                try message.string(text(body))
                try message.strings([])
                try message.container("a", "{sv}") { (_: inout MessageWriter) throws(BusError) in }
                try message.int32(10_000)
            }
            _ = try bus.callBlocking(call, timeoutMillis: 3_000)
        } catch {
            log("no notification for a continued document: \(error)")
        }
    }

    /// shared-mime-info from each data directory, highest precedence first.
    func mimeDatabase() -> MIMEDatabase {
        var database = MIMEDatabase()
        for directory in dataDirectories() {
            let mime = directory + "/mime/"
            database.add(globs2: contents(mime + "globs2"), magic: contents(mime + "magic"),
                         subclasses: contents(mime + "subclasses"), aliases: contents(mime + "aliases"))
        }
        return database
    }

    /// The mimeapps.list files in the specification's order: desktop-specific before general,
    /// config before data directories.
    func mimeApps() -> MimeApps {
        let home = environment["HOME"] ?? "/"
        let configHome = environment["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? home + "/.config"
        let configDirs = (environment["XDG_CONFIG_DIRS"].flatMap { $0.isEmpty ? nil : $0 } ?? "/etc/xdg").split(separator: ":").map(String.init)
        let desktops = (environment["XDG_CURRENT_DESKTOP"] ?? "").split(separator: ":").map { $0.lowercased() }
        var files: [String] = []
        for directory in [configHome] + configDirs + dataDirectories().map({ $0 + "/applications" }) {
            files += desktops.map { directory + "/\($0)-mimeapps.list" } + [directory + "/mimeapps.list"]
        }
        return MimeApps(lists: files.compactMap { contents($0) }.map { MimeApps.List(parsing: String(decoding: $0, as: UTF8.self)) })
    }

    func dataDirectories() -> [String] {
        let dataHome = environment["XDG_DATA_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? (environment["HOME"] ?? "/") + "/.local/share"
        let dataDirs = (environment["XDG_DATA_DIRS"].flatMap { $0.isEmpty ? nil : $0 } ?? "/usr/local/share:/usr/share").split(separator: ":").map(String.init)
        return [dataHome] + dataDirs
    }

    private func contents(_ path: String) -> [UInt8]? {
        guard let data = FileManager.default.contents(atPath: path), data.count <= MIMEDatabase.maximumFileBytes else { return nil }
        return Array(data)
    }

    func installedApps() -> [DocumentLaunch.InstalledApp] {
        var apps: [DocumentLaunch.InstalledApp] = []
        var seen: Set<String> = []
        for directory in dataDirectories() {
            let folder = directory + "/applications"
            for name in ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted() where name.hasSuffix(".desktop") {
                let id = String(name.dropLast(".desktop".count))
                guard !seen.contains(id), let data = FileManager.default.contents(atPath: folder + "/" + name),
                      data.count <= DesktopEntry.maximumBytes, let entry = try? DesktopEntry(parsing: String(decoding: data, as: UTF8.self)) else { continue }
                seen.insert(id) // the first directory that has an id wins (XDG)
                apps.append(DocumentLaunch.InstalledApp(desktopID: id, entry: entry))
            }
        }
        return apps
    }

    /// Starts a program in its own session, not waited for (SIGCHLD is ignored, so it is reaped).
    func spawn(_ arguments: [String]) -> Bool {
        guard let program = arguments.first else { return false }
        return (try? ChildProcess.spawn(program, arguments: Array(arguments.dropFirst()), environment: environment,
                                        newSession: true)) != nil
    }
}
