import Glibc
import HandoffCore
import HandoffCrypto
import HandoffTransport
import HandoffRuntime

/// Transfer frames over TCP after the handshake: each frame is cut into
/// records of at most 1 MiB, each record sealed by the direction's record
/// stream (XChaCha20-Poly1305 secretstream or AES-256-GCM, as the handshake
/// chose) and sent as `u32 length || ciphertext`. The record ending a
/// frame carries the PUSH tag. Any altered, dropped, reordered or
/// replayed record fails to decrypt and ends the connection.
final class SecureChannel: FrameChannel {
    static let recordPlaintextBytes = 1 << 20
    let connection: StreamConnection
    let session: Handshake.Session
    private let sender: RecordStream
    private let receiver: RecordStream

    private init(connection: StreamConnection, session: Handshake.Session, sender: RecordStream, receiver: RecordStream) {
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
        /// Close unanswered: too many handshakes right now (the client asks again).
        case drop
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
        if refusal.code == .invalidRequest {
            // What a host from before handshake version 5 answers every hello of this one.
            return HandoffError(.invalidRequest, "The host at \(peer)'s address runs an older handoff that does not speak this one's handshake (\(refusal.message)).",
                                fix: "Install the same handoff version on both hosts.")
        }
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
            if let version = bytes.first, ![Handshake.version, Handshake.fetchVersion3, Handshake.streamVersion4].contains(version) {
                // A newer client hears which version to install; nothing else.
                try? plain.send(.refusal(.init(code: .invalidRequest, message: "handshake version \(version) is not supported; this host speaks \(Handshake.version)")))
            }
            throw error
        }
        switch decide(hello) {
        case let .refuse(refusal):
            try plain.send(.refusal(refusal))
            throw HandoffError(refusal.code, "refused before the handshake: \(refusal.message)", fix: "None needed here.")
        case let .answer(psk, expectedClient):
            try plain.send(.serverHello(try server.answer(hello, psk: psk, expectedClient: expectedClient)))
        case .drop:
            throw HandoffError(.connectionLost, "closed before the handshake: too many handshakes from unknown addresses right now",
                               fix: "None needed here; the other device asks again.")
        }
        guard case let .clientAuth(auth) = try plain.receive() else {
            throw HandoffError(.payloadInvalid, "The peer did not authenticate.", fix: "Make sure both hosts run the same handoff version.")
        }
        return try establish(connection, session: try server.receive(clientAuth: auth))
    }

    /// Both sides send their record stream's header, then read the other's.
    private static func establish(_ connection: StreamConnection, session: Handshake.Session) throws(HandoffError) -> SecureChannel {
        let (sender, header) = RecordStream.sender(session.cipher, key: session.sendKey)
        do {
            try connection.write(header)
            let theirs = try connection.read(exactly: RecordStream.headerBytes)
            guard let receiver = RecordStream.receiver(session.cipher, key: session.receiveKey, header: theirs) else {
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
        try typed { try body.withUnsafeBytes { try send(head: header, body: $0) } }
    }

    /// The payload straight from the published bytes: record by record into one
    /// reused record buffer, never a copy of the whole.
    func sendPayload(_ payload: [UInt8], from offset: Int) throws(HandoffError) {
        precondition(offset >= 0 && offset <= payload.count, "resume offset outside the payload")
        var head = TransferFrame.header(payloadFrom: offset, count: payload.count - offset)
        if offset > 0 { withUnsafeBytes(of: UInt64(offset).bigEndian) { head += $0 } }
        try typed { try payload.withUnsafeBytes { try send(head: head, body: UnsafeRawBufferPointer(rebasing: $0[offset...])) } }
    }

    /// The first record carries `head` and the start of the body; the rest are body slices.
    /// One record buffer serves every full record; only a shorter last one gets its own.
    private func send(head: [UInt8], body: UnsafeRawBufferPointer) throws(HandoffError) {
        let first = min(body.count, Self.recordPlaintextBytes - head.count)
        var opening = head
        opening.append(contentsOf: UnsafeRawBufferPointer(rebasing: body[0..<first]))
        var record = [UInt8]()
        try typed { try opening.withUnsafeBytes { try writeRecord($0, last: first == body.count, reusing: &record) } }
        var offset = first
        while offset < body.count {
            let end = min(offset + Self.recordPlaintextBytes, body.count)
            try writeRecord(UnsafeRawBufferPointer(rebasing: body[offset..<end]), last: end == body.count, reusing: &record)
            offset = end
        }
    }

    /// Seals one record (length prefix and ciphertext) into `record` and writes it.
    private func writeRecord(_ plaintext: UnsafeRawBufferPointer, last: Bool, reusing record: inout [UInt8]) throws(HandoffError) {
        let sealedLength = plaintext.count + RecordStream.overheadBytes
        if record.count != 4 + sealedLength {
            record = [UInt8](unsafeUninitializedCapacity: 4 + sealedLength) { _, count in count = 4 + sealedLength }
        }
        let sealed = record.withUnsafeMutableBytes { buffer in
            buffer.storeBytes(of: UInt32(sealedLength).bigEndian, as: UInt32.self)
            return sender.push(plaintext, tag: last ? RecordStream.tagPush : RecordStream.tagMessage, into: buffer.baseAddress! + 4)
        }
        guard sealed else { throw Self.keyUsedUp(connection.remote) }
        do {
            try connection.write(record)
        } catch {
            throw StreamFrameChannel.lost(error, peer: connection.remote)
        }
    }

    /// Reads one record's ciphertext into `scratch` (reused, grown to the largest
    /// record); returns its length. `meter` counts the bytes as they arrive, so a
    /// record cut off midway is still counted.
    private func readRecord(into scratch: inout [UInt8], meter: ((Int) -> Void)? = nil) throws(HandoffError) -> Int {
        do {
            var reader = ByteReader(try connection.read(exactly: 4))
            let length = Int(try reader.readUInt32BE())
            guard length >= RecordStream.overheadBytes, length <= Self.recordPlaintextBytes + RecordStream.overheadBytes else {
                throw HandoffError(.payloadInvalid, "The peer sent a record of \(length) bytes.", fix: "Make sure both hosts run the same handoff version.")
            }
            if scratch.count < length { scratch = [UInt8](repeating: 0, count: length) }
            var filled = 0
            while filled < length {
                let count = try scratch.withUnsafeMutableBytes { (raw) throws(SystemError) -> Int in
                    try connection.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[filled..<length]))
                }
                filled += count
                meter?(count)
            }
            return length
        } catch let error as SystemError {
            throw StreamFrameChannel.lost(error, peer: connection.remote)
        } catch let error as HandoffError {
            throw error
        } catch {
            throw HandoffError(.payloadInvalid, "\(error)", fix: "Make sure both hosts run the same handoff version.")
        }
    }

    /// Authenticates and decrypts the record in `ciphertext[0..<length]` into `output`
    /// (room for `length - overheadBytes`); returns its tag.
    private func open(_ ciphertext: [UInt8], length: Int, into output: UnsafeMutableRawPointer) throws(HandoffError) -> UInt8 {
        let tag = ciphertext.withUnsafeBytes { receiver.pull(UnsafeRawBufferPointer(rebasing: $0[0..<length]), into: output) }
        guard let tag else { throw inauthentic() }
        return tag
    }

    private func open(_ ciphertext: [UInt8], length: Int, into plaintext: inout [UInt8]) throws(HandoffError) -> UInt8 {
        if plaintext.isEmpty {
            // An empty array may have no storage; an empty record still needs a place to point at.
            var room = [UInt8](repeating: 0, count: 1)
            return try open(ciphertext, length: length, into: &room)
        }
        let tag = ciphertext.withUnsafeBytes { input in
            plaintext.withUnsafeMutableBytes { receiver.pull(UnsafeRawBufferPointer(rebasing: input[0..<length]), into: $0.baseAddress!) }
        }
        guard let tag else { throw inauthentic() }
        return tag
    }

    private func inauthentic() -> HandoffError {
        HandoffError(.signatureMismatch, "A record from \(connection.remote) failed authentication: it was altered, replayed or reordered.",
                     fix: "Try again; if it repeats, something on the network alters traffic.")
    }

    private static func badFrame(_ error: WireError) -> HandoffError {
        HandoffError(.payloadInvalid, "The peer sent a bad frame: \(error).", fix: "Make sure both hosts run the same handoff version.")
    }

    private static var tooLong: HandoffError {
        HandoffError(.payloadInvalid, "The frame is longer than its header says.", fix: "Make sure both hosts run the same handoff version.")
    }

    /// The first record of a frame, decrypted: its plaintext, header and tag.
    private func receiveOpening(scratch: inout [UInt8], meter: ((Int) -> Void)? = nil) throws(HandoffError) -> (plaintext: [UInt8], kind: UInt8, length: Int, tag: UInt8) {
        let recordLength = try readRecord(into: &scratch, meter: meter)
        var first = [UInt8](repeating: 0, count: recordLength - RecordStream.overheadBytes)
        let tag = try open(scratch, length: recordLength, into: &first)
        do {
            let (kind, length) = try TransferFrame.bodyLength(header: Array(first.prefix(TransferFrame.headerBytes)))
            return (first, kind, length, tag)
        } catch {
            throw Self.badFrame(error)
        }
    }

    func receive() throws(HandoffError) -> TransferFrame {
        var scratch = [UInt8]()
        let (first, kind, length, tag) = try receiveOpening(scratch: &scratch)
        return try receiveRest(kind: kind, length: length, opening: first, tag: tag, scratch: &scratch)
    }

    /// The rest of a frame, whole. The body grows as authenticated records arrive,
    /// so a peer that merely declares a large frame makes us hold nothing it has not sent.
    private func receiveRest(kind: UInt8, length: Int, opening first: [UInt8], tag firstTag: UInt8,
                             scratch: inout [UInt8]) throws(HandoffError) -> TransferFrame {
        var body = Array(first[TransferFrame.headerBytes...])
        guard body.count <= length else { throw Self.tooLong }
        body.reserveCapacity(min(length, 4 * Self.recordPlaintextBytes))
        var tag = firstTag
        while tag != RecordStream.tagPush {
            let recordLength = try readRecord(into: &scratch)
            let plaintextLength = recordLength - RecordStream.overheadBytes
            var plaintext = [UInt8](repeating: 0, count: plaintextLength)
            // Authenticate first: a replayed or injected record is reported as what it is.
            tag = try open(scratch, length: recordLength, into: &plaintext)
            guard body.count + plaintextLength <= length else { throw Self.tooLong }
            body += plaintext
        }
        guard body.count == length else {
            throw HandoffError(.payloadInvalid, "The frame ended \(length - body.count) bytes short.", fix: "Make sure both hosts run the same handoff version.")
        }
        do {
            return try TransferFrame(kind: kind, body: body)
        } catch {
            throw Self.badFrame(error)
        }
    }

    /// A payload frame lands in the region `destination` gives once the
    /// authenticated header says where it starts and how long it is: each record
    /// is decrypted into one reused plaintext buffer, which stays in cache, and
    /// written into the region from there.
    func receivePayload(into destination: (PayloadStart) throws(HandoffError) -> PayloadRegion,
                        received: (Int) -> Void, discarded: (Int) -> Void) throws(HandoffError) -> TransferFrame? {
        var scratch = [UInt8]()
        var partial = 0
        let (first, kind, length, firstTag): ([UInt8], UInt8, Int, UInt8)
        do {
            (first, kind, length, firstTag) = try receiveOpening(scratch: &scratch, meter: { partial += $0 })
        } catch {
            discarded(partial)
            throw error
        }
        let start: PayloadStart
        var headLength = TransferFrame.headerBytes
        switch kind {
        case TransferFrame.payloadKind:
            start = PayloadStart(offset: 0, length: length)
        case TransferFrame.payloadFromKind:
            headLength += TransferFrame.payloadOffsetBytes
            guard first.count >= headLength, length >= TransferFrame.payloadOffsetBytes else {
                throw HandoffError(.payloadInvalid, "The peer's resumed payload does not say where it starts.", fix: "Make sure both hosts run the same handoff version.")
            }
            var reader = ByteReader(Array(first[TransferFrame.headerBytes..<headLength]))
            let offset = (try? reader.readUInt64BE()) ?? 0
            do { try TransferFrame.checkResumeOffset(offset) } catch { throw Self.badFrame(error) }
            start = PayloadStart(offset: Int(offset), length: length - TransferFrame.payloadOffsetBytes)
        default:
            return try receiveRest(kind: kind, length: length, opening: first, tag: firstTag, scratch: &scratch)
        }
        let region = try destination(start)
        precondition(region.count == start.length, "the payload region must be exactly the frame's length")
        let opening = first.count - headLength
        guard opening <= region.count else { throw Self.tooLong }
        if opening > 0 {
            try typed { try first.withUnsafeBytes { try region.write(UnsafeRawBufferPointer(rebasing: $0[headLength...]), at: 0) } }
            received(opening)
        }
        var filled = opening
        // Large payloads are written on a thread of their own while the next record is read and
        // decrypted; what `received` hears is what is written, so a resume starts from there.
        guard firstTag != RecordStream.tagPush else {
            guard opening == region.count else {
                throw HandoffError(.payloadInvalid, "The frame ended \(region.count - opening) bytes short.", fix: "Make sure both hosts run the same handoff version.")
            }
            return nil
        }
        let writer = RecordWriter(region: region, pipelined: region.count - opening > 2 * Self.recordPlaintextBytes)
        var tag = firstTag
        do throws(HandoffError) {
            while tag != RecordStream.tagPush {
                // Each record's end is reported once it is written, in order: a resume starts there.
                let (plaintext, written) = try writer.nextBuffer()
                written.forEach(received)
                partial = 0
                let recordLength: Int
                do {
                    recordLength = try readRecord(into: &scratch, meter: { partial += $0 })
                } catch {
                    discarded(partial)
                    writer.giveBack()
                    throw error
                }
                let plaintextLength = recordLength - RecordStream.overheadBytes
                // Authenticate first: a replayed or injected record is reported as what it is.
                // (readRecord refused a record longer than the buffer.)
                do {
                    tag = try open(scratch, length: recordLength, into: plaintext.baseAddress!)
                } catch {
                    writer.giveBack()
                    throw error
                }
                guard plaintextLength <= region.count - filled else {
                    writer.giveBack()
                    throw Self.tooLong
                }
                writer.write(count: plaintextLength, at: filled)
                filled += plaintextLength
            }
            try writer.finish().forEach(received)
        } catch {
            // What was authenticated and handed over is written, and reported, before this returns.
            writer.drain().forEach(received)
            throw error
        }
        guard filled == region.count else {
            throw HandoffError(.payloadInvalid, "The frame ended \(region.count - filled) bytes short.", fix: "Make sure both hosts run the same handoff version.")
        }
        return nil
    }

    func close() { connection.close() }
}

