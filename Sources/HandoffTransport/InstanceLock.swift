import Glibc
import HandoffRuntime
import HandoffCore

/// One running copy of a session agent per user: a lock on
/// `$XDG_RUNTIME_DIR/handoff/NAME.lock` held for the life of the process. The
/// session's autostart and the package's start after install may both start an
/// agent; the second one finds the lock taken and leaves, so offers are never
/// shown or published twice.
public enum InstanceLock {
    public enum Outcome: Equatable, Sendable {
        /// This process holds it now, until it exits (the descriptor is never closed).
        case acquired
        /// Another process holds it.
        case heldElsewhere(path: String)
        /// No runtime directory to hold it in: runs without one.
        case unavailable(String)
    }

    public static func acquire(_ name: String, environment: [String: String]) -> Outcome {
        guard let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") else {
            return .unavailable("XDG_RUNTIME_DIR is not set")
        }
        let directory = runtime + "/handoff"
        // handoffd makes it too (its socket lives there); 0700 either way.
        if mkdir(directory, 0o700) != 0, errno != EEXIST {
            return .unavailable("cannot create \(directory): \(String(cString: strerror(errno)))")
        }
        let path = "\(directory)/\(name).lock"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { return .unavailable("cannot open \(path): \(String(cString: strerror(errno)))") }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            close(fd)
            return code == EWOULDBLOCK ? .heldElsewhere(path: path) : .unavailable("cannot lock \(path): \(String(cString: strerror(code)))")
        }
        // Held until the process exits: the kernel releases it then, however it ends.
        return .acquired
    }

    /// An agent's start: takes the lock, or exits 0 when another copy holds it (saying so
    /// through `say`); without a runtime directory it runs, and says why it could not check.
    public static func exitIfAnotherRuns(_ program: String, environment: [String: String], say: (String) -> Void) {
        switch acquire(program, environment: environment) {
        case .acquired: break
        case let .heldElsewhere(path):
            say("\(program): another \(program) runs for this user (it holds \(path)); exiting.")
            exit(0)
        case let .unavailable(reason):
            say("\(program): \(reason); not checking for another copy")
        }
    }
}
