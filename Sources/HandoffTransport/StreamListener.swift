import FoundationEssentials
import Glibc
import HandoffRuntime
import HandoffCore
import Synchronization

/// How many connections a listener serves at once. Each connection costs a
/// thread and a descriptor, so without a bound a peer that opens connections
/// and trickles bytes exhausts both (and at the descriptor limit nothing else
/// in the daemon can open a file or socket).
public struct ConnectionLimits: Sendable {
    /// Connections served at once; more are accepted and closed at once (counted).
    public var total: Int
    /// Connections from one source address at once (TCP; Unix clients are one source).
    public var perSource: Int
    /// New connections per second from one source.
    public var perSourceRate: SourceBudget.Rate?
    /// Handshakes answered per second for every source but the preferred ones together: each
    /// costs key agreement and a signature before anything is proven. Charged when a hello asks
    /// for one (`allowHandshake`), not when a connection arrives, so a stranger's connections
    /// that send nothing spend none of it and cannot keep out a device that has something to say.
    public var handshakeRate: SourceBudget.Rate?
    /// The per-source rate for addresses paired devices were last heard from (`setPreferredSources`),
    /// which are also exempt from the handshake rate; nil: the same as `perSourceRate`.
    public var preferredSourceRate: SourceBudget.Rate?
    /// When `total` is reached, a new connection evicts the oldest one that has not proven who
    /// it is (`StreamConnection.markProven`) instead of being refused: strangers holding every
    /// slot with idle connections until their handshake deadline cannot keep a paired device out.
    public var evictsUnproven: Bool

    public init(total: Int, perSource: Int, perSourceRate: SourceBudget.Rate? = nil, handshakeRate: SourceBudget.Rate? = nil,
                preferredSourceRate: SourceBudget.Rate? = nil, evictsUnproven: Bool = false) {
        self.total = total
        self.perSource = perSource
        self.perSourceRate = perSourceRate
        self.handshakeRate = handshakeRate
        self.preferredSourceRate = preferredSourceRate
        self.evictsUnproven = evictsUnproven
    }
}

/// A listening stream socket (TCP or Unix). Each accepted connection is handed
/// to `handler` on a thread of its own, so a slow peer never blocks another,
/// within `limits`. From `run` on, the event loop owns the listening descriptor:
/// it accepts when a client connects, and `stop()` closes it there.
public final class StreamListener: Sendable {
    private let fd: Int32
    /// The bound TCP port (0 for Unix sockets).
    public let port: UInt16
    /// The listening descriptor as the loop holds it, from `run` on (nil before: `deinit` closes it).
    private let watch = Locked<EventLoop.Watch?>(nil)
    private let stopped = Atomic<Bool>(false)
    private let active = Locked(ActiveConnections())
    /// Connections closed unserved because a limit was reached.
    private let refused = Atomic<Int>(0)
    /// accept() failures for lack of descriptors or memory.
    private let acceptFailures = Atomic<Int>(0)

    struct ActiveConnections: ~Copyable {
        /// Connections holding a place: served and not evicted.
        var total = 0
        var bySource: [String: Int] = [:]
        var rate: SourceBudget?
        var preferredRate: SourceBudget?
        /// Served connections in arrival order, for eviction (only with `evictsUnproven`).
        var served: [(serial: UInt64, source: String, connection: StreamConnection)] = []
        var nextSerial: UInt64 = 0
        /// Evicted connections whose threads have not ended yet. They hold no place (a new
        /// connection must not wait for a thread the scheduler has not run yet), only a thread.
        var windingDown: Set<UInt64> = []
    }
    /// Connections closed to make room for a newer one (they had not proven who they are).
    private let evicted = Atomic<Int>(0)
    /// Addresses paired devices were last heard from: exempt from the handshake rate, so a
    /// stranger spending it cannot keep them out (their own per-source rate still holds).
    private let preferred = Locked<Set<String>>([])
    /// The handshake rate's bucket, from `run`'s limits; nil: no such rate.
    private let handshakes = Locked<TokenBucket?>(nil)
    /// Handshakes not answered for want of the handshake rate.
    private let handshakesRefused = Atomic<Int>(0)

