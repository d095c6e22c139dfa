import Foundation
import Glibc
import HandoffCore
import HandoffCrypto
@testable import HandoffDaemon
import Testing

/// A fresh directory under /tmp; each test removes it with `defer { temp.remove() }`.
final class TemporaryDirectory {
    let path: String

    init() {
        var template = Array((NSTemporaryDirectory() + "/handoff-tests-XXXXXX").utf8CString)
        let created = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(created != nil, "mkdtemp failed: \(errno)")
        path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Called from a `defer`, which also keeps the directory alive until the test is done.
    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }

    func contents(of directory: String? = nil) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory ?? path)) ?? []).sorted()
    }
}

func permissions(_ path: String) -> mode_t? {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    return info.st_mode & 0o7777
}

func fileBytes(_ path: String) -> [UInt8]? {
    FileManager.default.contents(atPath: path).map { [UInt8]($0) }
}

/// Owner-only, as handoffd writes its state files; tests of looser modes chmod afterwards.
func writeFile(_ path: String, _ bytes: [UInt8]) {
    precondition(FileManager.default.createFile(atPath: path, contents: Data(bytes), attributes: [.posixPermissions: 0o600]))
}

@Suite struct StateDirectoryTests {
    private let rfcSeedHex = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"

    @Test func prepareCreatesAnOwnerOnlyDirectory() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let state = StateDirectory(path: temp.path + "/state")
        try state.prepare()
        #expect(permissions(state.path) == 0o700)
        // Idempotent.
        try state.prepare()
        #expect(permissions(state.path) == 0o700)
    }

    @Test func prepareCreatesMissingParents() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let state = StateDirectory(path: temp.path + "/a/b/handoff")
        try state.prepare()
        #expect(permissions(state.path) == 0o700)
    }

    @Test func prepareTightensALooseDirectory() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let path = temp.path + "/loose"
        #expect(mkdir(path, 0o755) == 0)
        #expect(chmod(path, 0o755) == 0)
        try StateDirectory(path: path).prepare()
        #expect(permissions(path) == 0o700)
    }

    @Test func prepareRefusesAFile() {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let path = temp.path + "/file"
        writeFile(path, [1])
        let failure = #expect(throws: HandoffError.self) { try StateDirectory(path: path).prepare() }
        #expect(failure?.code == .storage)
        #expect(fileBytes(path) == [1])
    }

    @Test func identityIsCreatedOnceOwnerOnlyAndLoadsAgain() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let state = StateDirectory(path: temp.path + "/state")
        try state.prepare()
        let (created, wasCreated) = try state.loadOrCreateIdentity()
        #expect(wasCreated)
        #expect(permissions(state.identityPath) == 0o600)
        #expect(permissions(state.path) == 0o700)
        let text = try #require(fileBytes(state.identityPath).map { String(decoding: $0, as: UTF8.self) })
        #expect(text == "handoff-identity-v1\nseed \(Hex.encode(created.seed))\n")

        let (loaded, loadedCreated) = try state.loadOrCreateIdentity()
        #expect(!loadedCreated)
        #expect(loaded.publicKey == created.publicKey)
        #expect(loaded.seed == created.seed)
        #expect(temp.contents(of: state.path) == ["identity"])
    }

    @Test func identityFileFormatIsReadable() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let state = StateDirectory(path: temp.path)
        writeFile(state.identityPath, Array("handoff-identity-v1\nseed \(rfcSeedHex)\n".utf8))
        let (identity, created) = try state.loadOrCreateIdentity()
        #expect(!created)
        #expect(identity.publicKey.hex == "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
        // Upper-case hex and a missing final newline are accepted too.
        let relaxed = try StateDirectory.parseIdentity(Array("handoff-identity-v1\nseed \(rfcSeedHex.uppercased())".utf8), file: "x")
        #expect(relaxed.publicKey == identity.publicKey)
    }

    @Test(arguments: [
        Array("".utf8),
        Array("garbage".utf8),
        [0xFF, 0xFE, 0x00, 0x01],
        Array("handoff-identity-v2\nseed 9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60\n".utf8),
        Array("seed 9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60\n".utf8),
        Array("handoff-identity-v1\nseed 9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f\n".utf8),
        Array("handoff-identity-v1\nseed 9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f6000\n".utf8),
        Array("handoff-identity-v1\nseed 9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f6\n".utf8),
        Array("handoff-identity-v1\nseed zz61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60\n".utf8),
        Array("handoff-identity-v1\nkey 9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60\n".utf8),
        Array("handoff-identity-v1\nseed 9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60\nextra\n".utf8),
        Array("handoff-identity-v1\n".utf8),
    ] as [[UInt8]])
    func corruptIdentityThrowsAndIsLeftAlone(_ bytes: [UInt8]) throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let state = StateDirectory(path: temp.path)
        try state.prepare()
        writeFile(state.identityPath, bytes)
        let failure = #expect(throws: HandoffError.self) { try state.loadOrCreateIdentity() }
        #expect(failure?.code == .identity)
        #expect(failure?.message == "The identity file \(state.identityPath) is corrupt.")
        #expect(fileBytes(state.identityPath) == bytes)
        #expect(temp.contents() == ["identity"])
    }

    @Test func oversizedStateFileIsRefused() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let state = StateDirectory(path: temp.path)
        let big = [UInt8](repeating: 0x41, count: (1 << 20) + 1)
        writeFile(state.identityPath, big)
        let failure = #expect(throws: HandoffError.self) { try state.loadOrCreateIdentity() }
        #expect(failure?.code == .storage)
        #expect(fileBytes(state.identityPath)?.count == big.count)
    }

    @Test func unreadableIdentityIsAStorageErrorNotANewIdentity() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let state = StateDirectory(path: temp.path)
        // A directory where the file should be: open() succeeds, read() fails with EISDIR.
        #expect(mkdir(state.identityPath, 0o700) == 0)
        let failure = #expect(throws: HandoffError.self) { try state.loadOrCreateIdentity() }
        #expect(failure?.code == .storage)
    }

    @Test func readReturnsNilOnlyForMissingFiles() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let state = StateDirectory(path: temp.path)
        #expect(try state.read(temp.path + "/missing") == nil)
        writeFile(temp.path + "/empty", [])
        #expect(try state.read(temp.path + "/empty") == [])
        let bytes = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        writeFile(temp.path + "/multi-chunk", bytes)
        #expect(try state.read(temp.path + "/multi-chunk") == bytes)
    }

    @Test func writeAtomicallyReplacesAndLeavesNoTemporaryFile() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let state = StateDirectory(path: temp.path)
        let file = temp.path + "/data"
        try state.writeAtomically([1, 2, 3], to: file)
        #expect(fileBytes(file) == [1, 2, 3])
        #expect(permissions(file) == 0o600)
        #expect(temp.contents() == ["data"])
        try state.writeAtomically(Array(repeating: 9, count: 100_000), to: file)
        #expect(fileBytes(file) == Array(repeating: 9, count: 100_000))
        try state.writeAtomically([], to: file)
        #expect(fileBytes(file) == [])
        #expect(temp.contents() == ["data"])
    }

    @Test func failedWriteLeavesNoTemporaryFileAndKeepsTheOldOne() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let state = StateDirectory(path: temp.path)
        // The rename cannot replace a non-empty directory.
        let target = temp.path + "/target"
        #expect(mkdir(target, 0o700) == 0)
        writeFile(target + "/inside", [5])
        let failure = #expect(throws: HandoffError.self) { try state.writeAtomically([1], to: target) }
        #expect(failure?.code == .storage)
        #expect(failure?.message.contains("(rename)") == true)
        #expect(temp.contents() == ["target"])
        #expect(fileBytes(target + "/inside") == [5])
        // A directory that does not exist: the open fails, nothing is left behind.
        let missing = #expect(throws: HandoffError.self) { try state.writeAtomically([1], to: temp.path + "/no/such/file") }
        #expect(missing?.message.contains("(open)") == true)
        #expect(temp.contents() == ["target"])
    }

    // MARK: Links, modes and owners (finding 13)

    @Test func danglingIdentityLinkIsAnErrorNamingThePathNotANewIdentity() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let state = StateDirectory(path: temp.path)
        #expect(symlink(temp.path + "/moved-away", state.identityPath) == 0)
        let failure = #expect(throws: HandoffError.self) { try state.loadOrCreateIdentity() }
        #expect(failure?.code == .storage)
        #expect(failure?.message == "\(state.identityPath) is a symbolic link; handoffd does not follow links for its state files.")
        // Nothing was created, neither at the link nor where it points.
        #expect(temp.contents() == ["identity"])
        var info = stat()
        #expect(lstat(state.identityPath, &info) == 0 && info.st_mode & S_IFMT == S_IFLNK)
    }

    @Test func identityLinkToAValidFileIsNotFollowed() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let state = StateDirectory(path: temp.path)
        writeFile(temp.path + "/elsewhere", Array("handoff-identity-v1\nseed \(rfcSeedHex)\n".utf8))
        #expect(symlink(temp.path + "/elsewhere", state.identityPath) == 0)
        let failure = #expect(throws: HandoffError.self) { try state.loadOrCreateIdentity() }
        #expect(failure?.message.contains("symbolic link") == true)
    }

    @Test func trustStoreAndSettingsLinksAreNotFollowed() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let state = StateDirectory(path: temp.path)
        writeFile(temp.path + "/elsewhere", Array(#"{"version":1,"peers":[]}"#.utf8))
        #expect(symlink(temp.path + "/elsewhere", state.trustPath) == 0)
        #expect(symlink(temp.path + "/missing", state.settingsPath) == 0)
        let trust = #expect(throws: HandoffError.self) { try TrustStore.load(from: state) }
        #expect(trust?.message.contains(state.trustPath) == true)
        #expect(trust?.message.contains("symbolic link") == true)
        let settings = #expect(throws: HandoffError.self) { try state.read(state.settingsPath) }
        #expect(settings?.message.contains("symbolic link") == true)
    }

    @Test(arguments: [0o644, 0o640, 0o604, 0o660, 0o606] as [mode_t])
    func identityOpenToOthersIsRefusedAndLeftAlone(_ mode: mode_t) throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let state = StateDirectory(path: temp.path)
        let bytes = Array("handoff-identity-v1\nseed \(rfcSeedHex)\n".utf8)
        writeFile(state.identityPath, bytes)
        #expect(chmod(state.identityPath, mode) == 0)
        let failure = #expect(throws: HandoffError.self) { try state.loadOrCreateIdentity() }
        #expect(failure?.code == .identity)
        #expect(failure?.message.contains("\(state.identityPath) has mode \(String(mode, radix: 8))") == true)
        #expect(failure?.fix.contains("chmod 600 \(state.identityPath)") == true)
        #expect(permissions(state.identityPath) == mode)
        #expect(fileBytes(state.identityPath) == bytes)
        // The fix the error gives works.
        #expect(chmod(state.identityPath, 0o600) == 0)
        #expect(try state.loadOrCreateIdentity().created == false)
    }

    @Test func aCorruptLooseIdentityIsReportedAsCorrupt() {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let state = StateDirectory(path: temp.path)
        writeFile(state.identityPath, Array("handoff-identity-v1\nseed 1234\n".utf8))
        #expect(chmod(state.identityPath, 0o644) == 0)
        let failure = #expect(throws: HandoffError.self) { try state.loadOrCreateIdentity() }
        #expect(failure?.message == "The identity file \(state.identityPath) is corrupt.")
    }

    @Test func stateFilesOthersCanWriteAreRefusedReadableOnesAreRead() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let state = StateDirectory(path: temp.path)
        writeFile(state.trustPath, [0x7B, 0x7D])
        #expect(chmod(state.trustPath, 0o662) == 0)
        let failure = #expect(throws: HandoffError.self) { try state.read(state.trustPath) }
        #expect(failure?.code == .storage)
        #expect(failure?.message == "\(state.trustPath) has mode 662: other users could have changed it.")
        #expect(chmod(state.trustPath, 0o644) == 0)
        #expect(try state.read(state.trustPath) == [0x7B, 0x7D])
    }

    @Test func aFifoInPlaceOfTheIdentityIsRefusedWithoutBlocking() {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let state = StateDirectory(path: temp.path)
        #expect(mkfifo(state.identityPath, 0o600) == 0)
        let failure = #expect(throws: HandoffError.self) { try state.loadOrCreateIdentity() }
        #expect(failure?.message == "\(state.identityPath) is not a regular file.")
    }

    @Test(.enabled(if: getuid() == 0, "chown needs root"))
    func stateFilesOfAnotherUserAreRefused() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let state = StateDirectory(path: temp.path)
        writeFile(state.identityPath, Array("handoff-identity-v1\nseed \(rfcSeedHex)\n".utf8))
        #expect(chown(state.identityPath, 4242, 4242) == 0)
        let failure = #expect(throws: HandoffError.self) { try state.loadOrCreateIdentity() }
        #expect(failure?.code == .storage)
        #expect(failure?.message == "\(state.identityPath) belongs to uid 4242, not to the user running handoffd (uid 0).")
    }

    @Test func writeAtomicallyReplacesALinkInsteadOfWritingThroughIt() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let state = StateDirectory(path: temp.path)
        writeFile(temp.path + "/target", [7])
        #expect(symlink(temp.path + "/target", temp.path + "/data") == 0)
        try state.writeAtomically([1], to: temp.path + "/data")
        #expect(fileBytes(temp.path + "/target") == [7])
        #expect(try state.read(temp.path + "/data") == [1])
    }

    @Test func defaultPathFollowsXDG() {
        // Only meaningful when not root: root always uses /var/lib/handoff.
        if getuid() == 0 {
            #expect(StateDirectory.defaultPath(environment: ["XDG_STATE_HOME": "/x"]) == "/var/lib/handoff")
        } else {
            #expect(StateDirectory.defaultPath(environment: ["XDG_STATE_HOME": "/x", "HOME": "/h"]) == "/x/handoff")
            #expect(StateDirectory.defaultPath(environment: ["XDG_STATE_HOME": "relative", "HOME": "/h"]) == "/h/.local/state/handoff")
            #expect(StateDirectory.defaultPath(environment: ["HOME": "/h"]) == "/h/.local/state/handoff")
        }
    }
}
