import FoundationEssentials
import HandoffCore
@testable import HandoffDocuments
import Testing

/// What a continued document is and what opens it are decided here, from Debian's own
/// shared-mime-info and this laptop's desktop entries, never from what the peer says
/// (review, round three, item 1).
@Suite struct DocumentOpeningTests {
    static let database: MIMEDatabase = {
        var database = MIMEDatabase()
        let read = { (name: String) in FileManager.default.contents(atPath: "/usr/share/mime/" + name).map { Array($0) } }
        database.add(globs2: read("globs2"), magic: read("magic"), subclasses: read("subclasses"), aliases: read("aliases"))
        return database
    }()

    static func app(_ id: String, _ text: String) -> DocumentLaunch.InstalledApp {
        DocumentLaunch.InstalledApp(desktopID: id, entry: try! DesktopEntry(parsing: "[Desktop Entry]\nType=Application\n" + text))
    }

    static let mousepad = app("org.xfce.mousepad", "Name=Mousepad\nExec=mousepad %U\nMimeType=text/plain;\nCategories=Utility;TextEditor;GTK;")
    static let vim = app("vim", "Name=Vim\nExec=vim %F\nTerminal=true\nMimeType=text/plain;application/x-shellscript;\nCategories=Utility;TextEditor;")
    static let wine = app("wine", "Name=Wine\nExec=wine start /unix %f\nNoDisplay=true\nMimeType=application/x-ms-dos-executable;text/plain;")
    static let viewer = app("org.gnome.Evince", "Name=Document Viewer\nExec=evince %U\nMimeType=application/pdf;\nCategories=GNOME;GTK;Office;Viewer;")
    static let apps = [vim, wine, mousepad, viewer]

    static let elf: [UInt8] = [0x7F, 0x45, 0x4C, 0x46, 2, 1, 1, 0] + [UInt8](repeating: 0, count: 8) + [3, 0, 0x3E, 0] + [UInt8](repeating: 0, count: 100)
    static let markdown = Array("# Notes\n\nChapter 3: atomics.\n".utf8)

    func decide(_ path: String, _ bytes: [UInt8], lists: [MimeApps.List] = [], apps: [DocumentLaunch.InstalledApp] = Self.apps) -> DocumentOpening.Decision {
        DocumentOpening.decide(path: path, bytes: bytes, database: Self.database, associations: MimeApps(lists: lists), apps: apps)
    }

    @Test func theDatabaseIsDebians() {
        #expect(Self.database.typeByName("notes.md") == "text/markdown")
        #expect(Self.database.typeByName("report.PDF") == "application/pdf")
        #expect(Self.database.typeByName("x.desktop") == "application/x-desktop")
        #expect(Self.database.typesByContent(Self.elf).contains { Self.database.isKind($0, of: "application/x-sharedlib") || Self.database.isKind($0, of: "application/x-executable") })
        #expect(Self.database.isKind("application/x-shellscript", of: "application/x-executable"))
        #expect(Self.database.isKind("text/markdown", of: "text/plain"))
    }

    @Test func aMarkdownFileOpensInTheLocalTextEditorWhateverThePeerNamed() throws {
        guard case let .open(type, app, arguments) = decide("/home/ana/Documents/notes.md", Self.markdown) else {
            Issue.record("not opened")
            return
        }
        #expect(type == "text/markdown")
        // vim is a terminal program and wine a NoDisplay helper: neither is a document app.
        #expect(app.desktopID == "org.xfce.mousepad")
        #expect(arguments == ["mousepad", "file:///home/ana/Documents/notes.md"])
    }

    /// The review's repro: application "wine" and a path ending in .exe.
    @Test func anExecutableIsSavedAndNeverOpened() {
        #expect(decide("/home/ana/Documents/notes.md.exe", Self.elf) == .saveOnly(type: nil, .notADocumentType("application/x-ms-dos-executable")))
        guard case .saveOnly(nil, .contentDisagrees) = decide("/home/ana/Documents/notes.md", Self.elf) else {
            Issue.record("a program named notes.md was not refused")
            return
        }
    }

    @Test(arguments: ["#!/bin/sh\nrm -rf ~\n", "#!/usr/bin/env python3\nimport os\n", "[Desktop Entry]\nType=Application\nExec=sh -c evil\n"])
    func scriptsAndDesktopEntriesNamedAsTextAreNotOpened(_ text: String) {
        for name in ["notes.md", "notes.txt"] {
            guard case .saveOnly(nil, .contentDisagrees) = decide("/home/ana/\(name)", Array(text.utf8)) else {
                Issue.record("\(name) holding \(text.prefix(12)) was not refused")
                continue
            }
        }
    }