    /// Whether a hello from `source` may be answered now (a key agreement and a signature):
    /// always for a preferred source, else within the handshake rate. Callable from any thread.
    public func allowHandshake(from source: String) -> Bool {
        if preferred.withLock({ $0.contains(Self.sourceKey(source)) }) { return true }
        let allowed = handshakes.withLock { bucket in bucket?.take(nowMillis: monotonicMillis()) ?? true }
        if !allowed { handshakesRefused.add(1, ordering: .relaxed) }
        return allowed
    }

    public func setPreferredSources(_ hosts: Set<String>) {
        let normalized = Set(hosts.map(Self.sourceKey))
        preferred.withLock { $0 = normalized }
    }

    /// One spelling per address: an IPv4 client of the dual-stack socket is "::ffff:a.b.c.d".
    public static func sourceKey(_ host: String) -> String {
        host.hasPrefix("::ffff:") && host.contains(".") ? String(host.dropFirst(7)) : host
    }

    /// Counters for `status`.
    public struct Counters: Sendable, Equatable {
        /// Connections holding a place.
        public var active: Int
        /// Evicted connections whose threads are still ending.
        public var windingDown: Int
        public var refusedOverLimit: Int
        public var acceptFailures: Int
        public var evictedUnproven: Int
        public var handshakesRefused: Int
    }

    public var counters: Counters {
        let (total, windingDown) = active.withLock { ($0.total, $0.windingDown.count) }
        return Counters(active: total, windingDown: windingDown, refusedOverLimit: refused.load(ordering: .relaxed),
                 acceptFailures: acceptFailures.load(ordering: .relaxed), evictedUnproven: evicted.load(ordering: .relaxed),
                 handshakesRefused: handshakesRefused.load(ordering: .relaxed))
    }

    private init(fd: Int32, port: UInt16) {
        self.fd = fd
        self.port = port
    }

    deinit {
        // Never started: nobody else owns the descriptor.
        if watch.withLock({ $0 == nil }) { Glibc.close(fd) }
    }

    /// Listens on TCP, all addresses, IPv6 and IPv4 on one socket (IPv4 alone when
    /// the kernel has IPv6 switched off). Port 0 picks a free one.
    public static func tcp(port: UInt16) throws(SystemError) -> StreamListener {
        do {
            return try tcp(family: AF_INET6, port: port)
        } catch where error.errno == EAFNOSUPPORT {
            return try tcp(family: AF_INET, port: port)
        }
    }

