import FoundationEssentials
import Glibc
import HandoffAPI
import HandoffCore

/// Proof, between two processes of this user, that a person accepted: the client
/// the user accepts through (handoff-peer, the notification, the panel item)
/// writes a fresh ticket into a directory of the user's runtime directory before
/// it asks handoffd to accept; the app that continues acts on a `continued`
/// only when the ticket it carries is there for that peer, and removes it (once).
/// handoffd carries the ticket but cannot make one: under its unit
/// (ProtectHome=tmpfs) the runtime directory is not visible to it, so a handoffd
/// taken over from the network cannot make an agent write or open anything
/// without an accept (Docs/SECURITY.md, "Accept tickets").
public enum AcceptTickets {
    /// A ticket outlives its accept by at most this long: a fetch times out long before
    /// (resumes included), and an app started for it declares within seconds.
    public static let lifetimeSeconds = 600
    /// Tickets waiting at once; the oldest go first.
    public static let maximumWaiting = 64

    /// `$XDG_RUNTIME_DIR/handoff-accepts`, `/run/handoff-accepts` for root, else `/tmp/handoff-accepts-UID`.
    public static func directory(environment: [String: String] = ProcessInfo.processInfo.environment, uid: UInt32 = getuid()) -> String {
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") { return runtime + "/handoff-accepts" }
        return uid == 0 ? "/run/handoff-accepts" : "/tmp/handoff-accepts-\(uid)"
    }

    /// Writes a new ticket for an accept of `peer` (the name is kept in the file, for a person
    /// looking); nil when the directory is not safe to use (then the accept goes without one,
    /// and no app acts on it).
    public static func mint(peer: String, directory: String = directory()) -> String? {
        guard prepare(directory) else { return nil }
        sweep(directory)
        var generator = SystemRandomNumberGenerator()
        let ticket = Hex.encode((0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let descriptor = open(directory + "/" + ticket, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        let bytes = Array(peer.utf8.prefix(256))
        guard bytes.withUnsafeBytes({ write(descriptor, $0.baseAddress, $0.count) }) == bytes.count else {
            unlink(directory + "/" + ticket)
            return nil
        }
        return ticket
    }

    /// True once for a ticket minted here not longer than `lifetimeSeconds` ago; the ticket is
    /// gone after. Unguessable and used once, it needs no binding to the peer: handoffd, which
    /// picks what it delivers, learns a ticket only from the accept it came with.
    public static func redeem(_ ticket: String?, directory: String = directory()) -> Bool {
        guard let ticket, AcceptTicket.isWellFormed(ticket), checkDirectory(directory) else { return false }
        let path = directory + "/" + ticket
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_uid == getuid(), info.st_size <= 256,
              time(nil) - info.st_mtim.tv_sec <= lifetimeSeconds else { return false }
        return unlink(path) == 0
    }

    /// Creates the directory (0700) when missing; true when it is a real directory of this
    /// user closed to others.
    static func prepare(_ directory: String) -> Bool {
        if mkdir(directory, 0o700) != 0 && errno != EEXIST { return false }
        return checkDirectory(directory)
    }

    static func checkDirectory(_ directory: String) -> Bool {
        var info = stat()
        guard lstat(directory, &info) == 0 else { return false }
        return info.st_mode & S_IFMT == S_IFDIR && info.st_uid == getuid() && info.st_mode & 0o077 == 0
    }

    /// Drops tickets past their lifetime, and the oldest beyond `maximumWaiting`.
    static func sweep(_ directory: String) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        var waiting: [(name: String, seconds: Int)] = []
        for name in names where AcceptTicket.isWellFormed(name) {
            var info = stat()
            guard lstat(directory + "/" + name, &info) == 0 else { continue }
            if time(nil) - info.st_mtim.tv_sec > lifetimeSeconds { unlink(directory + "/" + name) } else { waiting.append((name, info.st_mtim.tv_sec)) }
        }
        for stale in waiting.sorted(by: { $0.seconds < $1.seconds }).dropLast(maximumWaiting - 1) { unlink(directory + "/" + stale.name) }
    }
}
