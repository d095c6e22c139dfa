import Foundation
import Glibc
import Synchronization

/// A listening stream socket (TCP or Unix). Each accepted connection is handed
/// to `handler` on a thread of its own, so a slow peer never blocks another.
public final class StreamListener: Sendable {
    public let fd: Int32
    /// The bound TCP port (0 for Unix sockets).
    public let port: UInt16
    private let stopped = Atomic<Bool>(false)

    private init(fd: Int32, port: UInt16) {
        self.fd = fd
        self.port = port
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

    /// Accepts on a dedicated thread until `stop()`.
    public func run(name: String, handler: @escaping @Sendable (StreamConnection) -> Void) {
        let thread = Thread { [self] in
            while !stopped.load(ordering: .acquiring) {
                var pollfd = Glibc.pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&pollfd, 1, 500) > 0 else { continue }
                var storage = sockaddr_storage()
                var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
                let client = withUnsafeMutablePointer(to: &storage) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { accept(fd, $0, &length) }
                }
                guard client >= 0 else { continue }
                _ = fcntl(client, F_SETFD, FD_CLOEXEC)
                let remote = port == 0 ? "local" : SocketAddress(storage: storage, length: length).description
                let connection = StreamConnection(fd: client, remote: remote)
                if port != 0 { connection.disableNagle() }
                let worker = Thread { handler(connection) }
                worker.name = "\(name) connection"
                worker.start()
            }
        }
        thread.name = name
        thread.start()
    }

    public func stop() {
        if !stopped.exchange(true, ordering: .acquiringAndReleasing) {
            Glibc.close(fd)
        }
    }
}
