/// Where the local API socket lives when nobody says otherwise. Shared by the
/// daemon and its clients so both find the same path.
public enum LocalAPIPath {
    /// `$HANDOFF_SOCKET` (clients only), `$XDG_RUNTIME_DIR/handoff/handoffd.sock`,
    /// `/run/handoff/handoffd.sock` for root, else `/tmp/handoff-UID/handoffd.sock`.
    public static func socketPath(environment: [String: String], uid: UInt32, isClient: Bool) -> String {
        if isClient, let explicit = environment["HANDOFF_SOCKET"], !explicit.isEmpty { return explicit }
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") { return runtime + "/handoff/handoffd.sock" }
        if uid == 0 { return "/run/handoff/handoffd.sock" }
        return "/tmp/handoff-\(uid)/handoffd.sock"
    }
}
