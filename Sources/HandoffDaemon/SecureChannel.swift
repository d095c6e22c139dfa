import Glibc
import HandoffCore
import HandoffCrypto
import HandoffTransport

/// Transfer frames over TCP after the handshake: each frame is cut into
/// records of at most 1 MiB, each record sealed by the direction's
/// secretstream and sent as `u32 length || ciphertext`. The record ending a
/// frame carries secretstream's PUSH tag. Any altered, dropped, reordered or
/// replayed record fails to decrypt and ends the connection.
final class SecureChannel: FrameChannel {
    static let recordPlaintextBytes = 1 << 20
    let connection: StreamConnection
    let session: Handshake.Session
    private let sender: SecretStream
    private let receiver: SecretStream

    private init(connection: StreamConnection, session: Handshake.Session, sender: SecretStream, receiver: SecretStream) {
        self.connection = connection
        self.session = session
        self.sender = sender
        self.receiver = receiver
    }

    /// Runs the client side of the handshake on a connected socket.
    static func connect(_ connection: StreamConnection, identity: Identity,
                        purpose: Handshake.Purpose) throws(HandoffError) -> SecureChannel {
        let plain = StreamFrameChannel(connection: connection)
        let client = Handshake.Client(identity: identity, purpose: purpose)
        try plain.send(.hello(client.hello))
        guard case let .serverHello(answer) = try plain.receive() else {
            throw HandoffError(.payloadInvalid, "The peer did not answer the handshake.", fix: "Make sure both hosts run the same handoff version.")
        }
        let (auth, session) = try client.receive(serverHello: answer)
        try plain.send(.clientAuth(auth))
        return try establish(connection, session: session)
    }

    /// Runs the server side of the handshake on an accepted socket.
    static func accept(_ connection: StreamConnection, identity: Identity) throws(HandoffError) -> SecureChannel {
        let plain = StreamFrameChannel(connection: connection)
        let server = Handshake.Server(identity: identity)
        guard case let .hello(hello) = try plain.receive() else {
            throw HandoffError(.payloadInvalid, "The peer did not start with a handshake.", fix: "Make sure both hosts run the same handoff version.")
        }
        let (_, answer) = try server.receive(hello: hello)
        try plain.send(.serverHello(answer))
        guard case let .clientAuth(auth) = try plain.receive() else {
            throw HandoffError(.payloadInvalid, "The peer did not authenticate.", fix: "Make sure both hosts run the same handoff version.")
        }
        return try establish(connection, session: try server.receive(clientAuth: auth))
    }

    /// Both sides send their secretstream header, then read the other's.
    private static func establish(_ connection: StreamConnection, session: Handshake.Session) throws(HandoffError) -> SecureChannel {
        let (sender, header) = SecretStream.sender(key: session.sendKey)
        do {
            try connection.write(header)
            let theirs = try connection.read(exactly: SecretStream.headerBytes)
            guard let receiver = SecretStream.receiver(key: session.receiveKey, header: theirs) else {
                throw HandoffError(.signatureMismatch, "The peer's stream header is invalid.", fix: "Try again.")
            }
            return SecureChannel(connection: connection, session: session, sender: sender, receiver: receiver)
        } catch let error as SystemError {
            throw StreamFrameChannel.lost(error, peer: connection.remote)
        } catch let error as HandoffError {
            throw error
        } catch {
            throw HandoffError(.internal, "\(error)", fix: "Report this as a bug.")
        }
    }

    func send(_ frame: TransferFrame) throws(HandoffError) {
        let bytes = frame.encoded()
        var offset = 0
        repeat {
            let end = min(offset + Self.recordPlaintextBytes, bytes.count)
            let record = sender.push(Array(bytes[offset..<end]), tag: end == bytes.count ? SecretStream.tagPush : SecretStream.tagMessage)
            var length = ByteWriter()
            length.write(UInt32(record.count))
            do {
                try connection.write(length.bytes + record)
            } catch {
                throw StreamFrameChannel.lost(error, peer: connection.remote)
            }
            offset = end
        } while offset < bytes.count
    }

    func receive() throws(HandoffError) -> TransferFrame {
        var frame: [UInt8] = []
        let limit = TransferFrame.headerBytes + TransferFrame.maximumBodyBytes
        while true {
            let record: [UInt8]
            do {
                var reader = ByteReader(try connection.read(exactly: 4))
                let length = Int(try reader.readUInt32BE())
                guard length >= SecretStream.overheadBytes, length <= Self.recordPlaintextBytes + SecretStream.overheadBytes else {
                    throw HandoffError(.payloadInvalid, "The peer sent a record of \(length) bytes.", fix: "Make sure both hosts run the same handoff version.")
                }
                record = try connection.read(exactly: length)
            } catch let error as SystemError {
                throw StreamFrameChannel.lost(error, peer: connection.remote)
            } catch let error as HandoffError {
                throw error
            } catch {
                throw HandoffError(.payloadInvalid, "\(error)", fix: "Make sure both hosts run the same handoff version.")
            }
            guard let (plaintext, tag) = receiver.pull(record) else {
                throw HandoffError(.signatureMismatch, "A record from \(connection.remote) failed authentication: it was altered, replayed or reordered.",
                                   fix: "Try again; if it repeats, something on the network alters traffic.")
            }
            frame += plaintext
            guard frame.count <= limit else {
                throw HandoffError(.payloadTooLarge, "The peer sent a frame over \(limit) bytes.", fix: "Ask the sender to shrink the activity.")
            }
            if tag == SecretStream.tagPush { break }
        }
        do {
            return try TransferFrame(decoding: frame)
        } catch {
            throw HandoffError(.payloadInvalid, "The peer sent a bad frame: \(error).", fix: "Make sure both hosts run the same handoff version.")
        }
    }

    func close() { connection.close() }
}