/// Array's withUnsafeBytes rethrows untyped; this keeps the channel's errors HandoffError.
private func typed<R>(_ body: () throws -> R) throws(HandoffError) -> R {
    do {
        return try body()
    } catch let error as HandoffError {
        throw error
    } catch {
        throw HandoffError(.internal, "\(error)", fix: "Report this as a bug.")
    }
}

// MARK: - Raw records, for continuation streams (Daemon+Streams.swift frames them itself)

extension SecureChannel {
    /// Seals `plaintext` under `tag` as `u32 BE length || ciphertext` into `output`
    /// (room for 4 + plaintext + overhead bytes); returns how many bytes it wrote, nil once
    /// the direction's key has sealed all it may.
    func sealRecord(_ plaintext: UnsafeRawBufferPointer, tag: UInt8, into output: UnsafeMutableRawPointer) -> Int? {
        let sealedLength = plaintext.count + RecordStream.overheadBytes
        output.storeBytes(of: UInt32(sealedLength).bigEndian, as: UInt32.self)
        guard sender.push(plaintext, tag: tag, into: output + 4) else { return nil }
        return 4 + sealedLength
    }

    static func keyUsedUp(_ peer: String) -> HandoffError {
        HandoffError(.connectionLost, "The channel to \(peer) sealed as many records as one key may.",
                     fix: "Accept again: a new connection has new keys.")
    }

