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

    /// What the server does with a client's hello.
    enum Decision {
        /// Answer under `psk`; `expectedClient` is the device the hint named (a fetch).
        case answer(psk: [UInt8], expectedClient: DeviceKey?)
        /// Say no in the clear, naming nothing: the client proved nothing yet.
        case refuse(TransferFrame.Refusal)
    }

    /// Runs the client side of the handshake on a connected socket; a fetch needs the pair's secrets.
    static func connect(_ connection: StreamConnection, identity: Identity, purpose: Handshake.Purpose,
                        secrets: PairSecrets?, peerName: String? = nil) throws(HandoffError) -> SecureChannel {
        let plain = StreamFrameChannel(connection: connection)
        let client = Handshake.Client(identity: identity, purpose: purpose, secrets: secrets)
        try plain.send(.hello(client.hello))
        let answer: [UInt8]
        switch try plain.receive() {
        case let .serverHello(bytes):
            answer = bytes
        case let .refusal(refusal):
            throw unauthenticatedRefusal(refusal, purpose: purpose, from: peerName ?? connection.remote)
        default:
            throw HandoffError(.payloadInvalid, "The peer did not answer the handshake.", fix: "Make sure both hosts run the same handoff version.")
        }
        let (auth, session) = try client.receive(serverHello: answer)
        try plain.send(.clientAuth(auth))
        return try establish(connection, session: session)
    }

    /// A refusal before the handshake proves nothing about who sent it: a fetch
    /// reports it as the network's fault (anyone on the path could have sent
    /// it); a pairing refusal keeps its code (pairing has no secret to prove).
    static func unauthenticatedRefusal(_ refusal: TransferFrame.Refusal, purpose: Handshake.Purpose, from peer: String) -> HandoffError {
        switch purpose {
        case .pair:
            return HandoffError(refusal.code, "\(peer) refused: \(refusal.message).",
                                fix: "Run 'handoff-peer pair' on \(peer) first (it waits for this host), then pair again here.")
        case .fetch, .stream:
            return HandoffError(.network, "The host at \(peer)'s address did not recognise this device and did not identify itself (\(refusal.message)).",
                                fix: "If it is \(peer) and it lost its pairing with this device, pair again; otherwise its address changed: wait for its next announcement and accept again.")
        }
    }

    /// Runs the server side of the handshake on an accepted socket. `decide`
    /// sees the hello first: the server says who it is only under the PSK it picks.
    static func accept(_ connection: StreamConnection, identity: Identity,
                       decide: (Handshake.Hello) -> Decision) throws(HandoffError) -> SecureChannel {
        let plain = StreamFrameChannel(connection: connection)
        let server = Handshake.Server(identity: identity)
        guard case let .hello(bytes) = try plain.receive() else {
            throw HandoffError(.payloadInvalid, "The peer did not start with a handshake.", fix: "Make sure both hosts run the same handoff version.")
        }
        let hello: Handshake.Hello
        do {
            hello = try Handshake.Hello(bytes)
        } catch {
            if bytes.first != Handshake.version {
                // An older or newer client hears which version to install; nothing else.
                try? plain.send(.refusal(.init(code: .invalidRequest, message: "handshake version \(bytes.first ?? 0) is not supported; this host speaks \(Handshake.version)")))
            }
            throw error
        }
        switch decide(hello) {
        case let .refuse(refusal):
            try plain.send(.refusal(refusal))
            throw HandoffError(refusal.code, "refused before the handshake: \(refusal.message)", fix: "None needed here.")
        case let .answer(psk, expectedClient):
            try plain.send(.serverHello(try server.answer(hello, psk: psk, expectedClient: expectedClient)))
        }
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
        let (header, body) = frame.encodedParts()
        // The first record carries the header and the start of the body; the rest are body slices.
        let first = min(body.count, Self.recordPlaintextBytes - header.count)
        let opening = header + body[0..<first]
        try write(opening.withUnsafeBytes { makeRecord($0, last: first == body.count) })
        var offset = first
        while offset < body.count {
            let end = min(offset + Self.recordPlaintextBytes, body.count)
            try write(body.withUnsafeBytes { makeRecord(UnsafeRawBufferPointer(rebasing: $0[offset..<end]), last: end == body.count) })
            offset = end
        }
    }

    /// One allocation per record: the length prefix and the ciphertext written in place.
    private func makeRecord(_ plaintext: UnsafeRawBufferPointer, last: Bool) -> [UInt8] {
        let sealedLength = plaintext.count + SecretStream.overheadBytes
        return [UInt8](unsafeUninitializedCapacity: 4 + sealedLength) { buffer, count in
            withUnsafeBytes(of: UInt32(sealedLength).bigEndian) { UnsafeMutableRawBufferPointer(buffer).copyMemory(from: $0) }
            sender.push(plaintext, tag: last ? SecretStream.tagPush : SecretStream.tagMessage,
                        into: UnsafeMutableRawPointer(buffer.baseAddress! + 4))
            count = 4 + sealedLength
        }
    }

    private func write(_ record: [UInt8]) throws(HandoffError) {
        do {
            try connection.write(record)
        } catch {
            throw StreamFrameChannel.lost(error, peer: connection.remote)
        }
    }

    /// Reads one record; returns the ciphertext.
    private func readRecord() throws(HandoffError) -> [UInt8] {
        do {
            var reader = ByteReader(try connection.read(exactly: 4))
            let length = Int(try reader.readUInt32BE())
            guard length >= SecretStream.overheadBytes, length <= Self.recordPlaintextBytes + SecretStream.overheadBytes else {
                throw HandoffError(.payloadInvalid, "The peer sent a record of \(length) bytes.", fix: "Make sure both hosts run the same handoff version.")
            }
            return try connection.read(exactly: length)
        } catch let error as SystemError {
            throw StreamFrameChannel.lost(error, peer: connection.remote)
        } catch let error as HandoffError {
            throw error
        } catch {
            throw HandoffError(.payloadInvalid, "\(error)", fix: "Make sure both hosts run the same handoff version.")
        }
    }

    private func inauthentic() -> HandoffError {
        HandoffError(.signatureMismatch, "A record from \(connection.remote) failed authentication: it was altered, replayed or reordered.",
                     fix: "Try again; if it repeats, something on the network alters traffic.")
    }

    func receive() throws(HandoffError) -> TransferFrame {
        // The first record starts with the frame header, which says how long the body is:
        // the body then grows record by record, up to that size and no further.
        let firstRecord = try readRecord()
        var first = [UInt8](repeating: 0, count: firstRecord.count - SecretStream.overheadBytes)
        let firstTag = firstRecord.withUnsafeBytes { input in first.withUnsafeMutableBytes { receiver.pull(input, into: $0.baseAddress!) } }
        guard let firstTag else { throw inauthentic() }
        let kind: UInt8
        let length: Int
        do {
            (kind, length) = try TransferFrame.bodyLength(header: Array(first.prefix(TransferFrame.headerBytes)))
        } catch {
            throw HandoffError(.payloadInvalid, "The peer sent a bad frame: \(error).", fix: "Make sure both hosts run the same handoff version.")
        }
        // The body grows as authenticated records arrive, so a peer that merely
        // declares a large frame makes us hold nothing it has not sent.
        var body = Array(first[TransferFrame.headerBytes...])
        guard body.count <= length else { throw HandoffError(.payloadInvalid, "The frame is longer than its header says.", fix: "Make sure both hosts run the same handoff version.") }
        body.reserveCapacity(min(length, 4 * Self.recordPlaintextBytes))
        var tag = firstTag
        while tag != SecretStream.tagPush {
            let record = try readRecord()
            var plaintext = [UInt8](repeating: 0, count: record.count - SecretStream.overheadBytes)
            let pulled = record.withUnsafeBytes { input in plaintext.withUnsafeMutableBytes { receiver.pull(input, into: $0.baseAddress!) } }
            // Authenticate first: a replayed or injected record is reported as what it is.
            guard let pulled else { throw inauthentic() }
            guard body.count + plaintext.count <= length else {
                throw HandoffError(.payloadInvalid, "The frame is longer than its header says.", fix: "Make sure both hosts run the same handoff version.")
            }
            body += plaintext
            tag = pulled
        }
        let received = body.count
        guard received == length else {
            throw HandoffError(.payloadInvalid, "The frame ended \(length - received) bytes short.", fix: "Make sure both hosts run the same handoff version.")
        }
        do {
            return try TransferFrame(kind: kind, body: body)
        } catch {
            throw HandoffError(.payloadInvalid, "The peer sent a bad frame: \(error).", fix: "Make sure both hosts run the same handoff version.")
        }
    }

    func close() { connection.close() }
}

// MARK: - Raw records, for continuation streams (Daemon+Streams.swift frames them itself)

extension SecureChannel {
    /// Seals `plaintext` under `tag` as `u32 BE length || ciphertext` into `output`
    /// (room for 4 + plaintext + overhead bytes); returns how many bytes it wrote.
    func sealRecord(_ plaintext: UnsafeRawBufferPointer, tag: UInt8, into output: UnsafeMutableRawPointer) -> Int {
        let sealedLength = plaintext.count + SecretStream.overheadBytes
        output.storeBytes(of: UInt32(sealedLength).bigEndian, as: UInt32.self)
        sender.push(plaintext, tag: tag, into: output + 4)
        return 4 + sealedLength
    }

    /// Opens one record's ciphertext into `output` (room for ciphertext - overhead bytes); its tag, or nil if inauthentic.
    func openRecord(_ ciphertext: UnsafeRawBufferPointer, into output: UnsafeMutableRawPointer) -> UInt8? {
        receiver.pull(ciphertext, into: output)
    }
}
