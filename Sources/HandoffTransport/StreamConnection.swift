import CLinux
import Glibc
import HandoffRuntime
import Synchronization

/// One connected stream socket (TCP or Unix), used with blocking calls from
/// threads of its own. Reads belong to one thread; writes are serialised by a
/// lock so event pushes and replies never interleave.
///
/// The descriptor's number is released only in `deinit`, when no thread can
/// still hold this object: `close()` shuts the socket down, which wakes every
/// thread blocked on it and fails later calls, but keeps the number reserved.
/// So the kernel never hands the number to another connection while a thread
/// of this one might still read or write it.
public final class StreamConnection: Sendable {
    let fd: Int32
    /// Who is on the other end, for logs (numeric address or "local").
    public let remote: String
    /// The numeric address of the other end without port (nil for Unix sockets): per-source budgets, the link a fetch uses.
    public let remoteHost: String?
    private let readState = Locked(ReadState())
    private let writeLock = Locked(())
    private let closed = Atomic<Bool>(false)
    /// The other end proved who it is (the transfer handshake finished): a listener full of
    /// connections evicts the oldest that have not (StreamListener), never this one.
    private let proven = Atomic<Bool>(false)
    /// Monotonic milliseconds after which reads fail with ETIMEDOUT (0: none).
    private let deadline = Atomic<UInt64>(0)
    /// Unix sockets can carry descriptors (SCM_RIGHTS): their reads use recvmsg.
    let carriesDescriptors: Bool

    /// The receive buffer starts small (a handshake needs a few hundred bytes)
    /// and grows only when a large read is asked for, so an idle or
    /// unauthenticated connection holds little memory.
    static let initialScratchBytes = 4 * 1024
    static let maximumScratchBytes = 256 * 1024

    /// Descriptors received and not yet taken by a message; more than this is a peer misbehaving.
    public static let maximumQueuedDescriptors = 8

    struct ReadState: ~Copyable {
        var buffer: [UInt8] = []
        /// Reused for every recv: allocating (and zeroing) a fresh one per call costs more than the copy.
        var scratch = [UInt8](repeating: 0, count: StreamConnection.initialScratchBytes)
        /// Received with the bytes in `buffer` (or before them), in order; each message takes as many as it declares.
        var descriptors: [Int32] = []
        /// The first bytes of `buffer` known to hold no newline: a long line arriving in many reads
        /// is scanned once, not from its start at every read.
        var searched = 0

        /// How much one read of a line asks for: the receive buffer grows only while a long line
        /// is arriving (replies and events are mostly a few hundred bytes), so an idle client
        /// holds little memory.
        var lineReadBytes: Int {
            buffer.count >= StreamConnection.initialScratchBytes ? StreamConnection.maximumScratchBytes : StreamConnection.initialScratchBytes
        }

        /// A long line is gone: lets its buffers go.
        mutating func shrinkWhenEmpty() {
            guard buffer.isEmpty, scratch.count > StreamConnection.initialScratchBytes else { return }
            buffer = []
            scratch = [UInt8](repeating: 0, count: StreamConnection.initialScratchBytes)
        }
    }

