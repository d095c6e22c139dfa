import HandoffCore
import Testing

@Suite struct LocalAPIPathTests {
    typealias Status = LocalAPIPath.DirectoryStatus

    @Test func defaultPaths() {
        #expect(LocalAPIPath.socketPath(environment: ["HANDOFF_SOCKET": "/s"], uid: 5, isClient: true) == "/s")
        #expect(LocalAPIPath.socketPath(environment: ["HANDOFF_SOCKET": "/s"], uid: 5, isClient: false) == "/tmp/handoff-5/handoffd.sock")
        #expect(LocalAPIPath.socketPath(environment: ["XDG_RUNTIME_DIR": "/run/user/5"], uid: 5, isClient: true)
            == "/run/user/5/handoff/handoffd.sock")
        #expect(LocalAPIPath.socketPath(environment: ["XDG_RUNTIME_DIR": "relative"], uid: 5, isClient: true) == "/tmp/handoff-5/handoffd.sock")
        #expect(LocalAPIPath.socketPath(environment: [:], uid: 0, isClient: true) == "/run/handoff/handoffd.sock")
    }

    @Test func directoryOfASocketPath() {
        #expect(LocalAPIPath.directory(of: "/tmp/handoff-5/handoffd.sock") == "/tmp/handoff-5")
        #expect(LocalAPIPath.directory(of: "/handoffd.sock") == "/")
        #expect(LocalAPIPath.directory(of: "handoffd.sock") == ".")
        #expect(LocalAPIPath.directory(of: "run/handoffd.sock") == "run")
    }

    @Test func anOwnerOnlyDirectoryOfThisUserIsAccepted() {
        #expect(throws: Never.self) {
            try LocalAPIPath.checkDirectory("/tmp/handoff-5", Status(kind: .directory, owner: 5, permissions: 0o700), uid: 5)
        }
        #expect(throws: Never.self) {
            try LocalAPIPath.checkDirectory("/tmp/handoff-5", Status(kind: .directory, owner: 5, permissions: 0o500), uid: 5)
        }
    }

    /// Finding 9: another user pre-created /tmp/handoff-UID and captured the victim's publish.
    @Test func aDirectoryOfAnotherUserIsRefusedWithTheFix() {
        let failure = #expect(throws: HandoffError.self) {
            try LocalAPIPath.checkDirectory("/tmp/handoff-5", Status(kind: .directory, owner: 6, permissions: 0o700), uid: 5)
        }
        #expect(failure?.code == .daemonUnavailable)
        #expect(failure?.message == "The local API socket's directory /tmp/handoff-5 belongs to uid 6, not to you (uid 5): another user could be posing as handoffd.")
        #expect(failure?.fix.contains("XDG_RUNTIME_DIR") == true)
    }

    @Test(arguments: [0o755, 0o770, 0o701, 0o1777, 0o707] as [UInt32])
    func aDirectoryOthersCanEnterIsRefused(_ mode: UInt32) {
        let failure = #expect(throws: HandoffError.self) {
            try LocalAPIPath.checkDirectory("/d", Status(kind: .directory, owner: 5, permissions: mode), uid: 5)
        }
        #expect(failure?.message == "The local API socket's directory /d has mode \(String(mode, radix: 8)); others could replace the socket.")
        #expect(failure?.fix == "Run 'chmod 700 /d' and restart handoffd.")
    }

    @Test func linksAndFilesAreRefused() {
        let link = #expect(throws: HandoffError.self) {
            try LocalAPIPath.checkDirectory("/d", Status(kind: .symbolicLink, owner: 5, permissions: 0o777), uid: 5)
        }
        #expect(link?.message.contains("symbolic link") == true)
        let file = #expect(throws: HandoffError.self) {
            try LocalAPIPath.checkDirectory("/d", Status(kind: .other, owner: 5, permissions: 0o700), uid: 5)
        }
        #expect(file?.message.contains("not a directory") == true)
    }

    @Test func aListenerOfAnotherUserIsRefused() {
        #expect(throws: Never.self) { try LocalAPIPath.checkPeer(uid: 5, socketPath: "/s", uid: 5) }
        let failure = #expect(throws: HandoffError.self) { try LocalAPIPath.checkPeer(uid: 6, socketPath: "/s", uid: 5) }
        #expect(failure?.message == "The process listening on /s runs as uid 6, not as you (uid 5); nothing was sent to it.")
    }
}
