/// Where the local API socket lives when nobody says otherwise, and what makes
/// it safe to use. Shared by the daemon and its clients so both find the same
/// path and apply the same rule.
public enum LocalAPIPath {
    /// `$HANDOFF_SOCKET` (clients only), `$XDG_RUNTIME_DIR/handoff/handoffd.sock`,
    /// `/run/handoff/handoffd.sock` for root, else `/tmp/handoff-UID/handoffd.sock`.
    public static func socketPath(environment: [String: String], uid: UInt32, isClient: Bool) -> String {
        if isClient, let explicit = environment["HANDOFF_SOCKET"], !explicit.isEmpty { return explicit }
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") { return runtime + "/handoff/handoffd.sock" }
        if uid == 0 { return "/run/handoff/handoffd.sock" }
        return "/tmp/handoff-\(uid)/handoffd.sock"
    }

    /// The directory that holds `socketPath` ("." for a bare name).
    public static func directory(of socketPath: String) -> String {
        guard let slash = socketPath.lastIndex(of: "/") else { return "." }
        let directory = String(socketPath[..<slash])
        return directory.isEmpty ? "/" : directory
    }

    /// What `lstat` says about the socket's directory.
    public struct DirectoryStatus: Equatable, Sendable {
        public enum Kind: Sendable { case directory, symbolicLink, other }
        public var kind: Kind
        public var owner: UInt32
        /// `st_mode & 0o7777`.
        public var permissions: UInt32

        public init(kind: Kind, owner: UInt32, permissions: UInt32) {
            self.kind = kind
            self.owner = owner
            self.permissions = permissions
        }
    }

    /// The socket's directory is what keeps other users from listening in the
    /// daemon's place: whoever can create entries in it can put their own socket
    /// there (a pre-created `/tmp/handoff-UID` captured a victim's publish). So
    /// it must be a real directory, not a symbolic link, owned by `uid`, closed
    /// to group and others (0700).
    public static func checkDirectory(_ directory: String, _ status: DirectoryStatus, uid: UInt32) throws(HandoffError) {
        let unsafe = "The local API socket's directory \(directory)"
        switch status.kind {
        case .symbolicLink:
            throw HandoffError(.daemonUnavailable, "\(unsafe) is a symbolic link, which clients do not follow.",
                               fix: "Remove the link and restart handoffd, or set XDG_RUNTIME_DIR (systemd's /run/user/\(uid)).")
        case .other:
            throw HandoffError(.daemonUnavailable, "\(unsafe) is not a directory.",
                               fix: "Remove it and restart handoffd, or point --socket / HANDOFF_SOCKET at the socket handoffd listens on.")
        case .directory:
            break
        }
        guard status.owner == uid else {
            throw HandoffError(.daemonUnavailable,
                               "\(unsafe) belongs to uid \(status.owner), not to you (uid \(uid)): another user could be posing as handoffd.",
                               fix: "Have root remove \(directory), then restart handoffd; or set XDG_RUNTIME_DIR (systemd's /run/user/\(uid)).")
        }
        guard status.permissions & 0o077 == 0 else {
            let octal = String(status.permissions, radix: 8)
            throw HandoffError(.daemonUnavailable, "\(unsafe) has mode \(octal); others could replace the socket.",
                               fix: "Run 'chmod 700 \(directory)' and restart handoffd.")
        }
    }

    /// After connecting: the process that accepted must run as this user, or it
    /// is not our handoffd (the kernel reports it with SO_PEERCRED).
    public static func checkPeer(uid peerUID: UInt32, socketPath: String, uid: UInt32) throws(HandoffError) {
        guard peerUID == uid else {
            throw HandoffError(.daemonUnavailable,
                               "The process listening on \(socketPath) runs as uid \(peerUID), not as you (uid \(uid)); nothing was sent to it.",
                               fix: "Start your own handoffd, and point --socket / HANDOFF_SOCKET at the socket it listens on.")
        }
    }
}
