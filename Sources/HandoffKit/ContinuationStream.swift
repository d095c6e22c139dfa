import FoundationEssentials
import Glibc
import HandoffAPI
import HandoffCore
import HandoffTransport
import HandoffRuntime

/// A byte stream between the app that published an activity and the app
/// that continued it on another host (Apple: the input and output streams of
/// `getContinuationStreams` / `userActivity(_:didReceive:outputStream:)`).
/// The daemons encrypt and relay it; writes block while the other app is not
/// reading (flow control). `closeWrite()` makes the other app read end of
/// stream while this side can still read; `close()` ends both directions.
/// An abnormal end (a host gone) also reads as end of stream; writes then fail.
public final class ContinuationStream: @unchecked Sendable {
    // @unchecked Sendable: StreamConnection is thread-safe; one thread may read while another writes.
    private let connection: StreamConnection
    /// The device id of the other host.
    public let peer: String
    /// The sequence of the activity the stream belongs to.
    public let sequence: UInt64

    init(connection: StreamConnection, peer: String, sequence: UInt64) {
        self.connection = connection
        self.peer = peer
        self.sequence = sequence
    }

    deinit { connection.close() }

    /// Reads into `buffer` what has arrived (blocking until something has); 0 at end of stream.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(HandoffError) -> Int {
        do {
            return try connection.readSome(into: buffer)
        } catch {
            // A relay that was cut off shuts the socket down: a reset reads as the end it is.
            if error.errno == ECONNRESET { return 0 }
            throw Self.lost(error)
        }
    }

    /// Up to `maxBytes` of what has arrived; empty at end of stream.
    public func read(maxBytes: Int = 64 * 1024) throws(HandoffError) -> [UInt8] {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, maxBytes), alignment: 1)
        defer { buffer.deallocate() }
        let count = try read(into: buffer)
        return Array(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
    }

    /// Everything until the other app closes its side, refusing more than `limit` bytes.
    public func readToEnd(limit: Int) throws(HandoffError) -> [UInt8] {
        var all: [UInt8] = []
        while true {
            let chunk = try read()
            if chunk.isEmpty { return all }
            guard all.count + chunk.count <= limit else {
                throw HandoffError(.payloadTooLarge, "The continuation stream carried more than \(limit) bytes.",
                                   fix: "Raise the limit or send less.")
            }
            all += chunk
        }
    }

    /// Writes all of `bytes`, blocking while the other side is not reading.
    public func write(_ bytes: [UInt8]) throws(HandoffError) {
        do {
            try connection.write(bytes)
        } catch {
            throw Self.lost(error)
        }
    }

    /// Stops writing: the other app reads end of stream; reading here goes on.
    public func closeWrite() { connection.shutdownWrite() }

    /// Ends the stream both ways.
    public func close() { connection.close() }

    static func lost(_ error: SystemError) -> HandoffError {
        HandoffError(.connectionLost, "The continuation stream ended: \(error).",
                     fix: "The other app or host went away; continue again to get a new stream.")
    }

    /// Connects to handoffd with the same checks as HandoffClient, sends `op`
    /// and, on success, keeps the connection for the stream's bytes.
    static func request(socketPath: String?, _ request: Request) throws(HandoffError) -> ContinuationStream {
        let path = socketPath ?? LocalAPIPath.socketPath(environment: ProcessInfo.processInfo.environment, uid: getuid(), isClient: true)
        let unreachable = { (reason: String) in
            HandoffError(.daemonUnavailable, "Cannot reach handoffd at \(path): \(reason).",
                         fix: "Start handoffd, or point --socket / HANDOFF_SOCKET at the socket it listens on.")
        }
        let connection = try HandoffClient.connectChecked(path: path)
        do throws(HandoffError) {
            do {
                try connection.write(JSONWriter.line(RequestEnvelope(id: .integer(1), request: request).json))
            } catch {
                throw unreachable("\(error)")
            }
            // The reply is the last line on this connection: the stream's bytes follow it.
            let line: [UInt8]?
            do {
                line = try connection.readLine(maxBytes: 64 * 1024)
            } catch {
                throw unreachable("\(error)")
            }
            guard let line else { throw unreachable("it closed the connection") }
            let result = try StreamResult(json: try Reply(json: try JSONValue.parse(Data(line))).outcome.get(), context: "the stream result")
            return ContinuationStream(connection: connection, peer: result.peer, sequence: UInt64(clamping: result.sequence))
        } catch {
            connection.close()
            throw error
        }
    }
}

// MARK: - Continuing side

extension HandoffClient {
    /// Opens a stream to the app that published activity `sequence` on `peer`
    /// (Apple: `getContinuationStreams`). The activity must have been published
    /// with `supportsContinuationStreams` and its app must be waiting for one.
    public func openContinuationStream(peer: String?, sequence: UInt64) throws(HandoffError) -> ContinuationStream {
        try ContinuationStream.request(socketPath: socketPath, .openStream(peer: peer, sequence: sequence))
    }
}

extension Activity {
    /// For a continued activity: opens the stream to the app that published it (Apple: `getContinuationStreams`).
    public func openContinuationStream(socketPath: String? = nil) throws(HandoffError) -> ContinuationStream {
        guard supportsContinuationStreams else {
            throw HandoffError(.invalidRequest, "This activity was published without supportsContinuationStreams.",
                               fix: "Only activities published with supportsContinuationStreams have a stream.")
        }
        return try ContinuationStream.request(socketPath: socketPath, .openStream(peer: nil, sequence: sequence))
    }
}
