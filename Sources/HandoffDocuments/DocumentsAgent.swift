import FoundationEssentials
import Glibc
import HandoffCore
import HandoffKit
import HandoffRuntime

/// The documents publisher and receiver, in the user's session (Docs/APPS.md,
/// "Documents"). It watches the recently-used list that GTK and KDE apps write:
/// when a person opens or saves a file, that file becomes this host's current
/// activity (publisher "documents"; the most recent action wins against the
/// browser and apps). On the other laptop the same agent declares the type,
/// saves a continued document without ever overwriting a different file, and
/// opens it in the same application. It holds no keys: it speaks the local API.
public final class DocumentsAgent: @unchecked Sendable {
    // @unchecked: `lastOffered` is touched only by the watcher thread; the rest is immutable.
    public struct Configuration: Sendable {
        public var socketPath: String?
        /// The home directory, resolved (no symbolic links).
        public var home: String
        public var listPath: String
        public var settingsPath: String
        public var log: @Sendable (String) -> Void

        public init(socketPath: String?, environment: [String: String], log: @escaping @Sendable (String) -> Void) {
            self.socketPath = socketPath
            let rawHome = environment["HOME"] ?? "/"
            home = Self.resolved(rawHome) ?? rawHome
            let data = environment["XDG_DATA_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? rawHome + "/.local/share"
            listPath = data + "/recently-used.xbel"
            let config = environment["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? rawHome + "/.config"
            settingsPath = config + "/handoff/documents.conf"
            self.log = log
        }

        static func resolved(_ path: String) -> String? {
            guard let pointer = realpath(path, nil) else { return nil }
            defer { free(pointer) }
            return String(cString: pointer)
        }
    }

    public static let publisher = "documents"
    let configuration: Configuration
    private var lastOffered: UInt64 = 0

    public init(configuration: Configuration) {
        self.configuration = configuration
    }

    private func log(_ line: String) { configuration.log(line) }

    /// The user's settings; an unreadable or invalid file is an error (a typo must not leave a folder offered).
    func settings() throws(HandoffError) -> DocumentSettings {
        guard let data = FileManager.default.contents(atPath: configuration.settingsPath) else { return DocumentSettings() }
        return try DocumentSettings.parse(String(decoding: data, as: UTF8.self), home: configuration.home, path: configuration.settingsPath)
    }

    // MARK: - Publishing

    /// Watches the list's directory (GTK replaces the file by rename) and offers each
    /// newly opened or saved document. Documents used before the agent started are not offered.
    public func watch() throws(HandoffError) {
        let directory = String(configuration.listPath[..<(configuration.listPath.lastIndex(of: "/") ?? configuration.listPath.startIndex)])
        let fileName = String(configuration.listPath.split(separator: "/").last ?? "")
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let inotify = inotify_init1(Int32(IN_CLOEXEC))
        guard inotify >= 0 else {
            throw HandoffError(.internal, "Cannot watch \(directory): inotify: \(String(cString: strerror(errno))).",
                               fix: "Raise fs.inotify.max_user_instances, or close programs that hold many inotify instances.")
        }
        defer { close(inotify) }
        guard inotify_add_watch(inotify, directory, UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE)) >= 0 else {
            throw HandoffError(.internal, "Cannot watch \(directory): \(String(cString: strerror(errno))).",
                               fix: "Check that the directory exists and belongs to you.")
        }
        lastOffered = (try? readList())?.map(\.lastUsedMillis).max() ?? 0
        log("watching \(configuration.listPath)")
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(inotify, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                throw HandoffError(.internal, "Reading inotify events failed: \(String(cString: strerror(errno))).", fix: "Restart handoff-documents.")
            }
            guard Self.names(in: buffer[..<count]).contains(fileName) else { continue }
            offerNewest()
        }
    }

    /// The file names in a buffer of inotify events.
    static func names(in events: ArraySlice<UInt8>) -> [String] {
        var names: [String] = []
        var offset = events.startIndex
        let header = MemoryLayout<inotify_event>.size
        while offset + header <= events.endIndex {
            let length = events[offset + 12..<offset + 16].withUnsafeBytes { Int($0.loadUnaligned(as: UInt32.self)) }
            let end = offset + header + length
            guard end <= events.endIndex else { break }
            let name = events[(offset + header)..<end].prefix { $0 != 0 }
            names.append(String(decoding: name, as: UTF8.self))
            offset = end
        }
        return names
    }