    /// Opens one record's ciphertext into `output` (room for ciphertext - overhead bytes); its tag, or nil if inauthentic.
    func openRecord(_ ciphertext: UnsafeRawBufferPointer, into output: UnsafeMutableRawPointer) -> UInt8? {
        receiver.pull(ciphertext, into: output)
    }
}

/// Writes a payload frame's decrypted records into its region, in order, from two
/// record buffers: inline, or (`pipelined`) on a thread of its own, so the fetch
/// thread reads and decrypts the next record while the kernel copies the last
/// into the memfd (issue 21: that copy cost the receiver about as much as the
/// decryption). At most one record waits to be written. The fetch thread learns
/// which records are written (their ends, in order) as it takes buffers back.
private final class RecordWriter: @unchecked Sendable {
    // @unchecked Sendable: `buffers` (the pointers), `next` and `pending` belong to the fetch
    // thread; the worker touches only the bytes of the buffer it was handed, and `progress`
    // under its lock.
    private let region: PayloadRegion
    private let worker: SerialWorker?
    /// One permit per buffer not in use; libdispatch requires it back at its start value when released.
    private let free: Signals
    private let buffers: [UnsafeMutableRawBufferPointer]
    private var next = 0
    /// Ends of the records handed over and not yet reported, oldest first.
    private var pending: [Int] = []
    /// The end of the last record written, and the first failure (after which nothing more is written).
    private let progress = Locked<(written: Int, failure: HandoffError?)>((0, nil))

