import Foundation
import HandoffCore

/// Which activity types the apps on this host continue: declared on disk in
/// `.desktop` files under the XDG application directories (apps that are not
/// running), and registered at run time over the local API (apps that are).
/// Read again on every check, so installing an app needs no daemon restart.
struct AppDeclarations {
    struct DiskDeclaration: Sendable {
        var desktopID: String
        var name: String
        var exec: String?
        var types: [String]
    }

    /// Run-time registrations, by local API connection.
    var registered: [ObjectIdentifier: (app: String, types: Set<String>)] = [:]

    /// `$XDG_DATA_HOME/applications`, then each `$XDG_DATA_DIRS/applications` (spec defaults when unset).
    static func applicationDirectories(environment: [String: String] = ProcessInfo.processInfo.environment) -> [String] {
        let home = environment["XDG_DATA_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? (environment["HOME"] ?? NSHomeDirectory()) + "/.local/share"
        let system = (environment["XDG_DATA_DIRS"].flatMap { $0.isEmpty ? nil : $0 } ?? "/usr/local/share:/usr/share")
            .split(separator: ":").map(String.init).filter { $0.hasPrefix("/") }
        return ([home] + system).map { $0 + "/applications" }
    }

    /// Every `.desktop` file that declares activity types; the first directory wins for a given file name.
    static func scanDisk(directories: [String] = applicationDirectories()) -> [DiskDeclaration] {
        var seen: Set<String> = []
        var found: [DiskDeclaration] = []
        for directory in directories {
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { continue }
            for name in names.sorted() where name.hasSuffix(".desktop") && !seen.contains(name) {
                seen.insert(name)
                let path = directory + "/" + name
                guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
                      (attributes[.size] as? Int ?? 0) <= DesktopEntry.maximumBytes,
                      let data = FileManager.default.contents(atPath: path),
                      let entry = try? DesktopEntry(parsing: String(decoding: data, as: UTF8.self)),
                      !entry.isHidden, !entry.activityTypes.isEmpty else { continue }
                found.append(DiskDeclaration(desktopID: name, name: entry.name ?? name, exec: entry.exec, types: entry.activityTypes))
            }
        }
        return found
    }

    /// The apps (names) that continue `type`, running ones first.
    func apps(for type: String) -> [String] {
        let running = registered.values.filter { $0.types.contains(type) }.map(\.app).sorted()
        let installed = Self.scanDisk().filter { $0.types.contains(type) }.map(\.name)
        return running + installed.filter { !running.contains($0) }
    }

    func allTypes() -> Set<String> {
        Set(registered.values.flatMap(\.types)).union(Self.scanDisk().flatMap(\.types))
    }
}