    /// Reads the list: a regular file (not a symbolic link), at most RecentlyUsed.maximumFileBytes.
    func readList() throws(HandoffError) -> [RecentlyUsed.Bookmark] {
        let path = configuration.listPath
        var info = stat()
        guard lstat(path, &info) == 0 else { return [] }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw HandoffError(.invalidRequest, "\(path) is not a regular file (a symbolic link or something else): not read.",
                               fix: "Remove it; GTK writes a new one when an app opens a file.")
        }
        guard Int(info.st_size) <= RecentlyUsed.maximumFileBytes else {
            throw HandoffError(.invalidRequest, "\(path) is \(info.st_size >> 20) MiB, more than a recently-used list holds: not read.",
                               fix: "Clear the recent files list (in the file chooser or 'rm \(path)').")
        }
        let bytes = try readRegularFile(path, limit: RecentlyUsed.maximumFileBytes, followLinks: false)
        do {
            return try RecentlyUsed.parse(bytes)
        } catch {
            throw HandoffError(.invalidRequest, "\(path) is not a recently-used list (\(error)): not read.",
                               fix: "Remove it; GTK writes a new one when an app opens a file.")
        }
    }

    func offerNewest() {
        let bookmarks: [RecentlyUsed.Bookmark]
        do throws(HandoffError) {
            bookmarks = try readList()
        } catch {
            return log("not offering a document: \(error.message)")
        }
        guard let newest = bookmarks.max(by: { $0.lastUsedMillis < $1.lastUsedMillis }), newest.lastUsedMillis > lastOffered else { return }
        lastOffered = newest.lastUsedMillis
        do throws(HandoffError) {
            guard let activity = try activity(for: newest) else { return }
            let client = try HandoffClient(socketPath: configuration.socketPath, publisher: Self.publisher)
            let receipt = try client.publish(activity)
            log("offered a document (\(receipt.payloadBytes) bytes, opened in \(newest.application?.name ?? "an unknown app"))")
        } catch {
            log("not offering a document: \(error.message) (\(error.fix))")
        }
        // The document's bytes were read, encoded and handed over (handoffd keeps the offer): what
        // malloc kept of them goes back, or the agent holds a document's size in its heap at rest.
        Malloc.trim()
    }

    /// The activity for a bookmark, or nil (logged) when the policy refuses it.
    func activity(for bookmark: RecentlyUsed.Bookmark) throws(HandoffError) -> Activity? {
        let settings = try settings()
        guard let path = bookmark.path else {
            log("not offering a document: \(DocumentRefusal.notLocal)")
            return nil
        }
        // Resolved first: a link in the home directory must not lead to ~/.ssh or out of home.
        guard let resolved = Configuration.resolved(path) else {
            log("not offering a document: \(DocumentRefusal.notRegularFile)")
            return nil
        }
        let application = bookmark.application
        if let refusal = DocumentPolicy.refusal(path: resolved, home: configuration.home, application: application?.name, settings: settings) {
            log("not offering a document: \(refusal)")
            return nil
        }
        let bytes: [UInt8]
        do throws(HandoffError) {
            bytes = try readRegularFile(resolved, limit: settings.maximumBytes, followLinks: false)
        } catch {
            log("not offering a document: \(error.message)")
            return nil
        }
        guard let relative = DocumentPolicy.relativePath(resolved, home: configuration.home) else { return nil }
        let name = String(relative.split(separator: "/").last ?? "")
        var userInfo: [String: PropertyListValue] = ["path": .string(relative), "bytes": .data(bytes)]
        if let mime = bookmark.mimeType { userInfo["mimeType"] = .string(mime) }
        if let application {
            userInfo["application"] = .string(application.name)
            userInfo["exec"] = .string(application.exec)
        }
        if let device = try? HandoffClient(socketPath: configuration.socketPath, publisher: Self.publisher).status().name {
            userInfo["device"] = .string(device)
        }
        let title = Activity.displayableTitle(application.map { "\(name) in \($0.name)" } ?? name)
        return Activity(type: documentActivityType, title: title, userInfo: userInfo, targetContentIdentifier: nil,
                        webpageURL: nil, expiresAtMillis: nil, sequence: 0)
    }

    /// A regular file's bytes, refusing more than `limit` (checked on the open descriptor, before reading).
    func readRegularFile(_ path: String, limit: Int, followLinks: Bool) throws(HandoffError) -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | (followLinks ? 0 : O_NOFOLLOW))
        guard descriptor >= 0 else {
            throw HandoffError(.invalidRequest, "Cannot open \(path): \(String(cString: strerror(errno))).", fix: "Check the file's permissions.")
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw HandoffError(.invalidRequest, "\(DocumentRefusal.notRegularFile).", fix: "Only regular files are offered.")
        }
        guard Int(info.st_size) <= limit else {
            throw HandoffError(.payloadTooLarge, "\(DocumentRefusal.tooLarge(bytes: Int(info.st_size), limit: limit)).",
                               fix: "Raise max-size-mib in \(configuration.settingsPath) (up to \(DocumentSettings.hardMaximumBytes >> 20)), or share it another way.")
        }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var done = 0
        while done < bytes.count {
            let count = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + done, $0.count - done) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            done += count
        }
        return Array(bytes[..<done])
    }
}
