import Foundation
import Glibc
import HandoffCore
import HandoffTransport

/// A connection to the local handoffd over its API socket (Docs/LOCAL-API.md).
/// Calls block until the daemon answers; concurrent calls take turns. A client
/// that subscribed to events should be read by one thread only.
public final class HandoffClient: @unchecked Sendable {
    // @unchecked Sendable: `nextID` and the request/reply exchange are guarded by `exchange`.
    public let socketPath: String
    private let connection: StreamConnection
    private var nextID: Int64 = 0
    private let exchange = NSLock()
    /// Events that arrived while a request waited for its reply: kept for `nextEvent`, never dropped.
    private let eventsLock = NSLock()
    private var bufferedEvents: [JSONValue] = []

    /// Connects to `socketPath`, else `$HANDOFF_SOCKET`, else the default path.
    /// Refuses a socket whose directory another user could write (or is a
    /// symbolic link), and a listener that runs as another user.
    public init(socketPath: String? = nil) throws(HandoffError) {
        let path = socketPath ?? LocalAPIPath.socketPath(environment: ProcessInfo.processInfo.environment,
                                                         uid: getuid(), isClient: true)
        self.socketPath = path
        let unreachable = { (reason: String) in
            HandoffError(.daemonUnavailable, "Cannot reach handoffd at \(path): \(reason).",
                         fix: "Start handoffd, or point --socket / HANDOFF_SOCKET at the socket it listens on.")
        }
        // Nothing there is the common case ("is handoffd running?"); say so before judging the directory.
        var info = stat()
        guard lstat(path, &info) == 0 else { throw unreachable(String(cString: strerror(errno))) }
        let directory = LocalAPIPath.directory(of: path)
        guard lstat(directory, &info) == 0 else { throw unreachable(String(cString: strerror(errno))) }
        try LocalAPIPath.checkDirectory(directory, Self.directoryStatus(info), uid: getuid())
        let connection: StreamConnection
        do {
            connection = try StreamConnection.connect(unixPath: path)
        } catch {
            throw unreachable("\(error)")
        }
        do throws(HandoffError) {
            try LocalAPIPath.checkPeer(uid: try Self.peerUID(connection, path: path), socketPath: path, uid: getuid())
        } catch {
            connection.close()
            throw error
        }
        self.connection = connection
    }

    static func directoryStatus(_ info: stat) -> LocalAPIPath.DirectoryStatus {
        let kind: LocalAPIPath.DirectoryStatus.Kind = switch info.st_mode & S_IFMT {
        case S_IFDIR: .directory
        case S_IFLNK: .symbolicLink
        default: .other
        }
        return .init(kind: kind, owner: info.st_uid, permissions: info.st_mode & 0o7777)
    }

    /// The uid of the process on the other end of a connected Unix socket.
    static func peerUID(_ connection: StreamConnection, path: String) throws(HandoffError) -> UInt32 {
        do {
            return try connection.peerUID()
        } catch {
            throw HandoffError(.daemonUnavailable, "Cannot tell who listens on \(path): \(error).",
                               fix: "Point --socket / HANDOFF_SOCKET at a Unix socket of handoffd.")
        }
    }

    deinit { connection.close() }

    /// Sends one request and returns its `result`; a daemon error is thrown as is.
    public func request(_ op: String, _ parameters: [String: JSONValue] = [:]) throws(HandoffError) -> JSONValue {
        exchange.lock()
        defer { exchange.unlock() }
        nextID += 1
        var fields = parameters
        fields["op"] = .string(op)
        fields["id"] = .integer(nextID)
        do {
            try connection.write(Array((JSONValue.object(fields).encodedLine() + "\n").utf8))
        } catch {
            throw lost(error)
        }
        while true {
            let reply = try readMessage()
            // Events may interleave with replies once subscribed; replies carry our id.
            if reply["event"] != nil {
                eventsLock.lock()
                bufferedEvents.append(reply)
                eventsLock.unlock()
                continue
            }
            guard reply["id"] == .integer(nextID) else { continue }
            if reply["ok"] == .bool(true) { return reply["result"] ?? .null }
            throw Self.error(from: reply["error"])
        }
    }

    /// Subscribes to events; then read them with `nextEvent()`.
    public func subscribe() throws(HandoffError) {
        _ = try request("subscribe")
    }

    /// Blocks until the daemon sends the next event; nil when the daemon closes the connection.
    public func nextEvent() throws(HandoffError) -> JSONValue? {
        eventsLock.lock()
        if !bufferedEvents.isEmpty {
            defer { eventsLock.unlock() }
            return bufferedEvents.removeFirst()
        }
        eventsLock.unlock()
        while true {
            let message: JSONValue
            do {
                message = try readMessage()
            } catch where error.code == .daemonUnavailable {
                return nil
            }
            if message["event"] != nil { return message }
        }
    }

    private func readMessage() throws(HandoffError) -> JSONValue {
        let line: [UInt8]?
        do {
            line = try connection.readLine(maxBytes: 256 * 1024 * 1024)
        } catch {
            throw lost(error)
        }
        guard let line else {
            throw HandoffError(.daemonUnavailable, "handoffd closed the connection.", fix: "Check that handoffd is still running (its log says why it stopped).")
        }
        return try JSONValue.parse(Data(line))
    }

    private func lost(_ error: SystemError) -> HandoffError {
        HandoffError(.daemonUnavailable, "Lost the connection to handoffd at \(socketPath): \(error).",
                     fix: "Check that handoffd is still running.")
    }

    static func error(from value: JSONValue?) -> HandoffError {
        guard let value, let code = value["code"]?.stringValue.flatMap(HandoffError.Code.init(rawValue:)) else {
            return HandoffError(.internal, "handoffd answered with an error this client does not understand.",
                                fix: "Make sure handoff-peer and handoffd are the same version.")
        }
        return HandoffError(code, value["message"]?.stringValue ?? "", fix: value["fix"]?.stringValue ?? "")
    }
}

// MARK: - Typed calls

extension HandoffClient {
    /// Makes `activity` current: peers that trust this device list it. Returns the daemon's receipt,
    /// including warnings (for example a userInfo above Apple's 3 KB guidance).
    @discardableResult
    public func publish(_ activity: Activity) throws(HandoffError) -> JSONValue {
        try activity.validate()
        return try request("publish", ["activity": activity.json])
    }

    public func resign() throws(HandoffError) { _ = try request("resign") }
    public func invalidate() throws(HandoffError) { _ = try request("invalidate") }

    /// Peers in range, each with its current offer (or null).
    public func list() throws(HandoffError) -> [JSONValue] {
        try request("list")["peers"]?.arrayValue ?? []
    }

    /// Fetches and verifies the offer of `peer` (device id, unique prefix, or name).
    public func accept(peer: String) throws(HandoffError) -> Activity {
        let result = try request("accept", ["peer": .string(peer)])
        guard let body = result["activity"] else {
            throw HandoffError(.internal, "handoffd accepted but returned no activity.", fix: "Report this as a bug.")
        }
        return try Activity(json: body)
    }
}
