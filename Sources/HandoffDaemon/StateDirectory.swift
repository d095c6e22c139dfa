import FoundationEssentials
import Glibc
import HandoffCore
import HandoffTransport
import HandoffCrypto

/// The daemon's private directory: identity key and trust store. Created
/// owner-only; every file in it is written atomically (temporary file, fsync,
/// rename, fsync of the directory) so a crash never leaves half a key. State
/// files are never followed through symbolic links and must be regular files
/// of this user that nobody else can write (the identity: nobody else can read).
public struct StateDirectory: Sendable {
    public let path: String

    public init(path: String) {
        self.path = path
    }

    /// `$XDG_STATE_HOME/handoff`, `~/.local/state/handoff`, or `/var/lib/handoff` for root.
    public static func defaultPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if getuid() == 0 { return "/var/lib/handoff" }
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") { return state + "/handoff" }
        return (environment["HOME"] ?? passwordHomeDirectory()) + "/.local/state/handoff"
    }

    public var identityPath: String { path + "/identity" }
    public var trustPath: String { path + "/trusted-peers" }

    public func prepare() throws(HandoffError) {
        if mkdir(path, 0o700) != 0 && errno != EEXIST {
            // Create missing parents too (e.g. ~/.local/state on a fresh account).
            do {
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o700])
            } catch {
                throw HandoffError(.storage, "Cannot create the state directory \(path): \(error).",
                                   fix: "Create it yourself with mode 0700, or pass --state-dir with a writable directory.")
            }
        }
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
            throw HandoffError(.storage, "\(path) is not a directory.", fix: "Pass --state-dir with a directory.")
        }
        if info.st_mode & 0o077 != 0 { chmod(path, 0o700) }
    }

    /// Reads a whole state file; nil if it does not exist. Any other failure is
    /// an error, and so is a file that others could have written (a trust store
    /// with a stranger's key in it).
    func read(_ file: String) throws(HandoffError) -> [UInt8]? {
        guard let (bytes, permissions) = try readFile(file) else { return nil }
        guard permissions & 0o022 == 0 else {
            throw HandoffError(.storage, "\(file) has mode \(String(permissions, radix: 8)): other users could have changed it.",
                               fix: "Check its contents, then run 'chmod 600 \(file)' and restart handoffd.")
        }
        return bytes
    }

    /// The bytes and permission bits of a regular file owned by this user.
    /// O_NOFOLLOW: a link, even a dangling one, is an error naming the path,
    /// never a missing file (which would mean "create a new identity").
    func readFile(_ file: String) throws(HandoffError) -> (bytes: [UInt8], permissions: mode_t)? {
        // O_NONBLOCK: a FIFO put in the file's place must not hang the daemon.
        let fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        if fd < 0 {
            if errno == ENOENT { return nil }
            if errno == ELOOP {
                throw HandoffError(.storage, "\(file) is a symbolic link; handoffd does not follow links for its state files.",
                                   fix: "Replace the link with the file itself (or remove a dangling link, which starts over with a new identity or an empty trust store).")
            }
            throw HandoffError(.storage, "Cannot read \(file): \(String(cString: strerror(errno))).",
                               fix: "Check the file's owner and permissions (it should belong to the user running handoffd, mode 0600).")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw HandoffError(.storage, "\(file) is not a regular file.", fix: "Move it away and restart handoffd.")
        }
        guard info.st_uid == geteuid() else {
            throw HandoffError(.storage, "\(file) belongs to uid \(info.st_uid), not to the user running handoffd (uid \(geteuid())).",
                               fix: "Check its contents, then give it to this user (chown) or move it away, and restart handoffd.")
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else {
                throw HandoffError(.storage, "Cannot read \(file): \(String(cString: strerror(errno))).",
                                   fix: "Check the disk and the file's permissions.")
            }
            if count == 0 { return (bytes, info.st_mode & 0o777) }
            bytes += chunk[0..<count]
            guard bytes.count <= 1 << 20 else {
                throw HandoffError(.storage, "\(file) is larger than 1 MiB, which no state file should be.",
                                   fix: "Move the file away and restart handoffd.")
            }
        }
    }

    /// Writes owner-only and atomically: readers see the old file or the new one, never a mix.
    func writeAtomically(_ bytes: [UInt8], to file: String) throws(HandoffError) {
        let temporary = file + ".tmp-\(getpid())"
        func failure(_ step: String) -> HandoffError {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            return HandoffError(.storage, "Cannot write \(file) (\(step)): \(reason).",
                                fix: "Check free space and that \(path) belongs to the user running handoffd.")
        }
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw failure("open") }
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, $0.count - written) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                close(fd)
                throw failure("write")
            }
            written += count
        }
        guard fsync(fd) == 0 else {
            close(fd)
            throw failure("fsync")
        }
        close(fd)
        guard rename(temporary, file) == 0 else { throw failure("rename") }
        let directory = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directory >= 0 {
            fsync(directory)
            close(directory)
        }
    }
}

// MARK: - Identity file

extension StateDirectory {
    static let identityHeader = "handoff-identity-v1"

    /// Loads the identity, creating it on first start. A file that exists but
    /// cannot be read or parsed stops the daemon; it is never overwritten. So
    /// does one that others can read or write: like OpenSSH with a private key,
    /// handoffd refuses it rather than tightening it, since the key may have
    /// leaked and the user should decide (checked after the format, so a
    /// corrupt file is reported as corrupt).
    public func loadOrCreateIdentity() throws(HandoffError) -> (identity: Identity, created: Bool) {
        if let (bytes, permissions) = try readFile(identityPath) {
            let identity = try Self.parseIdentity(bytes, file: identityPath)
            guard permissions & 0o077 == 0 else {
                throw HandoffError(.identity, "The identity file \(identityPath) has mode \(String(permissions, radix: 8)): other users can read or change the device's secret key.",
                                   fix: "If nobody else could have used it, run 'chmod 600 \(identityPath)' and restart handoffd; otherwise move it away to start over with a new identity, and pair again.")
            }
            return (identity, false)
        }
        let identity = Identity()
        let text = "\(Self.identityHeader)\nseed \(Hex.encode(identity.seed))\n"
        try writeAtomically(Array(text.utf8), to: identityPath)
        return (identity, true)
    }

    static func parseIdentity(_ bytes: [UInt8], file: String) throws(HandoffError) -> Identity {
        let corrupt = HandoffError(.identity, "The identity file \(file) is corrupt.",
                                   fix: "Restore it from a backup. To start over with a new identity, move it away and restart handoffd; paired devices must then trust the new device id.")
        guard let text = String(validating: bytes, as: UTF8.self) else { throw corrupt }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: true)
        guard lines.count == 2, lines[0] == identityHeader, lines[1].hasPrefix("seed "),
              let seed = Hex.decode(String(lines[1].dropFirst(5))), seed.count == Identity.seedBytes
        else { throw corrupt }
        return try Identity(seed: seed)
    }
}
