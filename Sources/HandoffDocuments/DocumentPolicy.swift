import HandoffCore

/// The activity type of a document continued from the recently-used list.
public let documentActivityType = "io.github.handoff.document"

/// What the documents publisher may offer (Docs/APPS.md, "Documents"): the
/// defaults a careful user would choose, and the user's own switches from
/// `~/.config/handoff/documents.conf`. Pure.
public struct DocumentSettings: Equatable, Sendable {
    public var enabled = true
    public var maximumBytes = 16 * 1024 * 1024
    /// Applications (as they register in the list: "Mousepad", "Text Editor") whose files are never offered.
    public var excludedApplications: Set<String> = []
    /// Absolute directories whose files (and their subdirectories') are never offered.
    public var excludedDirectories: [String] = []

    public init() {}

    /// The payload limit: a document above it is refused with this.
    public static let hardMaximumBytes = 48 * 1024 * 1024

    /// `key = value` lines; `#` starts a comment. Unknown keys and bad values are errors
    /// naming the line, so a typo never silently leaves a private folder offered.
    public static func parse(_ text: String, home: String, path: String) throws(HandoffError) -> DocumentSettings {
        var settings = DocumentSettings()
        for (number, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
            guard !line.allSatisfy(\.isWhitespace) else { continue }
            func bad(_ why: String) -> HandoffError {
                HandoffError(.invalidRequest, "\(path), line \(number + 1): \(why)",
                             fix: "Write 'documents = on|off', 'max-size-mib = N' (1 to \(hardMaximumBytes >> 20)), 'exclude-app = NAME' or 'exclude-dir = PATH'.")
            }
            let parts = line.split(separator: "=", maxSplits: 1).map { String($0.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed()) }
            guard parts.count == 2, !parts[1].isEmpty else { throw bad("expected 'key = value'") }
            switch parts[0] {
            case "documents":
                switch parts[1] {
                case "on": settings.enabled = true
                case "off": settings.enabled = false
                default: throw bad("'documents' is 'on' or 'off'")
                }
            case "max-size-mib":
                guard let mib = Int(parts[1]), (1...(hardMaximumBytes >> 20)).contains(mib) else {
                    throw bad("'max-size-mib' is a whole number from 1 to \(hardMaximumBytes >> 20)")
                }
                settings.maximumBytes = mib << 20
            case "exclude-app":
                settings.excludedApplications.insert(parts[1])
            case "exclude-dir":
                var directory = parts[1]
                if directory == "~" || directory.hasPrefix("~/") { directory = home + directory.dropFirst() }
                guard directory.hasPrefix("/") else { throw bad("'exclude-dir' is an absolute path or starts with ~/") }
                settings.excludedDirectories.append(DocumentPolicy.normalized(directory))
            default:
                throw bad("unknown setting '\(parts[0])'")
            }
        }
        return settings
    }
}

/// Why a document is not offered. Each says what a person can check or change.
public enum DocumentRefusal: Equatable, Sendable, CustomStringConvertible {
    case off
    case notLocal
    case outsideHome
    case hidden
    case excludedApplication(String)
    case excludedDirectory(String)
    case notRegularFile
    case tooLarge(bytes: Int, limit: Int)

    public var description: String {
        switch self {
        case .off: "documents are switched off (documents = off)"
        case .notLocal: "it is not a local file"
        case .outsideHome: "it is outside the home directory"
        case .hidden: "it is under a hidden directory or is a hidden file (like ~/.ssh): never offered"
        case let .excludedApplication(name): "files opened in \(name) are excluded (exclude-app)"
        case let .excludedDirectory(path): "files under \(path) are excluded (exclude-dir)"
        case .notRegularFile: "it is not a regular file (a directory, device, or missing)"
        case let .tooLarge(bytes, limit): "it is \(bytes >> 20) MiB, above the \(limit >> 20) MiB limit (max-size-mib)"
        }
    }
}

public enum DocumentPolicy {
    /// Whether the file at `path` (already resolved: no symbolic links left) may be offered.
    public static func refusal(path: String, home: String, application: String?, settings: DocumentSettings) -> DocumentRefusal? {
        guard settings.enabled else { return .off }
        guard let relative = relativePath(path, home: home) else { return .outsideHome }
        guard relativePathIsPlain(relative) else { return .hidden }
        if let application, settings.excludedApplications.contains(application) { return .excludedApplication(application) }
        let normalizedPath = normalized(path)
        if let directory = settings.excludedDirectories.first(where: { normalizedPath.hasPrefix($0 == "/" ? "/" : $0 + "/") }) {
            return .excludedDirectory(directory)
        }
        return nil
    }

    /// `path` below `home`, without the leading slash; nil when it is not below it.
    public static func relativePath(_ path: String, home: String) -> String? {
        let home = normalized(home)
        let path = normalized(path)
        let prefix = home == "/" ? "/" : home + "/"
        guard path.hasPrefix(prefix), path.count > prefix.count else { return nil }
        return String(path.dropFirst(prefix.count))
    }

    /// Components that are neither empty, ".", ".." nor hidden (starting with "."), and no NUL.
    public static func relativePathIsPlain(_ relative: String) -> Bool {
        let components = relative.split(separator: "/", omittingEmptySubsequences: false)
        return !components.isEmpty && components.allSatisfy { !$0.isEmpty && !$0.hasPrefix(".") && !$0.contains("\0") }
    }

    /// Without a trailing slash or doubled slashes.
    static func normalized(_ path: String) -> String {
        let joined = "/" + path.split(separator: "/").joined(separator: "/")
        return joined
    }

    /// Where a continued document is saved on this laptop: the same path under the
    /// home directory when it is free or already holds the same bytes, else a
    /// clearly named copy beside it ("notes (from laptop-a).md", then " 2", " 3" ...).
    /// Never a path that holds different bytes. `state` looks at the file system.
    public enum FileState: Sendable { case absent, sameBytes, different }
    public enum Placement: Equatable, Sendable {
        case write(String)
        case alreadyThere(String)
    }

    public static func placement(relative: String, home: String, from device: String,
                                 state: (String) -> FileState) -> Placement? {
        guard relativePathIsPlain(relative) else { return nil }
        let path = normalized(home) + "/" + relative
        switch state(path) {
        case .absent: return .write(path)
        case .sameBytes: return .alreadyThere(path)
        case .different: break
        }
        let slash = path.lastIndex(of: "/")!
        let directory = path[..<slash]
        let name = path[path.index(after: slash)...]
        let dot = name.lastIndex(of: ".").flatMap { $0 == name.startIndex ? nil : $0 }
        let stem = dot.map { name[..<$0] } ?? name
        let suffix = dot.map { name[$0...] } ?? ""
        let device = String(device.filter { $0 != "/" && $0 != "\0" }.prefix(64))
        for attempt in 1...100 {
            let copy = "\(directory)/\(stem) (from \(device)\(attempt == 1 ? "" : " \(attempt)"))\(suffix)"
            switch state(copy) {
            case .absent: return .write(copy)
            case .sameBytes: return .alreadyThere(copy)
            case .different: continue
            }
        }
        return nil
    }
}
