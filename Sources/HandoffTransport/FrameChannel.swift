import Glibc
import HandoffCore

/// Carries transfer frames between two hosts. The socket implementation is
/// `StreamFrameChannel`; issue-specific layers (encryption) wrap this protocol.
public protocol FrameChannel: Sendable {
    func send(_ frame: TransferFrame) throws(HandoffError)
    func receive() throws(HandoffError) -> TransferFrame
    func close()
}

/// Transfer frames over a TCP connection, with the header checked against
/// `limits` before any of the body is read. The daemon uses it in the clear,
/// for the handshake only; `.authenticated` is for tests of the exchange.
public struct StreamFrameChannel: FrameChannel {
    public let connection: StreamConnection
    public let limits: TransferFrame.Limits

    public init(connection: StreamConnection, limits: TransferFrame.Limits = .clear) {
        self.connection = connection
        self.limits = limits
    }

    public func send(_ frame: TransferFrame) throws(HandoffError) {
        do {
            try connection.write(frame.encoded())
        } catch {
            throw Self.lost(error, peer: connection.remote)
        }
    }

    public func receive() throws(HandoffError) -> TransferFrame {
        do {
            let header = try connection.read(exactly: TransferFrame.headerBytes)
            let (kind, length) = try TransferFrame.bodyLength(header: header, limits: limits)
            let body = try connection.read(exactly: length)
            return try TransferFrame(kind: kind, body: body)
        } catch let error as SystemError {
            throw Self.lost(error, peer: connection.remote)
        } catch let error as WireError {
            throw HandoffError(.payloadInvalid, "The peer at \(connection.remote) sent a bad frame: \(error).",
                               fix: "Make sure both hosts run the same handoff version.")
        } catch {
            throw HandoffError(.internal, "\(error)", fix: "Report this as a bug.")
        }
    }

    public func close() { connection.close() }

    public static func lost(_ error: SystemError, peer: String) -> HandoffError {
        if error.errno == EAGAIN || error.errno == ETIMEDOUT {
            return HandoffError(.timedOut, "The peer at \(peer) stopped answering.",
                                fix: "Check that the other host is awake and still on the same network, then accept again.")
        }
        return HandoffError(.connectionLost, "The connection to \(peer) was lost (\(error)).",
                            fix: "Check that handoffd still runs on the other host, then accept again.")
    }
}
