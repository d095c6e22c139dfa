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

    /// Who gets a continuation of `type`: the first running app that declares it,
    /// else the first installed one (which the daemon then starts).
    func deliveryTarget(for type: String) -> (app: String, running: Bool, exec: String?)? {
        if let running = registered.values.filter({ $0.types.contains(type) }).map(\.app).sorted().first {
            return (running, true, nil)
        }
        return Self.scanDisk().first { $0.types.contains(type) }.map { ($0.name, false, $0.exec) }
    }

    /// The command line of an `Exec=` value, with the field codes (%u, %f, ...) removed
    /// and quoting honoured (Desktop Entry Specification, "The Exec key").
    static func commandLine(exec: String) -> [String] {
        var words: [String] = []
        var current = ""
        var quoted = false
        var escaped = false
        var started = false
        for character in exec {
            if escaped {
                current.append(character)
                escaped = false
            } else if character == "\\" && quoted {
                escaped = true
            } else if character == "\"" {
                quoted.toggle()
                started = true
            } else if character == " " && !quoted {
                if started { words.append(current) }
                current = ""
                started = false
            } else {
                current.append(character)
                started = true
            }
        }
        if started { words.append(current) }
        return words.filter { !($0.count == 2 && $0.hasPrefix("%")) }.map { $0.replacingOccurrences(of: "%%", with: "%") }
    }

    func allTypes() -> Set<String> {
        Set(registered.values.flatMap(\.types)).union(Self.scanDisk().flatMap(\.types))
    }
}
