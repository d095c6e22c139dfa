import Foundation
import Glibc
import HandoffCore
@testable import HandoffDaemon
import Testing

/// `.desktop` files are read through one descriptor, capped at 64 KiB whatever
/// a symlink points to (issue 15, finding 13).
@Suite struct AppDeclarationsTests {
    private let valid = "[Desktop Entry]\nName=Reader\nExec=reader\nX-Handoff-ActivityTypes=org.example.reader.document;\n"

    @Test func aSymlinkToAFileOverTheCapIsNotRead() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let applications = temp.path + "/applications"
        try FileManager.default.createDirectory(atPath: applications, withIntermediateDirectories: true)
        let huge = temp.path + "/huge"
        try (valid + String(repeating: "#", count: DesktopEntry.maximumBytes)).write(toFile: huge, atomically: false, encoding: .utf8)
        #expect(symlink(huge, applications + "/huge.desktop") == 0)
        #expect(AppDeclarations.readDesktopFile(applications + "/huge.desktop") == nil)
        #expect(AppDeclarations.scanDisk(directories: [applications]).isEmpty)
    }

    /// Flatpak exports its .desktop files as symlinks: a small one is read.
    @Test func aSymlinkToASmallFileIsRead() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let applications = temp.path + "/applications"
        try FileManager.default.createDirectory(atPath: applications, withIntermediateDirectories: true)
        try valid.write(toFile: temp.path + "/reader.desktop", atomically: false, encoding: .utf8)
        #expect(symlink(temp.path + "/reader.desktop", applications + "/org.example.Reader.desktop") == 0)
        let found = AppDeclarations.scanDisk(directories: [applications])
        #expect(found.map(\.desktopID) == ["org.example.Reader.desktop"])
        #expect(found.first?.name == "Reader")
    }

    /// Not regular files: a device that never ends, and a FIFO nobody writes (no hang).
    @Test func devicesAndFIFOsAreNotRead() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        #expect(symlink("/dev/zero", temp.path + "/zero.desktop") == 0)
        #expect(AppDeclarations.readDesktopFile(temp.path + "/zero.desktop") == nil)
        #expect(mkfifo(temp.path + "/fifo.desktop", 0o600) == 0)
        #expect(AppDeclarations.readDesktopFile(temp.path + "/fifo.desktop") == nil)
    }
}