    init(region: PayloadRegion, pipelined: Bool) {
        self.region = region
        worker = pipelined ? SerialWorker(name: "payload write") : nil
        buffers = (0..<(pipelined ? 2 : 1)).map { _ in
            .allocate(byteCount: SecureChannel.recordPlaintextBytes + 1, alignment: 64)
        }
        free = Signals(value: buffers.count)
    }

    deinit {
        worker?.close()
        buffers.forEach { $0.deallocate() }
    }

    /// A buffer for the next record, once the one it held is written; with the ends of the
    /// records written since the last call (one at most). Throws the write's failure.
    func nextBuffer() throws(HandoffError) -> (UnsafeMutableRawBufferPointer, written: [Int]) {
        free.wait()
        var written: [Int] = []
        if pending.count == buffers.count {
            let (end, failure) = progress.withLock { ($0.written, $0.failure) }
            if let failure {
                free.signal()
                throw failure
            }
            precondition(end >= pending[0], "a buffer came back before its record was written")
            written.append(pending.removeFirst())
        }
        let buffer = buffers[next]
        next = (next + 1) % buffers.count
        return (buffer, written)
    }

    /// Returns the buffer `nextBuffer` gave last, unused.
    func giveBack() {
        next = (next + buffers.count - 1) % buffers.count
        free.signal()
    }

