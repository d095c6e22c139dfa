import FoundationEssentials
import Glibc
import HandoffCore
import HandoffTransport

/// Which activity types the apps on this host continue: declared on disk in
/// `.desktop` files under the XDG application directories (apps that are not
/// running), and registered at run time over the local API (apps that are).
/// The disk's declarations are cached while `DesktopFileWatcher` watches the
/// directories and read again after it sees a change, so installing an app
/// needs no daemon restart and an accept no directory scan.
struct AppDeclarations {
    struct DiskDeclaration: Sendable {
        var desktopID: String
        var name: String
        var exec: String?
        var types: [String]
    }

    /// Run-time registrations, by local API connection.
    var registered: [ObjectIdentifier: Registration] = [:]

    /// What a connection declared: kept whole, so a `subscribe` that comes after the
    /// `declare` still gets the payloads and the continuation kept for it.
    struct Registration {
        var app: String
        var types: Set<String>
        var desktopID: String?
        var payloads: Bool
    }
    /// The disk's declarations (a reference: read from non-mutating checks on the daemon's actor only).
    let disk = DiskDeclarations()

    /// `$XDG_DATA_HOME/applications`, then each `$XDG_DATA_DIRS/applications` (spec defaults when unset).
    static func applicationDirectories(environment: [String: String] = ProcessInfo.processInfo.environment) -> [String] {
        let home = environment["XDG_DATA_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? (environment["HOME"] ?? passwordHomeDirectory()) + "/.local/share"
        let system = (environment["XDG_DATA_DIRS"].flatMap { $0.isEmpty ? nil : $0 } ?? "/usr/local/share:/usr/share")
            .split(separator: ":").map(String.init).filter { $0.hasPrefix("/") }
        return ([home] + system).map { $0 + "/applications" }
    }

    /// Every `.desktop` file that declares activity types; the first directory wins for a given file name.
    static func scanDisk(directories: [String] = applicationDirectories()) -> [DiskDeclaration] {
        var seen: Set<String> = []
        var found: [DiskDeclaration] = []
        for directory in directories {
            for name in Self.fileNames(in: directory).sorted() where name.hasSuffix(".desktop") && !seen.contains(name) {
                seen.insert(name)
                guard let text = Self.readDesktopFile(directory + "/" + name),
                      let entry = try? DesktopEntry(parsing: text),
                      !entry.isHidden, !entry.activityTypes.isEmpty else { continue }
                found.append(DiskDeclaration(desktopID: name, name: entry.name ?? name, exec: entry.exec, types: entry.activityTypes))
            }
        }
        return found
    }

    /// The names in `directory` (none when it cannot be read): readdir, no per-file lookups.
    static func fileNames(in directory: String) -> [String] {
        guard let handle = opendir(directory) else { return [] }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// A `.desktop` file's text, read through one descriptor: it must be a regular file
    /// (symlinks are followed, as Flatpak exports them) of at most `DesktopEntry.maximumBytes`,
    /// checked on the open file and enforced by reading no more than that.
    static func readDesktopFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, Int(info.st_size) <= DesktopEntry.maximumBytes else { return nil }
        var bytes = [UInt8](repeating: 0, count: DesktopEntry.maximumBytes + 1)
        var count = 0
        while count < bytes.count {
            let got = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + count, $0.count - count) }
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { break }
            count += got
        }
        // Grew past the limit after fstat: not a desktop file.
        guard count <= DesktopEntry.maximumBytes else { return nil }
        return String(decoding: bytes[..<count], as: UTF8.self)
    }

    /// The apps (names) that continue `type`, running ones first.
    func apps(for type: String) -> [String] {
        let running = registered.values.filter { $0.types.contains(type) }.map(\.app).sorted()
        let installed = disk.current().filter { $0.types.contains(type) }.map(\.name)
        return running + installed.filter { !running.contains($0) }
    }

    /// The first running app that declares `type` (it gets the continuation).
    func runningApp(for type: String) -> String? {
        registered.values.filter { $0.types.contains(type) }.map(\.app).sorted().first
    }

    /// The first installed app that declares `type` (the daemon starts it when none runs).
    func installedApp(for type: String) -> DiskDeclaration? {
        disk.current().first { $0.types.contains(type) }
    }

    /// The command line of an `Exec=` value, with the field codes (%u, %f, ...) removed
    /// and quoting honoured (Desktop Entry Specification, "The Exec key").
    static func commandLine(exec: String) -> [String] {
        DesktopEntry.execWords(exec).filter { !($0.count == 2 && $0.hasPrefix("%")) }.map { $0.replacing("%%", with: "%") }
    }

    func allTypes() -> Set<String> {
        Set(registered.values.flatMap(\.types)).union(disk.current().flatMap(\.types))
    }
}

/// The declarations found on disk, scanned again only when the watcher counted a
/// change since the last scan; without a watcher (inotify unavailable), on every read.
final class DiskDeclarations {
    private let scan: () -> [AppDeclarations.DiskDeclaration]
    private var cached: (generation: UInt64, declarations: [AppDeclarations.DiskDeclaration])?
    /// Changes seen by the watcher; nil while nothing watches.
    private var changes: (@Sendable () -> UInt64)?
    private(set) var scans = 0

    init(scan: @escaping () -> [AppDeclarations.DiskDeclaration] = { AppDeclarations.scanDisk() }) {
        self.scan = scan
    }

    /// From now on, cache between changes as `generation` counts them.
    func watch(generation: @escaping @Sendable () -> UInt64) {
        changes = generation
        cached = nil
    }

    func current() -> [AppDeclarations.DiskDeclaration] {
        // Read before scanning: a change during the scan makes the next read scan again.
        let generation = changes?()
        if let generation, let cached, cached.generation == generation { return cached.declarations }
        let found = scan()
        scans += 1
        cached = generation.map { ($0, found) }
        return found
    }
}
