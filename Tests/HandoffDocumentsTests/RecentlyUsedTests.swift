@testable import HandoffDocuments
import HandoffCore
import Testing

/// The list as Debian 12's GTK 3 wrote it when mousepad 0.5.10 opened a file under Xvfb.
let mousepadList = """
<?xml version="1.0" encoding="UTF-8"?>
<xbel version="1.0"
      xmlns:bookmark="http://www.freedesktop.org/standards/desktop-bookmarks"
      xmlns:mime="http://www.freedesktop.org/standards/shared-mime-info"
>
  <bookmark href="file:///tmp/gtkhome/Documents/notes.md" added="2026-12-02T02:57:21.915448Z" modified="2026-12-02T02:57:27.627428Z" visited="2026-12-02T02:57:21.915467Z">
    <desc>Language: ; Encoding: UTF-8; Cursor: 0:0;</desc>
    <info>
      <metadata owner="http://freedesktop.org">
        <mime:mime-type type="text/plain"/>
        <bookmark:groups>
          <bookmark:group>Mousepad</bookmark:group>
        </bookmark:groups>
        <bookmark:applications>
          <bookmark:application name="Mousepad" exec="&apos;mousepad %u&apos;" modified="2026-12-02T02:57:27.627426Z" count="2"/>
        </bookmark:applications>
      </metadata>
    </info>
  </bookmark>
</xbel>
"""

@Suite struct RecentlyUsedTests {
    @Test func readsWhatGTKWrites() throws {
        let bookmarks = try RecentlyUsed.parse(Array(mousepadList.utf8))
        #expect(bookmarks.count == 1)
        let notes = try #require(bookmarks.first)
        #expect(notes.path == "/tmp/gtkhome/Documents/notes.md")
        #expect(notes.mimeType == "text/plain")
        #expect(notes.application == RecentlyUsed.Application(name: "Mousepad", exec: "mousepad %u", modifiedMillis: 1_796_180_247_627))
        #expect(notes.lastUsedMillis == 1_796_180_247_627)
    }

    @Test func timestamps() {
        #expect(RecentlyUsed.timestamp("1970-01-01T00:00:00Z") == 0)
        #expect(RecentlyUsed.timestamp("2026-12-02T02:57:27.627428Z") == 1_796_180_247_627)
        #expect(RecentlyUsed.timestamp("2026-12-02T02:57:27.6Z") == 1_796_180_247_600)
        #expect(RecentlyUsed.timestamp("2000-02-29T12:00:00Z") == 951_825_600_000)
        for bad in ["", "2026-12-02", "2026-12-02T02:57:27", "2026-13-02T02:57:27Z", "2026-12-02T02:57:27+01:00", "x026-12-02T02:57:27Z"] {
            #expect(RecentlyUsed.timestamp(bad) == 0, "\(bad)")
        }
    }

    @Test func fileURIs() {
        #expect(RecentlyUsed.localPath(fileURI: "file:///home/ana/My%20notes.md") == "/home/ana/My notes.md")
        #expect(RecentlyUsed.localPath(fileURI: "file:///home/ana/%C3%A9t%C3%A9.txt") == "/home/ana/été.txt")
        #expect(RecentlyUsed.localPath(fileURI: "file://server/share/a") == nil)
        #expect(RecentlyUsed.localPath(fileURI: "https://example.org/a") == nil)
        #expect(RecentlyUsed.localPath(fileURI: "file:///a%00b") == nil)
        #expect(RecentlyUsed.localPath(fileURI: "file:///a%ZZ") == nil)
        #expect(RecentlyUsed.localPath(fileURI: "file:///a%FF") == nil) // not UTF-8
    }

    @Test func entitiesAndOddMarkup() throws {
        let text = """
        <?xml version="1.0"?><!-- a comment with <bookmark href="file:///x"> -->
        <xbel><bookmark href='file:///home/a/R&amp;D &#x263A;.txt' modified="2026-01-01T00:00:00Z"/>
        <bookmark><![CDATA[ <bookmark href="file:///nope"> ]]></bookmark>
        <bookmark href="file:///home/a/bad&bogus;.txt"></bookmark>
        </xbel>
        """
        let bookmarks = try RecentlyUsed.parse(Array(text.utf8))
        #expect(bookmarks.map(\.path) == ["/home/a/R&D ☺.txt"])
    }

    @Test func refusesWhatIsNotAList() {
        #expect(throws: RecentlyUsed.ParseError.notXBEL) { try RecentlyUsed.parse(Array("not xml at all".utf8)) }
        #expect(throws: RecentlyUsed.ParseError.tooLarge(RecentlyUsed.maximumFileBytes + 1)) {
            try RecentlyUsed.parse([UInt8](repeating: 0x20, count: RecentlyUsed.maximumFileBytes + 1))
        }
    }

    /// Bounded work on garbage: every prefix and a pile of unclosed tags parse or fail, never hang or trap.
    @Test func truncatedAndHostileInput() throws {
        let bytes = Array(mousepadList.utf8)
        for length in stride(from: 0, through: bytes.count, by: 7) { _ = try? RecentlyUsed.parse(Array(bytes[..<length])) }
        let hostile = "<xbel>" + String(repeating: "<bookmark href=\"file:///a\"><bookmark:application name=\"x\" exec=\"y\"/>", count: 20_000)
        let parsed = try RecentlyUsed.parse(Array(hostile.utf8))
        #expect(parsed.count <= RecentlyUsed.maximumBookmarks)
        #expect(parsed.allSatisfy { $0.applications.count <= 64 })
    }
}