    /// Writes the first `count` bytes of the buffer `nextBuffer` gave last at `position`, then frees that buffer.
    func write(count: Int, at position: Int) {
        let index = (next + buffers.count - 1) % buffers.count
        pending.append(position + count)
        let job: @Sendable () -> Void = { [self] in
            if progress.withLock({ $0.failure == nil }) {
                do throws(HandoffError) {
                    if count > 0 { try region.write(UnsafeRawBufferPointer(rebasing: buffers[index][0..<count]), at: position) }
                    progress.withLock { $0.written = position + count }
                } catch {
                    progress.withLock { $0.failure = error }
                }
            }
            free.signal()
        }
        if let worker { worker.async(job) } else { job() }
    }

    /// Waits until every record handed over is written; the ends not reported yet. Throws the first failure.
    func finish() throws(HandoffError) -> [Int] {
        let written = drain()
        if let failure = progress.withLock({ $0.failure }) { throw failure }
        return written
    }

    /// Waits until every record handed over is written (or failed); the ends of those written, not reported yet.
    func drain() -> [Int] {
        for _ in buffers { free.wait() }
        for _ in buffers { free.signal() }
        let end = progress.withLock { $0.written }
        defer { pending.removeAll() }
        return pending.filter { $0 <= end }
    }
}