    init(fd: Int32, remote: String, remoteHost: String? = nil) {
        self.fd = fd
        self.remote = remote
        self.remoteHost = remoteHost
        var domain: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        carriesDescriptors = getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &length) == 0 && domain == AF_UNIX
    }

    /// Takes over a connected socket this process was handed (a socket-activated
    /// service's standard input): from now on this connection owns and closes it.
    public static func adopting(fd: Int32, remote: String) -> StreamConnection {
        StreamConnection(fd: fd, remote: remote)
    }

    deinit {
        readState.withLock { state in
            for descriptor in state.descriptors { Glibc.close(descriptor) }
        }
        Glibc.close(fd)
    }

    /// The receive buffer's size now (for tests of memory held per connection).
    var scratchCapacity: Int { readState.withLock { $0.scratch.count } }

    /// True once `close()` ran: every later read or write fails.
    public var isClosed: Bool { closed.load(ordering: .acquiring) }

    /// Reads after `millis` from now fail with ETIMEDOUT, however slowly bytes
    /// trickle in (a per-read timeout alone lets one byte every few seconds hold
    /// a connection forever). nil removes the deadline.
    public func setDeadline(millisFromNow millis: Int?) {
        deadline.store(millis.map { monotonicMillis() + UInt64(max($0, 1)) } ?? 0, ordering: .releasing)
    }

    /// Connects to a TCP address with a timeout.
    public static func connect(to address: SocketAddress, timeoutMillis: Int32) throws(SystemError) -> StreamConnection {
        let fd = try systemCall("socket") { socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0) }
        let connection = StreamConnection(fd: fd, remote: address.description, remoteHost: address.host)
        let status = address.withSockaddr { Glibc.connect(fd, $0, $1) }
        if status != 0 {
            guard errno == EINPROGRESS else { throw SystemError("connect") }
            var pollfd = Glibc.pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            let ready = try systemCall("poll") { poll(&pollfd, 1, timeoutMillis) }
            guard ready > 0 else { throw SystemError("connect", errno: ETIMEDOUT) }
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
            guard error == 0 else { throw SystemError("connect", errno: error) }
        }
        try connection.setBlocking()
        connection.disableNagle()
        return connection
    }

    /// Tries every address at once and closes what it opened: per host, 0 when it connected,
    /// else the errno (ETIMEDOUT: no answer within `timeoutMillis`; EINVAL: not an address).
    /// A probe, not a connection: a peer with an IPv4 and an IPv6 address costs one timeout, not two.
    public static func connectOutcomes(hosts: [String], port: UInt16, timeoutMillis: Int32) -> [String: Int32] {
        var outcomes: [String: Int32] = [:]
        var pending: [(host: String, fd: Int32)] = []
        for host in hosts where outcomes[host] == nil && !pending.contains(where: { $0.host == host }) {
            guard let address = try? SocketAddress(host: host, port: port) else { outcomes[host] = EINVAL; continue }
            let fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard fd >= 0 else { outcomes[host] = errno; continue }
            if address.withSockaddr({ Glibc.connect(fd, $0, $1) }) == 0 {
                outcomes[host] = 0
                Glibc.close(fd)
            } else if errno == EINPROGRESS {
                pending.append((host, fd))
            } else {
                outcomes[host] = errno
                Glibc.close(fd)
            }
        }
        let deadline = monotonicMillis() + UInt64(max(timeoutMillis, 0))
        while !pending.isEmpty {
            let now = monotonicMillis()
            guard now < deadline else { break }
            var fds = pending.map { pollfd(fd: $0.fd, events: Int16(POLLOUT), revents: 0) }
            guard poll(&fds, nfds_t(fds.count), Int32(deadline - now)) > 0 else { continue }
            for (index, ready) in fds.enumerated().reversed() where ready.revents != 0 {
                var error: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(ready.fd, SOL_SOCKET, SO_ERROR, &error, &length)
                outcomes[pending[index].host] = error
                Glibc.close(ready.fd)
                pending.remove(at: index)
            }
        }
        for (host, fd) in pending {
            outcomes[host] = ETIMEDOUT
            Glibc.close(fd)
        }
        return outcomes
    }

    /// Connects to a Unix stream socket.
    public static func connect(unixPath path: String) throws(SystemError) -> StreamConnection {
        let fd = try systemCall("socket") { socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
        let connection = StreamConnection(fd: fd, remote: "local")
        var address = try UnixAddress(path: path)
        _ = try address.withSockaddr { (pointer, length) throws(SystemError) in
            try systemCall("connect(\(path))") { Glibc.connect(fd, pointer, length) }
        }
        return connection
    }

    func setBlocking() throws(SystemError) {
        let flags = try systemCall("fcntl") { fcntl(fd, F_GETFL) }
        try systemCall("fcntl") { fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) }
    }

    /// Sends small writes at once (TCP only). The handshake is several small
    /// messages in a row; Nagle's algorithm would hold each back for an ACK
    /// that the peer's delayed-ACK timer sends only after 40 ms.
    public func disableNagle() {
        _ = try? setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, Int32(1), "setsockopt(TCP_NODELAY)")
    }

    /// Limits how long one read or write may block; 0 means forever.
    public func setTimeout(millis: Int) throws(SystemError) {
        let value = timeval(tv_sec: millis / 1000, tv_usec: (millis % 1000) * 1000)
        try setOption(fd, SOL_SOCKET, SO_RCVTIMEO, value, "setsockopt(SO_RCVTIMEO)")
        try setOption(fd, SOL_SOCKET, SO_SNDTIMEO, value, "setsockopt(SO_SNDTIMEO)")
    }

    /// The user id of the process on the other end of a Unix socket (SO_PEERCRED).
    public func peerUID() throws(SystemError) -> UInt32 {
        // struct ucred { pid_t pid; uid_t uid; gid_t gid; }: Glibc imports it only under _GNU_SOURCE.
        var credentials: [UInt32] = [0, 0, 0]
        var length = socklen_t(MemoryLayout<UInt32>.size * 3)
        try systemCall("getsockopt(SO_PEERCRED)") {
            credentials.withUnsafeMutableBytes { getsockopt(fd, SOL_SOCKET, SO_PEERCRED, $0.baseAddress, &length) }
        }
        guard length == MemoryLayout<UInt32>.size * 3 else { throw SystemError("getsockopt(SO_PEERCRED)", errno: EINVAL) }
        return credentials[1]
    }

    /// Limits how long one write may block (a peer that stops reading); 0 means forever.
    public func setSendTimeout(millis: Int) throws(SystemError) {
        let value = timeval(tv_sec: millis / 1000, tv_usec: (millis % 1000) * 1000)
        try setOption(fd, SOL_SOCKET, SO_SNDTIMEO, value, "setsockopt(SO_SNDTIMEO)")
    }

    public func write(_ bytes: [UInt8]) throws(SystemError) {
        try writeLock.withLock { _ throws(SystemError) in
            guard !isClosed else { throw SystemError("send", errno: EPIPE) }
            var sent = 0
            while sent < bytes.count {
                let count = try systemCall("send") {
                    bytes.withUnsafeBytes { send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
                }
                sent += count
            }
        }
    }

    /// Writes `bytes` with `descriptors` attached to their first byte (SCM_RIGHTS,
    /// Unix sockets only): the receiver has them by the time it reads that byte.
    /// The descriptors stay the caller's; the kernel passes duplicates.
    public func write(_ bytes: [UInt8], passing descriptors: [Int32]) throws(SystemError) {
        guard !descriptors.isEmpty else { return try write(bytes) }
        guard descriptors.count <= Int(HANDOFF_MAX_PASSED_FDS), !bytes.isEmpty else { throw SystemError("sendmsg", errno: EINVAL) }
        try writeLock.withLock { _ throws(SystemError) in
            guard !isClosed else { throw SystemError("sendmsg", errno: EPIPE) }
            let first = try systemCall("sendmsg") {
                bytes.withUnsafeBytes { raw in
                    descriptors.withUnsafeBufferPointer { handoff_send_with_fds(fd, raw.baseAddress, raw.count, $0.baseAddress, Int32($0.count), 0) }
                }
            }
            var sent = first
            while sent < bytes.count {
                let count = try systemCall("send") {
                    bytes.withUnsafeBytes { send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
                }
                sent += count
            }
        }
    }

    /// Takes the next `count` received descriptors, for a message that declares
    /// them; the caller owns (and closes) them. A message that declares more
    /// than arrived is EBADMSG: descriptors come no later than the message's first byte.
    public func takeDescriptors(_ count: Int) throws(SystemError) -> [Int32] {
        guard count > 0 else { return [] }
        return try readState.withLock { (state) throws(SystemError) -> [Int32] in
            guard state.descriptors.count >= count else { throw SystemError("a message's descriptors", errno: EBADMSG) }
            defer { state.descriptors.removeFirst(count) }
            return Array(state.descriptors.prefix(count))
        }
    }

    /// Descriptors received and not yet taken (for tests).
    var queuedDescriptors: Int { readState.withLock { $0.descriptors.count } }

    /// Reads exactly `count` bytes; a peer that closes early is ECONNRESET.
    public func read(exactly count: Int) throws(SystemError) -> [UInt8] {
        try readState.withLock { (state) throws(SystemError) -> [UInt8] in
            while state.buffer.count < count {
                try fill(&state, wanted: count - state.buffer.count)
            }
            let out = Array(state.buffer.prefix(count))
            state.buffer.removeFirst(count)
            state.searched = 0
            return out
        }
    }

    /// Reads at least one byte and at most `destination.count` into `destination`:
    /// what is buffered, else one recv straight into it (large transfers: no
    /// intermediate array). Returns how many; a peer that closed is ECONNRESET.
    public func read(into destination: UnsafeMutableRawBufferPointer) throws(SystemError) -> Int {
        guard let target = destination.baseAddress, destination.count > 0 else { return 0 }
        return try readState.withLock { (state) throws(SystemError) -> Int in
            if !state.buffer.isEmpty {
                let count = min(state.buffer.count, destination.count)
                state.buffer.withUnsafeBytes { target.copyMemory(from: $0.baseAddress!, byteCount: count) }
                state.buffer.removeFirst(count)
                state.searched = 0
                return count
            }
            guard !isClosed else { throw SystemError("recv", errno: ECONNRESET) }
            try waitForDeadline()
            let received = try systemCall("recv") { recv(fd, target, destination.count, 0) }
            guard received > 0 else { throw SystemError("recv", errno: ECONNRESET) }
            return received
        }
    }

    /// Reads one newline-terminated line (without the newline). Lines longer
    /// than `maxBytes` are refused with EMSGSIZE; nil at a clean end of stream.
    public func readLine(maxBytes: Int) throws(SystemError) -> [UInt8]? {
        try readState.withLock { (state) throws(SystemError) -> [UInt8]? in
            while true {
                if let newline = state.buffer[min(state.searched, state.buffer.count)...].firstIndex(of: UInt8(ascii: "\n")) {
                    let line = Array(state.buffer[..<newline])
                    state.buffer.removeFirst(newline + 1)
                    state.searched = 0
                    state.shrinkWhenEmpty()
                    return line
                }
                state.searched = state.buffer.count
                guard state.buffer.count <= maxBytes else { throw SystemError("read line", errno: EMSGSIZE) }
                do throws(SystemError) {
                    try fill(&state, wanted: state.lineReadBytes)
                } catch {
                    if error.errno == ECONNRESET && state.buffer.isEmpty { return nil }
                    throw error
                }
            }
        }
    }

    private func fill(_ state: inout ReadState, wanted: Int, flags: Int32 = 0) throws(SystemError) {
        guard !isClosed else { throw SystemError("recv", errno: ECONNRESET) }
        if flags & Int32(MSG_DONTWAIT) == 0 { try waitForDeadline() }
        if wanted > state.scratch.count, state.scratch.count < Self.maximumScratchBytes {
            state.scratch = [UInt8](repeating: 0, count: Self.maximumScratchBytes)
        }
        let chunk = min(max(wanted, 4096), state.scratch.count)
        let received: Int
        if carriesDescriptors {
            var passed = [Int32](repeating: -1, count: Int(HANDOFF_MAX_PASSED_FDS))
            var (count, truncated): (Int32, Int32) = (0, 0)
            received = try systemCall("recvmsg") {
                state.scratch.withUnsafeMutableBytes { raw in
                    passed.withUnsafeMutableBufferPointer {
                        handoff_recv_with_fds(fd, raw.baseAddress, chunk, $0.baseAddress, Int32($0.count), &count, &truncated, flags)
                    }
                }
            }
            state.descriptors.append(contentsOf: passed.prefix(Int(count)))
            // More than a message may carry, or more than any message took: the peer is not speaking the protocol.
            guard truncated == 0, state.descriptors.count <= Self.maximumQueuedDescriptors else {
                throw SystemError("recvmsg: more descriptors than messages declare", errno: ETOOMANYREFS)
            }
        } else {
            received = try systemCall("recv") {
                state.scratch.withUnsafeMutableBytes { recv(fd, $0.baseAddress, chunk, flags) }
            }
        }
        guard received > 0 else { throw SystemError("recv", errno: ECONNRESET) }
        state.buffer.append(contentsOf: state.scratch[0..<received])
    }

    // MARK: Without blocking (the event loop's connections)

    /// What one read without blocking found.
    public enum Arrival: Equatable, Sendable {
        /// Bytes (and any descriptors with them) were added to the buffer.
        case bytes
        /// Nothing is waiting now.
        case nothing
        /// The peer closed its end (or reset it) and everything before was read.
        case ended
    }

    /// Reads what is waiting (one recv) into the buffer `bufferedLines` takes lines from; never
    /// blocks. Descriptors are checked as `readLine` checks them; the buffer grows as there.
    public func receiveWaiting() throws(SystemError) -> Arrival {
        try readState.withLock { (state) throws(SystemError) -> Arrival in
            do throws(SystemError) {
                try fill(&state, wanted: state.lineReadBytes, flags: Int32(MSG_DONTWAIT))
                return .bytes
            } catch {
                switch error.errno {
                case EAGAIN, EWOULDBLOCK, EINTR: return .nothing
                case ECONNRESET, EPIPE: return .ended
                default: throw error
                }
            }
        }
    }

    /// Every complete line already received (without their newlines), in order; none when there is
    /// none yet. The buffer moves once, however many lines it held. More than `maxBytes` buffered
    /// without a newline is EMSGSIZE, as in `readLine`.
    public func bufferedLines(maxBytes: Int) throws(SystemError) -> [[UInt8]] {
        try readState.withLock { (state) throws(SystemError) -> [[UInt8]] in
            var lines: [[UInt8]] = []
            var start = 0
            var from = min(state.searched, state.buffer.count)
            while let newline = state.buffer[from...].firstIndex(of: UInt8(ascii: "\n")) {
                lines.append(Array(state.buffer[start..<newline]))
                start = newline + 1
                from = start
            }
            if start > 0 { state.buffer.removeFirst(start) }
            state.searched = state.buffer.count
            state.shrinkWhenEmpty()
            guard state.buffer.count <= maxBytes else { throw SystemError("read line", errno: EMSGSIZE) }
            return lines
        }
    }

    /// Sends what the socket takes now of `bytes` from `offset`, with `descriptors` attached to the
    /// first byte (only when `offset` is 0); never blocks. How many bytes went, 0 when none could.
    public func sendWaiting(_ bytes: [UInt8], from offset: Int, passing descriptors: [Int32] = []) throws(SystemError) -> Int {
        guard offset < bytes.count else { return 0 }
        return try writeLock.withLock { _ throws(SystemError) -> Int in
            guard !isClosed else { throw SystemError("send", errno: EPIPE) }
            let sent = bytes.withUnsafeBytes { raw in
                if offset == 0, !descriptors.isEmpty {
                    return descriptors.withUnsafeBufferPointer {
                        handoff_send_with_fds(fd, raw.baseAddress, raw.count, $0.baseAddress, Int32($0.count), Int32(MSG_DONTWAIT))
                    }
                }
                return send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
            if sent >= 0 { return sent }
            if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return 0 }
            throw SystemError("send")
        }
    }

    /// The descriptor, for the event loop to watch (borrowed: this connection still closes it).
    public var descriptor: Int32 { fd }

    /// With a deadline set, waits for readable bytes only until it passes.
    private func waitForDeadline() throws(SystemError) {
        let until = deadline.load(ordering: .acquiring)
        guard until != 0 else { return }
        let now = monotonicMillis()
        guard now < until else { throw SystemError("recv (deadline)", errno: ETIMEDOUT) }
        var pollfd = Glibc.pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = try systemCall("poll") { poll(&pollfd, 1, Int32(clamping: until - now)) }
        guard ready > 0 else { throw SystemError("recv (deadline)", errno: ETIMEDOUT) }
    }

    /// Whatever is buffered or the next bytes to arrive (blocking until some do).
    public func readAvailable() throws(SystemError) -> [UInt8] {
        try readState.withLock { (state) throws(SystemError) -> [UInt8] in
            if state.buffer.isEmpty { try fill(&state, wanted: state.scratch.count) }
            defer {
                state.buffer.removeAll(keepingCapacity: true)
                state.searched = 0
            }
            return state.buffer
        }
    }

    // MARK: Raw byte streams (continuation streams)

    /// Reads into `buffer` what is already buffered, else what one recv brings
    /// (blocking until something arrives); 0 at a clean end of stream. For bytes
    /// relayed as they come, without a copy through the line buffer.
    public func readSome(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Int {
        try readState.withLock { (state) throws(SystemError) -> Int in
            if !state.buffer.isEmpty {
                let count = min(buffer.count, state.buffer.count)
                state.buffer.withUnsafeBytes { buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
                state.buffer.removeFirst(count)
                state.searched = 0
                return count
            }
            guard !isClosed else { throw SystemError("recv", errno: ECONNRESET) }
            return try systemCall("recv") { recv(fd, buffer.baseAddress, buffer.count, 0) }
        }
    }

    /// Writes all of `bytes` (blocking while the peer's buffer is full).
    public func write(_ bytes: UnsafeRawBufferPointer) throws(SystemError) {
        try writeLock.withLock { _ throws(SystemError) in
            guard !isClosed else { throw SystemError("send", errno: EPIPE) }
            var sent = 0
            while sent < bytes.count {
                sent += try systemCall("send") { send(fd, bytes.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            }
        }
    }

    /// Stops further sends; the peer sees end of stream once it has read everything.
    public func shutdownWrite() {
        guard !isClosed else { return }
        shutdown(fd, Int32(SHUT_WR))
    }

    public func markProven() { proven.store(true, ordering: .releasing) }

    /// The other end has sent nothing at all yet (the kernel's count, whoever read the bytes):
    /// a listener that must evict evicts these first, so a stranger's idle connections give way
    /// before a device in the middle of its handshake.
    var hasSentNothing: Bool { handoff_tcp_bytes_received(fd) == 0 }
    public var isProven: Bool { proven.load(ordering: .acquiring) }

    /// Ends the connection for every thread that uses it: blocked reads and
    /// writes return, later ones fail. The number is released in deinit.
    public func close() {
        if !closed.exchange(true, ordering: .acquiringAndReleasing) {
            shutdown(fd, Int32(SHUT_RDWR))
        }
    }
}

/// sockaddr_un for a filesystem path, checked against sun_path's size.
struct UnixAddress {
    var storage = sockaddr_un()

    init(path: String) throws(SystemError) {
        storage.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: storage.sun_path)
        guard bytes.count < capacity else { throw SystemError("socket path too long (\(bytes.count) bytes, limit \(capacity - 1))", errno: ENAMETOOLONG) }
        withUnsafeMutableBytes(of: &storage.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
    }

    mutating func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws(SystemError) -> R) throws(SystemError) -> R {
        try withUnsafePointer(to: &storage) { (pointer) throws(SystemError) -> R in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { (raw) throws(SystemError) -> R in
                try body(raw, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
    }
}