    private static func tcp(family: Int32, port: UInt16) throws(SystemError) -> StreamListener {
        let fd = try systemCall("socket") { socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
        do {
            try setOption(fd, SOL_SOCKET, SO_REUSEADDR, Int32(1), "setsockopt(SO_REUSEADDR)")
            if family == AF_INET6 { try setOption(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, Int32(0), "setsockopt(IPV6_V6ONLY)") }
            try bindAnyAddress(fd, family: family, port: port, "bind(port \(port))")
            try systemCall("listen") { listen(fd, 64) }
            return StreamListener(fd: fd, port: try boundPort(fd))
        } catch {
            Glibc.close(fd)
            throw error
        }
    }

    /// Listens on a Unix socket at `path`, reachable only by this user (mode 0600;
    /// the caller keeps it in a 0700 directory, which is what protects it between
    /// bind and chmod). A stale socket file from a crashed daemon is replaced;
    /// a live one is an error, so two daemons never share a socket.
    public static func unix(path: String) throws(SystemError) -> StreamListener {
        if let probe = try? StreamConnection.connect(unixPath: path) {
            probe.close()
            throw SystemError("another handoffd is already listening on \(path)", errno: EADDRINUSE)
        }
        // Replace only a stale socket, never a file that happens to be at that path.
        var info = stat()
        if lstat(path, &info) == 0 {
            guard (info.st_mode & S_IFMT) == S_IFSOCK else { throw SystemError("\(path) exists and is not a socket", errno: EEXIST) }
            unlink(path)
        }
        let fd = try systemCall("socket") { socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
        do {
            var address = try UnixAddress(path: path)
            _ = try address.withSockaddr { (pointer, length) throws(SystemError) in
                try systemCall("bind(\(path))") { bind(fd, pointer, length) }
            }
            try systemCall("chmod(\(path))") { chmod(path, 0o600) }
            try systemCall("listen") { listen(fd, 16) }
            return StreamListener(fd: fd, port: 0)
        } catch {
            Glibc.close(fd)
            throw error
        }
    }

    /// Connections accepted per readiness before the loop serves its other descriptors.
    static let acceptsPerTurn = 16
    /// How long accepting pauses when the process is out of descriptors or memory.
    static let acceptBackoffMillis: UInt64 = 100

    /// Accepts on the event loop until `stop()`; each admitted connection is served on a thread
    /// called `name connection`. Nothing wakes unless a client connects.
    public func run(name: String, limits: ConnectionLimits, loop: EventLoop = .shared,
                    handler: @escaping @Sendable (StreamConnection) -> Void) {
        start(limits: limits, loop: loop) { [self] connection, source, serial in
            Threads.start("\(name) connection") { [self] in
                handler(connection)
                connection.close()
                release(source: source, serial: serial)
            }
        }
    }

    /// As `run`, but each connection is handed over on the loop's thread (`accepted` must not
    /// block): for connections served on the loop. The connection keeps its place in the limits
    /// until the `release` it is given is called, once, after it closed.
    public func serveOnLoop(limits: ConnectionLimits, loop: EventLoop = .shared,
                            accepted: @escaping @Sendable (StreamConnection, _ release: @escaping @Sendable () -> Void) -> Void) {
        start(limits: limits, loop: loop) { [self] connection, source, serial in
            let released = Atomic<Bool>(false)
            accepted(connection) { [self] in
                if !released.exchange(true, ordering: .acquiringAndReleasing) { release(source: source, serial: serial) }
            }
        }
    }

    private func start(limits: ConnectionLimits, loop: EventLoop,
                       serve: @escaping @Sendable (StreamConnection, _ source: String, _ serial: UInt64) -> Void) {
        handshakes.withLock { $0 = limits.handshakeRate.map { TokenBucket(rate: $0, nowMillis: monotonicMillis()) } }
        // When the loop cannot take it (no memory for epoll), it stays unstarted: `deinit` closes it.
        watch.withLock { watch in
            guard watch == nil, !stopped.load(ordering: .acquiring) else { return }
            watch = try? loop.watch(fd) { [self] _ in acceptWaiting(limits: limits, loop: loop, serve: serve) }
        }
    }

    /// On the loop: accepts what is waiting, at most `acceptsPerTurn`, and starts serving each.
    private func acceptWaiting(limits: ConnectionLimits, loop: EventLoop,
                               serve: @escaping @Sendable (StreamConnection, _ source: String, _ serial: UInt64) -> Void) {
        for _ in 0..<Self.acceptsPerTurn {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let client = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { accept(fd, $0, &length) }
            }
            guard client >= 0 else {
                let code = errno
                if code == EMFILE || code == ENFILE || code == ENOBUFS || code == ENOMEM {
                    // Out of descriptors: the pending connection stays queued, so the socket stays
                    // ready and accept would fail again at once. Pause instead of spinning.
                    acceptFailures.add(1, ordering: .relaxed)
                    pauseAccepting(loop: loop)
                    return
                }
                if code == EINTR || code == ECONNABORTED { continue }
                return
            }
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            let address = port == 0 ? nil : SocketAddress(storage: storage, length: length)
            let connection = StreamConnection(fd: client, remote: address?.description ?? "local", remoteHost: address?.host)
            let source = address.map { Self.sourceKey($0.host) } ?? "local"
            guard let serial = admit(connection, source: source, limits: limits) else {
                refused.add(1, ordering: .relaxed)
                connection.close()
                continue
            }
            if port != 0 { connection.disableNagle() }
            serve(connection, source, serial)
        }
    }

    private func pauseAccepting(loop: EventLoop) {
        guard let current = watch.withLock({ $0 }) else { return }
        current.update([])
        loop.after(millis: Self.acceptBackoffMillis) { current.update(.readable) }
    }

    /// The connection's serial when it may be served now, nil when it is refused. A full pool
    /// with `evictsUnproven` closes its oldest connection that has not proven who it is, and the
    /// new one takes its place at once. The evicted connection's thread is still ending: at most
    /// `total` such threads at once, so threads stay within twice `total`, but a paired device's
    /// address (`setPreferredSources`) is admitted past that bound, within its own rate: a
    /// stranger's flood must not keep it waiting for threads the scheduler has not run yet.
    private func admit(_ connection: StreamConnection, source: String, limits: ConnectionLimits) -> UInt64? {
        let preferredSource = preferred.withLock { $0.contains(source) }
        return active.withLock { active in
            let fromSource = active.bySource[source, default: 0]
            guard fromSource < limits.perSource else { return nil }
            if let perSource = limits.perSourceRate {
                // Per source only: the costly part, the handshake, has its own overall rate (`allowHandshake`).
                let unlimited = SourceBudget.Rate(perSecond: 1e9, burst: 1e9)
                if preferredSource {
                    // A paired device's address: its own, higher rate.
                    if active.preferredRate == nil {
                        active.preferredRate = SourceBudget(perSource: limits.preferredSourceRate ?? perSource, overall: unlimited,
                                                            maximumSources: 64)
                    }
                    guard active.preferredRate!.allow(source, nowMillis: monotonicMillis(), countingOverall: false) else { return nil }
                } else {
                    if active.rate == nil { active.rate = SourceBudget(perSource: perSource, overall: unlimited, maximumSources: 1_024) }
                    guard active.rate!.allow(source, nowMillis: monotonicMillis(), countingOverall: false) else { return nil }
                }
            }
            if active.total >= limits.total {
                // The oldest that has sent nothing (an idle stranger), else the oldest unproven one.
                func evictable(_ entry: (serial: UInt64, source: String, connection: StreamConnection)) -> Bool {
                    !entry.connection.isProven && !entry.connection.isClosed
                }
                guard limits.evictsUnproven, preferredSource || active.windingDown.count < limits.total,
                      let oldest = active.served.firstIndex(where: { evictable($0) && $0.connection.hasSentNothing })
                          ?? active.served.firstIndex(where: evictable) else { return nil }
                let (serial, evictedSource, evicted) = active.served.remove(at: oldest)
                evicted.close()
                active.total -= 1
                let left = active.bySource[evictedSource, default: 1] - 1
                active.bySource[evictedSource] = left > 0 ? left : nil
                active.windingDown.insert(serial)
                self.evicted.add(1, ordering: .relaxed)
            }
            active.total += 1
            // Not `fromSource + 1`: the evicted connection may have been from this source too.
            active.bySource[source, default: 0] += 1
            active.nextSerial += 1
            if limits.evictsUnproven { active.served.append((active.nextSerial, source, connection)) }
            return active.nextSerial
        }
    }

    private func release(source: String, serial: UInt64) {
        active.withLock { active in
            // An evicted connection gave up its place when it was evicted.
            if active.windingDown.remove(serial) != nil { return }
            active.total -= 1
            let left = active.bySource[source, default: 1] - 1
            active.bySource[source] = left > 0 ? left : nil
            if let index = active.served.firstIndex(where: { $0.serial == serial }) { active.served.remove(at: index) }
        }
    }

    /// Stops accepting; the loop closes the listening descriptor (connections being served go on).
    public func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        watch.withLock { $0 }?.close()
    }
}
