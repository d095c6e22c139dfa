import HandoffCore

/// What this laptop does with a continued document, decided here from the
/// document's name and bytes and this laptop's own settings: never from what
/// the sending laptop says. The type comes from shared-mime-info (the name's
/// glob, confirmed by the bytes); only document types open (`documentTypes`),
/// and only in this laptop's default application for that type, which must
/// be a document application (not hidden, not a terminal program, not a
/// helper with NoDisplay, one that takes a file). Anything else is saved and
/// not opened. Pure.
public enum DocumentOpening {
    /// The types that open: text, PDF, office documents and images (Docs/APPS.md, "Documents").
    public static let documentTypes: Set<String> = [
        "text/plain", "text/markdown", "text/csv",
        "application/pdf",
        "application/vnd.oasis.opendocument.text", "application/vnd.oasis.opendocument.spreadsheet",
        "application/vnd.oasis.opendocument.presentation", "application/vnd.oasis.opendocument.graphics",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "image/png", "image/jpeg", "image/gif", "image/webp",
    ]

    /// Content that is never opened, whatever the name says: programs, scripts, desktop
    /// entries, installers and packages. A type that is a kind of one of these counts too.
    public static let runnableTypes: Set<String> = [
        "application/x-executable", "application/x-sharedlib", "application/x-pie-executable",
        "application/x-shellscript", "application/x-desktop", "application/x-ms-dos-executable",
        "application/x-msdownload", "application/x-msi", "application/vnd.microsoft.portable-executable",
        "application/java-archive", "application/x-java-archive", "application/vnd.debian.binary-package",
        "application/x-rpm", "application/vnd.appimage", "application/x-iso9660-appimage",
        "application/x-flatpak", "application/vnd.flatpak", "application/vnd.snap",
    ]

    /// Categories that mark an application that is not a document app.
    static let excludedCategories: Set<String> = ["TerminalEmulator", "WebBrowser", "PackageManager", "Archiving", "Compression", "System"]

    public enum Reason: Error, Equatable, Sendable {
        /// The name's type is not a document type (or the name says nothing).
        case notADocumentType(String?)
        /// The bytes are not what the name says (a program named notes.md, a zip named .odt).
        case contentDisagrees(named: String, content: [String])
        /// No document application here opens the type.
        case noApplication(String)
        /// The default application this user chose for the type is not a document app.
        case defaultIsNotADocumentApp(type: String, desktopID: String)

        /// For the notification and the log: why the document was saved and not opened.
        public var sentence: String {
            switch self {
            case let .notADocumentType(type): "its type (\(type ?? "unknown")) is not one that opens by itself"
            case let .contentDisagrees(named, _): "its content is not \(named), as its name says"
            case let .noApplication(type): "no application here opens \(type)"
            case let .defaultIsNotADocumentApp(type, id): "the default application for \(type), \(id), is not a document application"
            }
        }
    }

    public enum Decision: Equatable, Sendable {
        case open(type: String, app: DocumentLaunch.InstalledApp, arguments: [String])
        case saveOnly(type: String?, Reason)
    }

    /// The type of the document named `name` with these bytes, or why it has none that may open.
    public static func type(name: String, bytes: [UInt8], database: MIMEDatabase) -> Result<String, Reason> {
        guard let named = database.typeByName(name), documentTypes.contains(named) else {
            return .failure(.notADocumentType(database.typeByName(name)))
        }
        let content = database.typesByContent(bytes)
        // Whatever else the bytes are, none of it may be a program.
        if let runnable = content.first(where: { isRunnable($0, database) }) {
            return .failure(.contentDisagrees(named: named, content: [runnable]))
        }
        // Text must be text (text/plain's own magic is only byte-order marks). Anything else must
        // carry the magic of the named type, or of its nearest kind that has magic (a .docx is a zip).
        if database.isKind(named, of: "text/plain") {
            return isText(bytes) ? .success(named) : .failure(.contentDisagrees(named: named, content: content))
        }
        guard let witness = ([named] + database.ancestors(of: named)).first(where: { database.hasMagic(for: $0) }),
              content.contains(where: { database.isKind($0, of: witness) }) else {
            return .failure(.contentDisagrees(named: named, content: content))
        }
        return .success(named)
    }

    static func isRunnable(_ type: String, _ database: MIMEDatabase) -> Bool {
        ([type] + database.ancestors(of: type)).contains { runnableTypes.contains($0) }
    }

    /// UTF-8 without NUL bytes or other controls but tab, newline, carriage return and form feed.
    public static func isText(_ bytes: [UInt8]) -> Bool {
        guard String(validating: bytes, as: UTF8.self) != nil else { return false }
        return !bytes.contains { $0 < 0x20 && ![0x09, 0x0A, 0x0C, 0x0D].contains($0) || $0 == 0x7F }
    }

