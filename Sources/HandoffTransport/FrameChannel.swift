import Glibc
import HandoffRuntime
import HandoffCore

/// Carries transfer frames between two hosts. The socket implementation is
/// `StreamFrameChannel`; issue-specific layers (encryption) wrap this protocol.
public protocol FrameChannel: Sendable {
    func send(_ frame: TransferFrame) throws(HandoffError)
    func receive() throws(HandoffError) -> TransferFrame
    func close()
    /// Sends `payload` from `offset` on: a `payload` frame from 0, else `payloadFrom`.
    func sendPayload(_ payload: [UInt8], from offset: Int) throws(HandoffError)
    /// Receives a `payload` or `payloadFrom` frame into the region `destination`
    /// returns once the frame's header is known (`start`); `received` hears how many
    /// bytes of that region are filled (and authenticated) so far. Any other frame
    /// is returned instead, whole. `discarded` hears how many bytes of a record had
    /// arrived when the connection failed in its middle (a resume fetches them again).
    func receivePayload(into destination: (PayloadStart) throws(HandoffError) -> PayloadRegion,
                        received: (Int) -> Void, discarded: (Int) -> Void) throws(HandoffError) -> TransferFrame?
}

/// Where an arriving payload frame goes: `count` bytes of `buffer` from `offset` on.
public struct PayloadRegion: Sendable {
    public let buffer: PayloadBuffer
    public let offset: Int
    public let count: Int

    public init(buffer: PayloadBuffer, offset: Int, count: Int) {
        precondition(offset >= 0 && offset + count <= buffer.count, "a region outside its payload buffer")
        self.buffer = buffer
        self.offset = offset
        self.count = count
    }

    /// Writes `bytes` at `position` within the region.
    public func write(_ bytes: UnsafeRawBufferPointer, at position: Int) throws(HandoffError) {
        precondition(position >= 0 && position + bytes.count <= count, "a write outside the payload region")
        do {
            try buffer.write(bytes, at: offset + position)
        } catch {
            throw HandoffError(.internal, "Cannot hold the arriving payload: \(error).", fix: "Free some memory on this host, then accept again.")
        }
    }
}

/// Where an arriving payload frame starts in the payload and how many bytes it carries.
public struct PayloadStart: Equatable, Sendable {
    public var offset: Int
    public var length: Int
    public init(offset: Int, length: Int) {
        self.offset = offset
        self.length = length
    }
}

extension FrameChannel {
    /// For channels without records (tests, the clear channel): the whole frame, then a copy.
    public func sendPayload(_ payload: [UInt8], from offset: Int) throws(HandoffError) {
        try send(offset == 0 ? .payload(payload) : .payloadFrom(offset: UInt64(offset), bytes: Array(payload[offset...])))
    }

    public func receivePayload(into destination: (PayloadStart) throws(HandoffError) -> PayloadRegion,
                               received: (Int) -> Void, discarded: (Int) -> Void) throws(HandoffError) -> TransferFrame? {
        let frame = try receive()
        let (start, bytes): (PayloadStart, [UInt8])
        switch frame {
        case let .payload(payload): (start, bytes) = (PayloadStart(offset: 0, length: payload.count), payload)
        case let .payloadFrom(offset, payload): (start, bytes) = (PayloadStart(offset: Int(offset), length: payload.count), payload)
        default: return frame
        }
        let region = try destination(start)
        guard region.count == bytes.count else {
            throw HandoffError(.payloadInvalid, "The payload frame does not fit the space for it.", fix: "Accept again.")
        }
        if !bytes.isEmpty {
            let failure = bytes.withUnsafeBytes { raw in Result { () throws(HandoffError) in try region.write(raw, at: 0) } }
            try failure.get()
        }
        received(bytes.count)
        return nil
    }
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
        // A reset before anything was exchanged is also how a host turns away connections over
        // its limits (5 a second and 4 at once from one address; Docs/SECURITY.md).
        let reset = error.errno == ECONNRESET
        return HandoffError(.connectionLost, "The connection to \(peer) was lost (\(error)).",
                            fix: "Check that handoffd still runs on the other host, then accept again."
                                + (reset ? " A reset can also mean too many connections from this host at once: a host accepts at most 4 at a time from one address, and 20 a second from a paired device's address (5 from any other); wait a second." : ""))
    }
}