@Suite struct DocumentPolicyTests {
    let home = "/home/ana"

    @Test func offersPlainFilesUnderHome() {
        #expect(DocumentPolicy.refusal(path: "/home/ana/Documents/notes.md", home: home, application: "Mousepad", settings: .init()) == nil)
        #expect(DocumentPolicy.refusal(path: "/home/ana/notes.md", home: home + "/", application: nil, settings: .init()) == nil)
    }

    @Test func neverHiddenOrOutsideHome() {
        let settings = DocumentSettings()
        #expect(DocumentPolicy.refusal(path: "/home/ana/.ssh/id_ed25519", home: home, application: nil, settings: settings) == .hidden)
        #expect(DocumentPolicy.refusal(path: "/home/ana/.gnupg/pubring.kbx", home: home, application: nil, settings: settings) == .hidden)
        #expect(DocumentPolicy.refusal(path: "/home/ana/work/.env", home: home, application: nil, settings: settings) == .hidden)
        #expect(DocumentPolicy.refusal(path: "/home/ana/a/../.ssh/x", home: home, application: nil, settings: settings) == .hidden)
        #expect(DocumentPolicy.refusal(path: "/etc/passwd", home: home, application: nil, settings: settings) == .outsideHome)
        #expect(DocumentPolicy.refusal(path: "/home/anabel/notes.md", home: home, application: nil, settings: settings) == .outsideHome)
        #expect(DocumentPolicy.refusal(path: "/home/ana", home: home, application: nil, settings: settings) == .outsideHome)
    }

    @Test func theUsersSwitches() throws {
        let settings = try DocumentSettings.parse("""
        # mine
        exclude-app = Text Editor
        exclude-dir = ~/Private
        max-size-mib = 2
        """, home: home, path: "documents.conf")
        #expect(settings.maximumBytes == 2 << 20)
        #expect(DocumentPolicy.refusal(path: "/home/ana/notes.md", home: home, application: "Text Editor", settings: settings) == .excludedApplication("Text Editor"))
        #expect(DocumentPolicy.refusal(path: "/home/ana/Private/a/b.txt", home: home, application: nil, settings: settings) == .excludedDirectory("/home/ana/Private"))
        #expect(DocumentPolicy.refusal(path: "/home/ana/PrivateNot/b.txt", home: home, application: nil, settings: settings) == nil)
        let off = try DocumentSettings.parse("documents = off\n", home: home, path: "documents.conf")
        #expect(DocumentPolicy.refusal(path: "/home/ana/notes.md", home: home, application: nil, settings: off) == .off)
    }

    @Test func aTypoInTheSettingsIsAnErrorNamingTheLine() {
        #expect(throws: HandoffError.self) { try DocumentSettings.parse("exclude-dri = ~/Private", home: home, path: "d.conf") }
        let error = try? DocumentSettings.parse("documents = on\nmax-size-mib = 0", home: home, path: "d.conf")
        #expect(error == nil)
        do {
            _ = try DocumentSettings.parse("documents = on\nmax-size-mib = 0", home: home, path: "d.conf")
        } catch {
            #expect(error.message.hasPrefix("d.conf, line 2:"))
        }
        #expect(throws: HandoffError.self) { try DocumentSettings.parse("exclude-dir = relative/path", home: home, path: "d.conf") }
    }

    @Test func placementNeverOverwritesADifferentFile() {
        var disk: [String: DocumentPolicy.FileState] = [:]
        let place = { DocumentPolicy.placement(relative: "Documents/notes.md", home: self.home, from: "laptop-a") { disk[$0] ?? .absent } }
        #expect(place() == .write("/home/ana/Documents/notes.md"))
        disk["/home/ana/Documents/notes.md"] = .sameBytes
        #expect(place() == .alreadyThere("/home/ana/Documents/notes.md"))
        disk["/home/ana/Documents/notes.md"] = .different
        #expect(place() == .write("/home/ana/Documents/notes (from laptop-a).md"))
        disk["/home/ana/Documents/notes (from laptop-a).md"] = .different
        #expect(place() == .write("/home/ana/Documents/notes (from laptop-a 2).md"))
        #expect(DocumentPolicy.placement(relative: "Makefile", home: home, from: "a/b") { $0 == "/home/ana/Makefile" ? .different : .absent }
                == .write("/home/ana/Makefile (from ab)"))
        for bad in ["../etc/passwd", ".ssh/authorized_keys", "a/../../b", "/abs", "", "a//b", "a/.hidden"] {
            #expect(DocumentPolicy.placement(relative: bad, home: home, from: "x") { _ in .absent } == nil, "\(bad)")
        }
    }
}

@Suite struct DocumentLaunchTests {
    func app(_ id: String, _ text: String) throws -> DocumentLaunch.InstalledApp {
        DocumentLaunch.InstalledApp(desktopID: id, entry: try DesktopEntry(parsing: "[Desktop Entry]\nType=Application\n" + text))
    }

    @Test func fieldCodes() {
        #expect(DocumentLaunch.arguments(exec: "mousepad %U", path: "/home/ana/My notes.md") == ["mousepad", "file:///home/ana/My%20notes.md"])
        #expect(DocumentLaunch.arguments(exec: "\"/opt/My App/app\" --open %f %i 100%%", path: "/h/a") == ["/opt/My App/app", "--open", "/h/a", "100%"])
    }
}
