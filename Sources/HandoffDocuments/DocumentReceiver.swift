import FoundationEssentials
import Glibc
import HandoffCore
import HandoffKit
import HandoffTransport

/// Continues a document here: saves its bytes under the home directory (never
/// over a different file) and opens it in the same application when it is
/// installed, else in the default application for its type. HandoffKit calls
/// `continueActivity` exactly once per accept.
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
                return log("cannot save a continued document: \(error.message)")
            }
        }
        var application: String?
        if case let .string(name)? = activity.userInfo["application"] { application = name }
        var exec: String?
        if case let .string(line)? = activity.userInfo["exec"] { exec = line }
        open(path, application: application, exec: exec)
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

    /// The recorded application through this laptop's own .desktop file, else the
    /// default application (gio open, then xdg-open).
    func open(_ path: String, application: String?, exec: String?) {
        let apps = installedApps()
        if let app = DocumentLaunch.match(application: application, exec: exec, in: apps), let line = app.entry.exec {
            let arguments = DocumentLaunch.arguments(exec: line, path: path)
            if spawn(arguments) { return log("opened a continued document in \(app.desktopID)") }
        }
        for opener in [["gio", "open", path], ["xdg-open", path]] where spawn(opener) {
            return log("opened a continued document with \(opener[0]) (no installed app matches the one it was opened in)")
        }
        log("saved a continued document, but nothing here can open it (no matching app, no gio or xdg-open)")
    }

    func installedApps() -> [DocumentLaunch.InstalledApp] {
        let dataHome = environment["XDG_DATA_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? (environment["HOME"] ?? "/") + "/.local/share"
        let dataDirs = (environment["XDG_DATA_DIRS"].flatMap { $0.isEmpty ? nil : $0 } ?? "/usr/local/share:/usr/share").split(separator: ":").map(String.init)
        var apps: [DocumentLaunch.InstalledApp] = []
        var seen: Set<String> = []
        for directory in [dataHome] + dataDirs {
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
