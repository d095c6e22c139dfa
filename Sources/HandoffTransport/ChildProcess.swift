import CLinux
import Glibc
import HandoffRuntime

/// Starting and waiting for other programs with posix_spawn, without Foundation's
/// `Process` (full Foundation brings ICU into every program).
public enum ChildProcess {
    public enum Stream: Sendable {
        case inherit
        case null
        /// A pipe whose reading end is returned (close-on-exec here; the caller closes it).
        case pipe
    }

    public struct Started: Sendable {
        public let pid: pid_t
        /// The reading end of the standard output pipe, when one was asked for.
        public let output: Int32?
    }

    /// glibc's POSIX_SPAWN_SETSID, which Swift's Glibc module does not import.
    static let setSessionFlag: Int16 = 0x80

    /// Starts `executable` (a path; a bare name is looked up in PATH) with `arguments` after argv[0].
    /// Standard input is /dev/null; no other descriptor is inherited past standard error.
    /// `environment` nil keeps this process's environment.
    public static func spawn(_ executable: String, arguments: [String], environment: [String: String]? = nil,
                             standardOutput: Stream = .inherit, standardError: Stream = .inherit,
                             newSession: Bool = false) throws(SystemError) -> Started {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        var pipeEnds: [Int32] = [-1, -1]
        if standardOutput == .pipe {
            guard handoff_pipe_cloexec(&pipeEnds) == 0 else { throw SystemError("pipe2") }
            posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 1)
        } else if standardOutput == .null {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        }
        if standardError == .null {
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        }
        // Only 0, 1 and 2 pass: a descriptor this process holds without CLOEXEC (handoff-launch's
        // connection, which socket activation also hands it as fd 3) is not the child's business.
        handoff_spawn_close_from(&actions, 3)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Like a program started from a shell: no signal blocked, every signal at its default
        // (our threads block or ignore some, and a child would inherit that).
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF) | (newSession ? setSessionFlag : 0))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let envp: [UnsafeMutablePointer<CChar>?]? = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer { envp?.forEach { free($0) } }
        var pid = pid_t()
        func start(_ environment: UnsafePointer<UnsafeMutablePointer<CChar>?>) -> Int32 {
            executable.contains("/") ? posix_spawn(&pid, executable, &actions, &attributes, argv, environment)
                : posix_spawnp(&pid, executable, &actions, &attributes, argv, environment)
        }
        let status = envp.map { start($0) } ?? start(environ)
        if pipeEnds[1] >= 0 { close(pipeEnds[1]) }
        guard status == 0 else {
            if pipeEnds[0] >= 0 { close(pipeEnds[0]) }
            throw SystemError("posix_spawn \(executable)", errno: status)
        }
        return Started(pid: pid, output: pipeEnds[0] >= 0 ? pipeEnds[0] : nil)
    }

    /// Blocks until `pid` ends: its exit status, or 128 + the signal that ended it.
    public static func waitForExit(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 {
            guard errno == EINTR else { return -1 }
        }
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }

    /// The exit status of `pid` if it ends within `millis`; nil while it still runs. Waits on a
    /// pidfd (Linux 5.3), so nothing polls meanwhile.
    public static func waitForExit(_ pid: pid_t, millis: Int) -> Int32? {
        let pidfd = handoff_pidfd_open(pid)
        guard pidfd >= 0 else { return nil }
        defer { close(pidfd) }
        let end = monotonicMillis() &+ UInt64(max(0, millis))
        var entry = pollfd(fd: pidfd, events: Int16(POLLIN), revents: 0)
        while true {
            let now = monotonicMillis()
            guard now < end else { return nil }
            let ready = poll(&entry, 1, Int32(min(end - now, UInt64(Int32.max))))
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { return nil }
            return waitForExit(pid)
        }
    }

    /// Calls `handler` on the event loop's thread (it must not block) with the exit status once
    /// `pid` ends: the loop watches the child's pidfd, so no thread waits for it. Where there is
    /// no pidfd (a kernel before 5.3), a thread of its own waits instead.
    public static func onExit(_ pid: pid_t, loop: EventLoop = .shared, _ handler: @escaping @Sendable (Int32) -> Void) {
        let pidfd = handoff_pidfd_open(pid)
        guard pidfd >= 0 else {
            Threads.start("wait \(pid)") { handler(waitForExit(pid)) }
            return
        }
        do {
            _ = try loop.watch(pidfd) { ready in
                // Readable once the child has ended: waitpid does not block then. Closed first, on
                // the loop, so the handler runs once.
                ready.watch.close()
                handler(waitForExit(pid))
            }
        } catch {
            close(pidfd)
            Threads.start("wait \(pid)") { handler(waitForExit(pid)) }
        }
    }

    /// Runs a program to its end and returns its exit status and up to `maxOutputBytes` of its
    /// standard output (the rest is read and dropped); its standard error goes to /dev/null.
    public static func run(_ executable: String, arguments: [String],
                           maxOutputBytes: Int = 4 << 20) throws(SystemError) -> (status: Int32, output: [UInt8]) {
        let started = try spawn(executable, arguments: arguments, standardOutput: .pipe, standardError: .null)
        let fd = started.output!
        defer { close(fd) }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            output.append(contentsOf: chunk[..<min(count, max(0, maxOutputBytes - output.count))])
        }
        return (waitForExit(started.pid), output)
    }
}

/// Writes `text` to standard error, whole (no buffering to lose at exit).
public func writeStandardError(_ text: String) {
    var bytes = Array(text.utf8)[...]
    while !bytes.isEmpty {
        let written = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
        if written < 0 && errno == EINTR { continue }
        guard written > 0 else { return }
        bytes = bytes.dropFirst(written)
    }
}
