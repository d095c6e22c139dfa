import Foundation
import Glibc
import HandoffCore
@testable import HandoffKit
import Testing

/// A directory under /tmp with the given mode, removed by `remove()`.
private func makeDirectory(mode: mode_t) -> String {
    var template = Array((NSTemporaryDirectory() + "/handoff-client-XXXXXX").utf8CString)
    precondition(template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) } != nil)
    let path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    precondition(chmod(path, mode) == 0)
    return path
}

private func remove(_ path: String) { try? FileManager.default.removeItem(atPath: path) }

/// A listening Unix socket of this process (connections wait in the backlog; the
/// kernel answers SO_PEERCRED from the listener's credentials).
private func listen(at path: String) -> Int32 {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
    }
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
    precondition(bound == 0 && Glibc.listen(fd, 4) == 0)
    return fd
}

private func connectError(_ path: String) -> HandoffError? {
    #expect(throws: HandoffError.self) { _ = try HandoffClient(socketPath: path) }
}

/// Finding 9: the client checks who could have put the socket there, and who answers.
@Suite(.serialized) struct HandoffClientSocketTests {
    @Test func connectsToASocketOfThisUserInAnOwnerOnlyDirectory() throws {
        let directory = makeDirectory(mode: 0o700)
        defer { remove(directory) }
        let listener = listen(at: directory + "/handoffd.sock")
        defer { close(listener) }
        let client = try HandoffClient(socketPath: directory + "/handoffd.sock")
        #expect(client.socketPath == directory + "/handoffd.sock")
    }

    @Test func aMissingSocketIsStillDaemonUnavailable() {
        let directory = makeDirectory(mode: 0o755)
        defer { remove(directory) }
        let failure = connectError(directory + "/handoffd.sock")
        #expect(failure?.code == .daemonUnavailable)
        #expect(failure?.message == "Cannot reach handoffd at \(directory)/handoffd.sock: No such file or directory.")
    }

    @Test func aDirectoryOthersCanEnterIsRefusedBeforeConnecting() {
        let directory = makeDirectory(mode: 0o700)
        defer { remove(directory) }
        let listener = listen(at: directory + "/handoffd.sock")
        defer { close(listener) }
        #expect(chmod(directory, 0o777) == 0)
        let failure = connectError(directory + "/handoffd.sock")
        #expect(failure?.message == "The local API socket's directory \(directory) has mode 777; others could replace the socket.")
    }

    @Test func aLinkedDirectoryIsRefused() {
        let directory = makeDirectory(mode: 0o700)
        defer { remove(directory) }
        let listener = listen(at: directory + "/handoffd.sock")
        defer { close(listener) }
        let link = directory + "-link"
        #expect(symlink(directory, link) == 0)
        defer { unlink(link) }
        let failure = connectError(link + "/handoffd.sock")
        #expect(failure?.message == "The local API socket's directory \(link) is a symbolic link, which clients do not follow.")
    }

    /// The attack: another user pre-creates /tmp/handoff-UID and listens in it.
    @Test(.enabled(if: getuid() == 0, "chown needs root"))
    func aDirectoryOfAnotherUserIsRefused() {
        let directory = makeDirectory(mode: 0o700)
        defer { remove(directory) }
        let listener = listen(at: directory + "/handoffd.sock")
        defer { close(listener) }
        #expect(chown(directory, 4242, 4242) == 0)
        let failure = connectError(directory + "/handoffd.sock")
        #expect(failure?.message == "The local API socket's directory \(directory) belongs to uid 4242, not to you (uid 0): another user could be posing as handoffd.")
    }

    /// The socket's directory passes (it was swapped after the check, or the
    /// listener got in some other way) but the process answering is another
    /// user's: refused after connect, before a byte is sent.
    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"), "needs root, setpriv and python3"))
    func aListenerOfAnotherUserIsRefused() throws {
        let directory = makeDirectory(mode: 0o777)
        defer { remove(directory) }
        let path = directory + "/handoffd.sock"
        let attacker = Process()
        attacker.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        let script = """
            import socket, sys
            s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(4)
            print("ready", flush=True)
            c, _ = s.accept()
            print("received %d bytes" % len(c.recv(65536)), flush=True)
            """
        attacker.arguments = ["--reuid=4242", "--regid=4242", "--clear-groups", "/usr/bin/python3", "-c", script, path]
        let output = Pipe()
        attacker.standardOutput = output
        try attacker.run()
        defer {
            if attacker.isRunning { attacker.terminate() }
            attacker.waitUntilExit()
        }
        var ready = Data()
        while !ready.contains(0x0A) {
            let chunk = output.fileHandleForReading.availableData
            try #require(!chunk.isEmpty, "the attacker's listener did not start")
            ready += chunk
        }
        #expect(String(decoding: ready, as: UTF8.self) == "ready\n")
        #expect(chmod(directory, 0o700) == 0)
        let failure = connectError(path)
        #expect(failure?.message == "The process listening on \(path) runs as uid 4242, not as you (uid 0); nothing was sent to it.")
        // The connection was closed without a request: the attacker read end-of-file.
        attacker.waitUntilExit()
        let rest = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(rest == "received 0 bytes\n")
    }
}
