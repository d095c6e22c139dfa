import Foundation
import Glibc
@testable import HandoffDaemon
import HandoffTransport
import HandoffRuntime
import Testing

/// The `.desktop` declarations are scanned once per change, not once per accept,
/// and a directory created after the daemon started is watched through its parent.
@Suite struct DesktopFileWatcherTests {
    private func declaration(_ id: String) -> AppDeclarations.DiskDeclaration {
        .init(desktopID: id, name: id, exec: id, types: ["org.example.\(id)"])
    }

    @Test func theDiskIsScannedAgainOnlyAfterAChange() {
        let changes = Locked<UInt64>(0)
        let found = Locked(["a"])
        let disk = DiskDeclarations(scan: { found.withLock { $0 }.map(declaration) })
        disk.watch { changes.withLock { $0 } }
        #expect(disk.current().map(\.desktopID) == ["a"])
        #expect(disk.current().map(\.desktopID) == ["a"])
        #expect(disk.scans == 1)
        found.withLock { $0 = ["a", "b"] }
        changes.withLock { $0 += 1 }
        #expect(disk.current().map(\.desktopID) == ["a", "b"])
        #expect(disk.current().count == 2)
        #expect(disk.scans == 2)
    }

    @Test func withoutAWatcherEveryReadScans() {
        let disk = DiskDeclarations(scan: { [] })
        _ = disk.current()
        _ = disk.current()
        #expect(disk.scans == 2)
    }

    @Test func aMissingDirectoryIsWatchedThroughItsNearestExistingAncestor() {
        let existing: Set<String> = ["/", "/home", "/home/u", "/usr/share/applications", "/usr/share", "/usr"]
        let plan = DesktopFileWatcher.plan(for: ["/home/u/.local/share/applications", "/usr/share/applications",
                                                 "/usr/local/share/applications"],
                                           isDirectory: existing.contains)
        #expect(plan == [.init(path: "/home/u", waitingFor: ".local"),
                         .init(path: "/usr/share/applications", waitingFor: nil),
                         .init(path: "/usr", waitingFor: "local")])
    }

    @Test func anAncestorMattersOnlyForTheNameOnTheWay() {
        let ancestor = DesktopFileWatcher.Watch(path: "/home/u", waitingFor: ".local")
        #expect(DesktopFileWatcher.matters(ancestor, mask: UInt32(IN_CREATE), name: ".local"))
        #expect(!DesktopFileWatcher.matters(ancestor, mask: UInt32(IN_CREATE), name: "notes.txt"))
        #expect(DesktopFileWatcher.matters(ancestor, mask: UInt32(IN_DELETE_SELF), name: ""))
        let directory = DesktopFileWatcher.Watch(path: "/usr/share/applications", waitingFor: nil)
        #expect(DesktopFileWatcher.matters(directory, mask: UInt32(IN_CLOSE_WRITE), name: "reader.desktop"))
    }

    /// The real watcher: a file written in a directory that did not exist when it started is counted.
    @Test func aDirectoryCreatedLaterIsWatched() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let applications = temp.path + "/share/applications"
        let watcher = try #require(DesktopFileWatcher(directories: [applications], log: Log(level: .error)))
        defer { watcher.stop() }
        let before = watcher.changes()
        try FileManager.default.createDirectory(atPath: applications, withIntermediateDirectories: true)
        #expect(waitUntil { watcher.changes() > before })
        // The directory itself is watched now: a new file counts.
        let counted = watcher.changes()
        try "x".write(toFile: applications + "/reader.desktop", atomically: false, encoding: .utf8)
        #expect(waitUntil { watcher.changes() > counted })
    }

    private func waitUntil(_ condition: () -> Bool) -> Bool {
        for _ in 0..<200 {
            if condition() { return true }
            usleep(10_000)
        }
        return condition()
    }
}

@Suite struct DesktopFileWatcherRaceTests {
    @Test func aDirectoryCreatedWhileTheWatchesArePlacedIsNoticed() {
        // Planned while `later` had no `applications`; it exists by the time the watch is on `later`.
        let watches = [DesktopFileWatcher.Watch(path: "/lab/later", waitingFor: "applications")]
        #expect(DesktopFileWatcher.missedCreation(watches, isDirectory: { $0 == "/lab/later/applications" }))
        #expect(!DesktopFileWatcher.missedCreation(watches, isDirectory: { _ in false }))
        #expect(!DesktopFileWatcher.missedCreation([DesktopFileWatcher.Watch(path: "/lab/later/applications", waitingFor: nil)],
                                                  isDirectory: { _ in true }))
    }
}