    @Test(arguments: ["x.sh", "x.desktop", "x.jar", "x.deb", "x.zip", "x.tar.gz", "x.AppImage", "x.html", "x.svg", "x"])
    func namesOfOtherTypesAreNotOpened(_ name: String) {
        guard case .saveOnly(nil, .notADocumentType) = decide("/home/ana/" + name, Self.markdown) else {
            Issue.record("\(name) was not refused")
            return
        }
    }

    @Test func aZipNamedAsAnOfficeDocumentIsNotOpened() {
        // A zip whose first entry is not "mimetype": not an OpenDocument file.
        let zip: [UInt8] = Array("PK\u{3}\u{4}".utf8) + [UInt8](repeating: 0, count: 26) + Array("evil.sh".utf8) + [UInt8](repeating: 0, count: 64)
        guard case .saveOnly(nil, .contentDisagrees) = decide("/home/ana/report.odt", zip) else {
            Issue.record("a zip named .odt was not refused")
            return
        }
    }

    @Test func aPDFOpensInTheViewerAndRealBytesAreChecked() {
        let pdf = Array("%PDF-1.7\n%\u{E2}\u{E3}\n1 0 obj\n".utf8)
        guard case let .open(_, app, _) = decide("/home/ana/paper.pdf", pdf) else {
            Issue.record("a PDF was not opened")
            return
        }
        #expect(app.desktopID == "org.gnome.Evince")
        guard case .saveOnly(nil, .contentDisagrees) = decide("/home/ana/paper.pdf", Self.markdown) else {
            Issue.record("text named .pdf was opened")
            return
        }
    }

    @Test func theUsersDefaultWinsAndAnUnusableDefaultOpensNothing() {
        let editor = Self.app("org.gnome.TextEditor", "Name=Text Editor\nExec=gnome-text-editor %U\nMimeType=text/plain;text/markdown;")
        let chosen = MimeApps.List(parsing: "[Default Applications]\ntext/markdown=org.gnome.TextEditor.desktop\n")
        guard case let .open(_, app, _) = decide("/home/ana/notes.md", Self.markdown, lists: [chosen], apps: Self.apps + [editor]) else {
            Issue.record("not opened")
            return
        }
        #expect(app.desktopID == "org.gnome.TextEditor")
        let terminal = MimeApps.List(parsing: "[Default Applications]\ntext/markdown=vim.desktop;\n")
        #expect(decide("/home/ana/notes.md", Self.markdown, lists: [terminal])
            == .saveOnly(type: "text/markdown", .defaultIsNotADocumentApp(type: "text/markdown", desktopID: "vim")))
        let removed = MimeApps.List(parsing: "[Removed Associations]\ntext/plain=org.xfce.mousepad.desktop\n")
        #expect(decide("/home/ana/notes.txt", Array("plain\n".utf8), lists: [removed]) == .saveOnly(type: "text/plain", .noApplication("text/plain")))
    }

    @Test func noDocumentAppMeansSavedOnly() {
        #expect(decide("/home/ana/notes.md", Self.markdown, apps: [Self.vim, Self.wine]) == .saveOnly(type: "text/markdown", .noApplication("text/markdown")))
    }

    @Test func textMustBeText() {
        #expect(DocumentOpening.isText(Array("héllo\tworld\r\n".utf8)))
        #expect(!DocumentOpening.isText([0x68, 0x00, 0x69]))
        #expect(!DocumentOpening.isText([0xFF, 0xFE, 0x41]))
        #expect(!DocumentOpening.isText(Array("a\u{1B}[31mred".utf8)))
    }

    @Test func hostileMagicAndListsEndTheParseNotTheAgent() {
        var database = MIMEDatabase()
        database.add(globs2: Array("50:text/plain:*.txt\n:::\n99\n".utf8), magic: Array("MIME-Magic\0\n[50:a/b]\n>0=\u{FF}\u{FF}x".utf8),
                     subclasses: Array("one\n".utf8), aliases: nil)
        #expect(database.typeByName("a.txt") == "text/plain")
        #expect(database.typesByContent(Array("x".utf8)).isEmpty)
        _ = MimeApps.List(parsing: "[Default Applications]\n=\n==;;\ntext/plain\n")
    }
}