    /// Whether `app` may open documents: an application that takes a file, is neither hidden
    /// nor a NoDisplay helper nor run in a terminal, and is not a browser, terminal or installer.
    public static func isDocumentApp(_ app: DocumentLaunch.InstalledApp) -> Bool {
        let entry = app.entry
        guard !entry.isHidden, entry.fields["NoDisplay"] != "true", entry.fields["Terminal"] != "true",
              entry.fields["Type"] ?? "Application" == "Application", let exec = entry.exec,
              DesktopEntry.execWords(exec).contains(where: { ["%f", "%F", "%u", "%U"].contains($0) }) else { return false }
        return entry.list("Categories").allSatisfy { !excludedCategories.contains($0) }
    }

    /// What to do with a document saved at `path`: open it in this laptop's default document
    /// application for its type, or leave it saved.
    public static func decide(path: String, bytes: [UInt8], database: MIMEDatabase, associations: MimeApps,
                              apps: [DocumentLaunch.InstalledApp]) -> Decision {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        let type: String
        switch Self.type(name: name, bytes: bytes, database: database) {
        case let .success(found): type = found
        case let .failure(reason): return .saveOnly(type: nil, reason)
        }
        // The type, then what it is a kind of that is a document type too (markdown -> plain text).
        let kinds = [type] + database.ancestors(of: type).filter { documentTypes.contains($0) }
        switch associations.handler(for: kinds, apps: apps, usable: isDocumentApp) {
        case let .found(app):
            return .open(type: type, app: app, arguments: DocumentLaunch.arguments(exec: app.entry.exec ?? "", path: path))
        case let .chosenButUnusable(id):
            return .saveOnly(type: type, .defaultIsNotADocumentApp(type: type, desktopID: id))
        case .none:
            return .saveOnly(type: type, .noApplication(type))
        }
    }
}

/// The user's and the system's choices of application per type (freedesktop.org
/// "Association between MIME types and applications" 1.0.1): the `mimeapps.list`
/// files in precedence order, then the applications' own `MimeType=` lines. Pure.
public struct MimeApps: Equatable, Sendable {
    public struct List: Equatable, Sendable {
        public var defaults: [String: [String]] = [:]
        public var added: [String: [String]] = [:]
        public var removed: [String: [String]] = [:]

        public init() {}

        public init(parsing text: String) {
            var group = ""
            for raw in text.split(whereSeparator: \.isNewline).prefix(10_000) {
                let line = raw.trimmingSpaces()
                if line.isEmpty || line.hasPrefix("#") { continue }
                if line.hasPrefix("[") {
                    group = line
                    continue
                }
                guard let equals = line.firstIndex(of: "=") else { continue }
                let type = line[..<equals].trimmingSpaces()
                let ids = line[line.index(after: equals)...].split(separator: ";").map { $0.trimmingSpaces() }.filter { !$0.isEmpty }
                switch group {
                case "[Default Applications]": defaults[type, default: []] += ids
                case "[Added Associations]": added[type, default: []] += ids
                case "[Removed Associations]": removed[type, default: []] += ids
                default: continue
                }
            }
        }
    }

    /// Highest precedence first ($XDG_CONFIG_HOME's, then $XDG_CONFIG_DIRS', then the data dirs').
    public var lists: [List]

    public init(lists: [List]) { self.lists = lists }

    public enum Handler: Equatable, Sendable {
        case found(DocumentLaunch.InstalledApp)
        /// The user's default for the type, installed, but not an app `usable` allows.
        case chosenButUnusable(String)
        case none
    }

    /// For each type in order: the first installed default any list names (a default this user
    /// chose is kept even when unusable: nothing else opens in its place); else the first usable
    /// app that an added association or its own MimeType= line gives, unless a list removed it.
    public func handler(for types: [String], apps: [DocumentLaunch.InstalledApp],
                        usable: (DocumentLaunch.InstalledApp) -> Bool) -> Handler {
        func app(_ id: String) -> DocumentLaunch.InstalledApp? {
            let bare = id.hasSuffix(".desktop") ? String(id.dropLast(".desktop".count)) : id
            return apps.first { $0.desktopID == bare }
        }
        for type in types {
            var removed: Set<String> = []
            for list in lists {
                for id in list.defaults[type] ?? [] where !removed.contains(id) {
                    if let found = app(id) { return usable(found) ? .found(found) : .chosenButUnusable(found.desktopID) }
                }
                removed.formUnion(list.removed[type] ?? [])
            }
            removed = []
            for list in lists {
                for id in list.added[type] ?? [] where !removed.contains(id) {
                    if let found = app(id), usable(found) { return .found(found) }
                }
                removed.formUnion(list.removed[type] ?? [])
            }
            for candidate in apps where candidate.entry.list("MimeType").contains(type) && usable(candidate)
                && !removed.contains(candidate.desktopID + ".desktop") && !removed.contains(candidate.desktopID) {
                return .found(candidate)
            }
        }
        return .none
    }
}
