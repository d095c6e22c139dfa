import Dispatch
import Foundation
import Glibc
import HandoffAPI
import HandoffCore
import HandoffCrypto
@testable import HandoffDaemon
@testable import HandoffTransport
import HandoffRuntime
import Testing

// SecureChannel over AF_UNIX socket pairs (no network): the handshake, records,
// tampering in transit, and the daemon's real `serve`/`answer` behind it.

private let alpha = try! Identity(seed: [UInt8](repeating: 0x21, count: 32))
private let beta = try! Identity(seed: [UInt8](repeating: 0x22, count: 32))
private let gamma = try! Identity(seed: [UInt8](repeating: 0x23, count: 32))

/// The handshake secrets `client` shares with `server` once paired.
func pairSecrets(_ client: Identity, _ server: Identity) -> PairSecrets {
    PairSecrets(pairKey: client.pairKey(with: server.publicKey, agreementKey: server.agreementKey)!)
}

private let secretsAB = pairSecrets(beta, alpha)

/// What alpha's daemon decides for a hello, with beta as its only paired device.
private func decideAB(_ hello: Handshake.Hello) -> SecureChannel.Decision {
    switch hello.purpose {
    case .fetch where hello.isFrom(secretsAB), .stream where hello.isFrom(secretsAB):
        .answer(psk: secretsAB.handshakePSK, expectedClient: beta.publicKey)
    case .fetch, .stream: .refuse(.init(code: .trust, message: "this device is not paired here"))
    case .pair: .answer(psk: Handshake.openPSK, expectedClient: nil)
    }
}

extension SecureChannel {
    /// The client side for the socket tests: a fetch under the alpha-beta secrets.
    static func connect(_ connection: StreamConnection, identity: Identity, purpose: Handshake.Purpose) throws(HandoffError) -> SecureChannel {
        try connect(connection, identity: identity, purpose: purpose, secrets: purpose.needsPairSecrets ? secretsAB : nil)
    }
}

/// Runs blocking work on a thread of its own and awaits it, so that no test blocks the
/// cooperative pool (the daemon's `waitFor` needs it to make progress). The thread
/// starts at once, in the caller's task, not when a pool thread next becomes free.
func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: work()) }.start()
    }
}

/// Blocking work started on a thread right now, its result awaited later.
final class Started<T: Sendable>: Sendable {
    private let outcome = Recorder<T?>(nil)
    private let done = DispatchSemaphore(value: 0)

    init(_ work: @escaping @Sendable () -> T) {
        let (outcome, done) = (outcome, done)
        Thread {
            let value = work()
            outcome.update { $0 = value }
            done.signal()
        }.start()
    }

    var value: T {
        get async {
            let (outcome, done) = (outcome, done)
            return await onOwnThread {
                done.wait()
                return outcome.value!
            }
        }
    }
}

private func result<T>(_ body: () throws(HandoffError) -> T) -> Result<T, HandoffError> {
    do throws(HandoffError) {
        return .success(try body())
    } catch {
        return .failure(error)
    }
}

/// Connects over `client` and accepts over `server` at the same time.
private func establish(_ clientConnection: StreamConnection, _ serverConnection: StreamConnection,
                       client: Identity = beta, server: Identity = alpha, purpose: Handshake.Purpose = .fetch)
    async -> (client: Result<SecureChannel, HandoffError>, server: Result<SecureChannel, HandoffError>) {
    // Each side hangs up when its handshake fails, as Daemon.connect and Daemon.serve do.
    let accepted = Started {
        let outcome = result { () throws(HandoffError) in try SecureChannel.accept(serverConnection, identity: server, decide: decideAB) }
        if case .failure = outcome { serverConnection.close() }
        return outcome
    }
    let connected = Started {
        let outcome = result { () throws(HandoffError) in try SecureChannel.connect(clientConnection, identity: client, purpose: purpose) }
        if case .failure = outcome { clientConnection.close() }
        return outcome
    }
    return (await connected.value, await accepted.value)
}

private func expectFailure<T>(_ outcome: Result<T, HandoffError>, _ code: HandoffError.Code, _ comment: Comment? = nil,
                              sourceLocation: SourceLocation = #_sourceLocation) {
    switch outcome {
    case .success: Issue.record("succeeded, expected \(code.rawValue) \(comment.map { "(\($0))" } ?? "")", sourceLocation: sourceLocation)
    case let .failure(error): #expect(error.code == code, "\(error) \(comment.map { "(\($0))" } ?? "")", sourceLocation: sourceLocation)
    }
}

private func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard !needle.isEmpty, haystack.count >= needle.count else { return false }
    return (0...(haystack.count - needle.count)).contains { haystack[$0..<($0 + needle.count)].elementsEqual(needle) }
}

// MARK: - A relay that can flip one byte

/// Forwards the bytes of two socket pairs, one thread per direction, keeping a copy,
/// and flips one byte at a given offset of one direction.
final class Relay: Sendable {
    enum Direction: Sendable { case toServer, toClient }

    let client: StreamConnection
    let server: StreamConnection
    private let ends: (StreamConnection, StreamConnection)
    private let finished = DispatchSemaphore(value: 0)
    private let streams = Recorder<[[UInt8]]>([[], []])

    /// Where the first encrypted record starts in each direction: after the handshake
    /// frames (hello 6+34 and clientAuth 6+112, or serverHello 6+144), the 24-byte
    /// secretstream header and the record's 4-byte length.
    static let firstRecordToServer = 57 + 118 + 24 + 4
    static let firstRecordToClient = 151 + 24 + 4

    init(flip: (Direction, Int)? = nil) throws {
        let (client, relayClientSide) = try connectedPair("relay client", "relay")
        let (relayServerSide, server) = try connectedPair("relay", "relay server")
        self.client = client
        self.server = server
        ends = (relayClientSide, relayServerSide)
        let streams = self.streams
        let finished = self.finished
        for (direction, from, to) in [(Direction.toServer, relayClientSide, relayServerSide), (.toClient, relayServerSide, relayClientSide)] {
            let flipAt = flip?.0 == direction ? flip?.1 : nil
            Thread {
                let copy = Self.forward(from: from.fd, to: to.fd, flipAt: flipAt)
                streams.update { $0[direction == .toServer ? 0 : 1] = copy }
                to.shutdownWrite()
                finished.signal()
            }.start()
        }
    }

    /// Copies until the end of the stream (or the sockets' timeout); returns what went through, as sent on.
    private static func forward(from source: Int32, to destination: Int32, flipAt: Int?) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var copy: [UInt8] = []
        while true {
            let received = buffer.withUnsafeMutableBytes { recv(source, $0.baseAddress, $0.count, 0) }
            guard received > 0 else { return copy }
            let offset = copy.count
            if let flipAt, flipAt >= offset, flipAt < offset + received { buffer[flipAt - offset] ^= 0x01 }
            var sent = 0
            while sent < received {
                let count = buffer.withUnsafeBytes { send(destination, $0.baseAddress! + sent, received - sent, Int32(MSG_NOSIGNAL)) }
                guard count > 0 else { return copy + buffer[0..<sent] }
                sent += count
            }
            copy += buffer[0..<received]
        }
    }

    /// Closes both outer ends and waits for the relay threads; returns the bytes relayed each way.
    func finish() async -> (toServer: [UInt8], toClient: [UInt8]) {
        client.close()
        server.close()
        let finished = self.finished
        _ = await onOwnThread {
            [finished.wait(timeout: .now() + .seconds(40)), finished.wait(timeout: .now() + .seconds(40))]
        }
        ends.0.close()
        ends.1.close()
        let streams = streams.value
        return (streams[0], streams[1])
    }
}

// MARK: - The channel

@Suite struct SecureChannelTests {
    @Test func handshakeTeachesEachSideTheOther() async throws {
        let (clientConnection, serverConnection) = try connectedPair()
        defer { clientConnection.close(); serverConnection.close() }
        let (clientSide, serverSide) = await establish(clientConnection, serverConnection, purpose: .pair)
        let client = try clientSide.get(), server = try serverSide.get()
        #expect(client.session.peerKey == alpha.publicKey)
        #expect(server.session.peerKey == beta.publicKey)
        #expect(client.session.purpose == .pair)
        #expect(server.session.purpose == .pair)
        #expect(client.session.transcriptHash == server.session.transcriptHash)
        #expect(client.session.sendKey == server.session.receiveKey)
        #expect(client.session.receiveKey == server.session.sendKey)
    }

    /// Frames of every size both ways, the largest over several 1 MiB records.
    @Test func framesRoundTripBothWays() async throws {
        let (clientConnection, serverConnection) = try connectedPair()
        defer { clientConnection.close(); serverConnection.close() }
        let (clientSide, serverSide) = await establish(clientConnection, serverConnection)
        let client = try clientSide.get(), server = try serverSide.get()
        let big = Random.bytes(3 << 20)
        let exactlyOneRecord = [UInt8](repeating: 0x11, count: SecureChannel.recordPlaintextBytes - TransferFrame.headerBytes)
        let frames: [TransferFrame] = [
            .fetch(.init(summarySender: alpha.publicKey, summarySequence: 7, payloadDigest: Blake2b.digest([1]))),
            .payload([]), .payload(big), .payload(exactlyOneRecord), .payload(exactlyOneRecord + [0x22]),
            .refusal(.init(code: .notCurrent, message: "gone")), .pairConfirm(accepted: true),
        ]
        for (from, to) in [(client, server), (server, client)] {
            let sent = Started { result { () throws(HandoffError) in for frame in frames { try from.send(frame) } } }
            let received = Started { result { () throws(HandoffError) in try frames.map { _ throws(HandoffError) in try to.receive() } } }
            try await sent.value.get()
            let arrived = try await received.value.get()
            #expect(arrived.count == frames.count)
            for (got, expected) in zip(arrived, frames) {
                #expect(got == expected, "\(expected.encoded().count) bytes")
            }
        }
    }

    /// What travels: the handshake, each side's stream header, then a 4-byte length and
    /// 17 bytes of overhead per record of at most 1 MiB.
    @Test func framesAreCutIntoRecords() async throws {
        let relay = try Relay()
        let (clientSide, serverSide) = await establish(relay.client, relay.server)
        let client = try clientSide.get(), server = try serverSide.get()
        let frame = TransferFrame.payload([UInt8](repeating: 0x5A, count: 3 << 20))
        let sent = Started { result { () throws(HandoffError) in try client.send(frame) } }
        let received = Started { result { () throws(HandoffError) in try server.receive() } }
        try await sent.value.get()
        #expect(try await received.value.get() == frame)
        let (toServer, toClient) = await relay.finish()
        let frameBytes = (3 << 20) + TransferFrame.headerBytes
        #expect(toServer.count == 57 + 118 + RecordStream.headerBytes + frameBytes + 4 * (4 + RecordStream.overheadBytes))
        #expect(toClient.count == 151 + RecordStream.headerBytes)
        // The four length prefixes: three full records and the 6 bytes left over.
        var offset = Relay.firstRecordToServer - 4
        var lengths: [UInt32] = []
        while offset < toServer.count {
            var reader = ByteReader(Array(toServer[offset..<(offset + 4)]))
            let length = try reader.readUInt32BE()
            lengths.append(length)
            offset += 4 + Int(length)
        }
        let full = UInt32(SecureChannel.recordPlaintextBytes + RecordStream.overheadBytes)
        #expect(lengths == [full, full, full, UInt32(TransferFrame.headerBytes + RecordStream.overheadBytes)])
    }

    /// Nothing readable crosses the wire: neither identity key nor a frame's contents.
    @Test func nothingTravelsInTheClear() async throws {
        let relay = try Relay()
        let (clientSide, serverSide) = await establish(relay.client, relay.server)
        let client = try clientSide.get(), server = try serverSide.get()
        let marker = Array("a title that must not travel in the clear".utf8)
        for (from, to) in [(client, server), (server, client)] {
            let sent = Started { result { () throws(HandoffError) in try from.send(.payload(marker)) } }
            let frame = try await onOwnThread { result { () throws(HandoffError) in try to.receive() } }.get()
            try await sent.value.get()
            #expect(frame == .payload(marker))
        }
        let (toServer, toClient) = await relay.finish()
        for secret in [alpha.publicKey.bytes, beta.publicKey.bytes, marker, Array(marker.prefix(8))] {
            #expect(!contains(toServer, secret), "\(Hex.encode(secret))")
            #expect(!contains(toClient, secret), "\(Hex.encode(secret))")
        }
        // The relay saw the whole conversation.
        #expect(toServer.count == 57 + 118 + 24 + 4 + 6 + marker.count + 17)
    }

    @Test func aByteFlippedInTheFirstRecordFails() async throws {
        for offset in [0, 5, 20] {
            let relay = try Relay(flip: (.toServer, Relay.firstRecordToServer + offset))
            let (clientSide, serverSide) = await establish(relay.client, relay.server)
            let client = try clientSide.get(), server = try serverSide.get()
            let sent = Started { result { () throws(HandoffError) in try client.send(.payload(Array("hello".utf8))) } }
            let received = await onOwnThread { result { () throws(HandoffError) in try server.receive() } }
            _ = await sent.value
            expectFailure(received, .signatureMismatch, "offset \(offset)")
            if case let .failure(error) = received {
                #expect(error.message.contains("failed authentication"))
            }
            _ = await relay.finish()
        }
    }

    @Test func aByteFlippedTowardsTheClientFails() async throws {
        let relay = try Relay(flip: (.toClient, Relay.firstRecordToClient + 3))
        let (clientSide, serverSide) = await establish(relay.client, relay.server)
        let client = try clientSide.get(), server = try serverSide.get()
        let sent = Started { result { () throws(HandoffError) in try server.send(.payload([1, 2, 3])) } }
        let received = await onOwnThread { result { () throws(HandoffError) in try client.receive() } }
        _ = await sent.value
        expectFailure(received, .signatureMismatch)
        _ = await relay.finish()
    }

    /// A flipped stream header is not noticed until the first record fails.
    @Test func aByteFlippedInTheStreamHeaderFails() async throws {
        let relay = try Relay(flip: (.toServer, 57 + 118 + 7))
        let (clientSide, serverSide) = await establish(relay.client, relay.server)
        let client = try clientSide.get(), server = try serverSide.get()
        let sent = Started { result { () throws(HandoffError) in try client.send(.payload([1])) } }
        let received = await onOwnThread { result { () throws(HandoffError) in try server.receive() } }
        _ = await sent.value
        expectFailure(received, .signatureMismatch)
        _ = await relay.finish()
    }

    /// Flipped in the handshake itself: the side that checks it refuses, the other loses the connection.
    @Test(arguments: [(Relay.Direction.toServer, 57 + 6 + 50), (.toClient, 6 + 3), (.toClient, 6 + 100)])
    func aByteFlippedInTheHandshakeFails(_ direction: Relay.Direction, _ offset: Int) async throws {
        let relay = try Relay(flip: (direction, offset))
        let (clientSide, serverSide) = await establish(relay.client, relay.server)
        // Whoever detects it first says signature-mismatch; neither side gets a channel.
        let errors = [clientSide, serverSide].compactMap { side -> HandoffError? in
            if case let .failure(error) = side { return error }
            return nil
        }
        #expect(errors.count == 2, "both sides must fail")
        #expect(errors.contains { $0.code == .signatureMismatch }, "\(errors)")
        _ = await relay.finish()
    }

    /// A hello altered in transit no longer carries the pair's hint: the server refuses it
    /// in the clear, naming nobody, and the client reports the network.
    @Test(arguments: [6 + 10, 6 + 40])
    func aByteFlippedInTheHelloIsRefusedAnonymously(_ offset: Int) async throws {
        let relay = try Relay(flip: (.toServer, offset))
        let (clientSide, serverSide) = await establish(relay.client, relay.server)
        expectFailure(serverSide, .trust)
        expectFailure(clientSide, .network)
        let (_, toClient) = await relay.finish()
        #expect(!contains(toClient, alpha.publicKey.bytes))
        #expect(toClient == TransferFrame.refusal(.init(code: .trust, message: "this device is not paired here")).encoded())
    }

    @Test func recordLengthsOutOfRangeAreRefused() async throws {
        for length: UInt32 in [0, 16, UInt32(SecureChannel.recordPlaintextBytes + RecordStream.overheadBytes + 1), .max] {
            let (clientConnection, serverConnection) = try connectedPair()
            defer { clientConnection.close(); serverConnection.close() }
            let (clientSide, serverSide) = await establish(clientConnection, serverConnection)
            _ = try clientSide.get()
            let server = try serverSide.get()
            var prefix = ByteWriter()
            prefix.write(length)
            try clientConnection.write(prefix.bytes)
            let received = await onOwnThread { result { () throws(HandoffError) in try server.receive() } }
            expectFailure(received, .payloadInvalid, "length \(length)")
        }
    }

    @Test func aPeerThatHangsUpIsConnectionLost() async throws {
        let (clientConnection, serverConnection) = try connectedPair()
        defer { serverConnection.close() }
        let (clientSide, serverSide) = await establish(clientConnection, serverConnection)
        _ = try clientSide.get()
        let server = try serverSide.get()
        clientConnection.close()
        let received = await onOwnThread { result { () throws(HandoffError) in try server.receive() } }
        expectFailure(received, .connectionLost)
    }

    /// Plain frames where the handshake should be.
    @Test func aPeerThatSkipsTheHandshakeIsRefused() async throws {
        let (clientConnection, serverConnection) = try connectedPair()
        defer { clientConnection.close(); serverConnection.close() }
        try StreamFrameChannel(connection: clientConnection).send(.fetch(.init(summarySender: alpha.publicKey, summarySequence: 1,
                                                                                 payloadDigest: Blake2b.digest([]))))
        let accepted = await onOwnThread { result { () throws(HandoffError) in try SecureChannel.accept(serverConnection, identity: alpha, decide: decideAB) } }
        expectFailure(accepted, .payloadInvalid)
        // And a server that answers a hello with something else.
        let (otherClient, otherServer) = try connectedPair()
        defer { otherClient.close(); otherServer.close() }
        let connected = Started {
            result { () throws(HandoffError) in try SecureChannel.connect(otherClient, identity: beta, purpose: .fetch) }
        }
        let plain = StreamFrameChannel(connection: otherServer)
        let opening = await onOwnThread { result { () throws(HandoffError) in try plain.receive() } }
        guard case .hello = try opening.get() else {
            Issue.record("expected a hello")
            return
        }
        try plain.send(.payload([1, 2, 3]))
        expectFailure(await connected.value, .payloadInvalid)
    }

    /// A refusal in place of the server's answer proves nothing about who sent it: a fetch
    /// reports it as the network's doing, never as the peer's trust decision.
    @Test func aRefusalBeforeTheHandshakeIsNotTrusted() async throws {
        let (client, server) = try connectedPair()
        defer { client.close(); server.close() }
        let connected = Started { result { () throws(HandoffError) in try SecureChannel.connect(client, identity: beta, purpose: .fetch) } }
        let plain = StreamFrameChannel(connection: server)
        _ = await onOwnThread { result { () throws(HandoffError) in try plain.receive() } }
        try plain.send(.refusal(.init(code: .trust, message: "no")))
        expectFailure(await connected.value, .network)

        // An old client hears which version to install, and nothing about this host.
        let (oldClient, oldServer) = try connectedPair()
        defer { oldClient.close(); oldServer.close() }
        let accepted = Started { result { () throws(HandoffError) in try SecureChannel.accept(oldServer, identity: alpha, decide: decideAB) } }
        let old = StreamFrameChannel(connection: oldClient)
        try old.send(.hello([2, 1] + [UInt8](repeating: 9, count: 32)))
        let answer = await onOwnThread { result { () throws(HandoffError) in try old.receive() } }
        #expect(try answer.get() == .refusal(.init(code: .invalidRequest, message: "handshake version 2 is not supported; this host speaks 5")))
        expectFailure(await accepted.value, .invalidRequest)
    }
}

// MARK: - A peer that writes its own records

/// Runs the real handshake as the client, then seals records of its own making,
/// cut, tagged, repeated or reordered as a test needs.
private final class ScriptedPeer: @unchecked Sendable {
    // @unchecked Sendable: used by one test at a time, from one thread at a time.
    let connection: StreamConnection
    let sender: RecordStream

    init(_ connection: StreamConnection, identity: Identity = beta) throws {
        self.connection = connection
        let plain = StreamFrameChannel(connection: connection)
        let client = Handshake.Client(identity: identity, purpose: .fetch, secrets: secretsAB)
        try plain.send(.hello(client.hello))
        guard case let .serverHello(answer) = try plain.receive() else { throw HandoffError(.payloadInvalid, "no serverHello", fix: "") }
        let (auth, session) = try client.receive(serverHello: answer)
        try plain.send(.clientAuth(auth))
        let (sender, header) = RecordStream.sender(session.cipher, key: session.sendKey)
        self.sender = sender
        try connection.write(header)
        _ = try connection.read(exactly: RecordStream.headerBytes)
    }

    /// A sealed record with its length prefix, not yet sent.
    func record(_ plaintext: [UInt8], push: Bool) -> [UInt8] {
        let sealed = sender.push(plaintext, tag: push ? RecordStream.tagPush : RecordStream.tagMessage)
        var prefix = ByteWriter()
        prefix.write(UInt32(sealed.count))
        return prefix.bytes + sealed
    }

    func send(_ records: [[UInt8]]) throws {
        for record in records { try connection.write(record) }
    }

    /// Seals and sends `pieces`, PUSH on the last.
    func send(pieces: [[UInt8]]) throws {
        try send(pieces.enumerated().map { record($1, push: $0 == pieces.count - 1) })
    }
}

/// A server-side channel and a scripted client on a fresh socket pair.
private func scriptedPair() async throws -> (peer: ScriptedPeer, server: SecureChannel, close: @Sendable () -> Void) {
    let (clientConnection, serverConnection) = try connectedPair()
    let accepted = Started { result { () throws(HandoffError) in try SecureChannel.accept(serverConnection, identity: alpha, decide: decideAB) } }
    let peer = await onOwnThread { Result { try ScriptedPeer(clientConnection) } }
    let server = try await accepted.value.get()
    return (try peer.get(), server, { clientConnection.close(); serverConnection.close() })
}

private func receive(_ channel: SecureChannel) async -> Result<TransferFrame, HandoffError> {
    await onOwnThread { result { () throws(HandoffError) in try channel.receive() } }
}

private func header(kind: UInt8 = 3, length: Int) -> [UInt8] {
    var writer = ByteWriter()
    writer.write(TransferFrame.version)
    writer.write(kind)
    writer.write(UInt32(length))
    return writer.bytes
}

@Suite struct SecureChannelRecordTests {
    /// Any cut is accepted as long as the header is in the first record: other
    /// implementations may cut frames differently.
    @Test func framesCutAnywhereAfterTheHeaderArrive() async throws {
        let (peer, server, close) = try await scriptedPair()
        defer { close() }
        let body = Array(UInt8(0)..<UInt8(100))
        let frame = TransferFrame.payload(body).encoded()
        try peer.send(pieces: [Array(frame[0..<6]), [frame[6]], [], Array(frame[7..<57]), Array(frame[57...])])
        #expect(try await receive(server).get() == .payload(body))
        // Two frames back to back, the next cut inside its body.
        let refusal = TransferFrame.refusal(.init(code: .trust, message: "no")).encoded()
        try peer.send(pieces: [refusal])
        try peer.send(pieces: [Array(frame[0..<10]), Array(frame[10...])])
        #expect(try await receive(server).get() == .refusal(.init(code: .trust, message: "no")))
        #expect(try await receive(server).get() == .payload(body))
    }

    @Test func aFirstRecordWithoutTheWholeHeaderIsRefused() async throws {
        for first in [[], Array(header(length: 3).prefix(3))] as [[UInt8]] {
            let (peer, server, close) = try await scriptedPair()
            defer { close() }
            try peer.send(pieces: [first, Array(header(length: 3).dropFirst(first.count)) + [1, 2, 3]])
            expectFailure(await receive(server), .payloadInvalid, "first record of \(first.count) bytes")
        }
    }

    @Test func aFrameEndingShortIsRefused() async throws {
        let (peer, server, close) = try await scriptedPair()
        defer { close() }
        try peer.send(pieces: [header(length: 10) + [1, 2], [3, 4]])
        let outcome = await receive(server)
        expectFailure(outcome, .payloadInvalid)
        if case let .failure(error) = outcome { #expect(error.message == "The frame ended 6 bytes short.") }
    }

    @Test func aFrameLongerThanItsHeaderIsRefused() async throws {
        for pieces in [[header(length: 4) + [1, 2, 3, 4, 5]], [header(length: 4) + [1, 2], [3, 4, 5]], [header(length: 0), [1]]] {
            let (peer, server, close) = try await scriptedPair()
            defer { close() }
            try peer.send(pieces: pieces)
            let outcome = await receive(server)
            expectFailure(outcome, .payloadInvalid)
            if case let .failure(error) = outcome { #expect(error.message == "The frame is longer than its header says.") }
        }
    }

    @Test func aBadFrameInsideTheChannelIsRefused() async throws {
        for bytes in [header(kind: 1, length: 0), [1, 3, 0, 0, 0, 0], header(kind: 2, length: 3) + [1, 2, 3],
                      header(kind: 12, length: 1) + [7]] {
            let (peer, server, close) = try await scriptedPair()
            defer { close() }
            try peer.send(pieces: [bytes])
            expectFailure(await receive(server), .payloadInvalid, "\(bytes)")
        }
    }

    @Test func aReplayedRecordFails() async throws {
        let (peer, server, close) = try await scriptedPair()
        defer { close() }
        let first = peer.record(header(length: 20) + [1, 2, 3, 4], push: false)
        try peer.send([first, first])
        expectFailure(await receive(server), .signatureMismatch)
        // A replay that would overrun the declared length is refused before it is even opened.
        let (other, otherServer, closeOther) = try await scriptedPair()
        defer { closeOther() }
        let short = other.record(header(length: 8) + [1, 2, 3, 4], push: false)
        try other.send([short, short])
        #expect(throws: HandoffError.self) { try otherServer.receive() }
    }

    @Test func aReplayedFrameFails() async throws {
        let (peer, server, close) = try await scriptedPair()
        defer { close() }
        let whole = peer.record(TransferFrame.payload([9, 9]).encoded(), push: true)
        try peer.send([whole, whole])
        #expect(try await receive(server).get() == .payload([9, 9]))
        expectFailure(await receive(server), .signatureMismatch)
    }

    @Test func reorderedRecordsFail() async throws {
        let (peer, server, close) = try await scriptedPair()
        defer { close() }
        let first = peer.record(header(length: 8) + [1, 2, 3, 4], push: false)
        let second = peer.record([5, 6, 7, 8], push: true)
        try peer.send([second, first])
        expectFailure(await receive(server), .signatureMismatch)
    }

    @Test func aDroppedRecordFails() async throws {
        let (peer, server, close) = try await scriptedPair()
        defer { close() }
        let first = peer.record(header(length: 6) + [1, 2], push: false)
        _ = peer.record([3, 4], push: false)  // lost in transit
        let third = peer.record([5, 6], push: true)
        try peer.send([first, third])
        expectFailure(await receive(server), .signatureMismatch)
    }

    /// A frame cut short by a PUSH tag is refused, and one whose PUSH record was dropped is too.
    @Test func aDroppedFinalRecordFails() async throws {
        let (peer, server, close) = try await scriptedPair()
        defer { close() }
        let first = peer.record(TransferFrame.payload([1]).encoded(), push: true)
        _ = peer.record(TransferFrame.payload([2]).encoded(), push: true)  // lost
        let third = peer.record(TransferFrame.payload([3]).encoded(), push: true)
        try peer.send([first, third])
        #expect(try await receive(server).get() == .payload([1]))
        expectFailure(await receive(server), .signatureMismatch)
    }
}

// MARK: - The daemon behind the channel

/// A daemon on a temporary state directory. Its init opens no socket; `start()` would, so it is never called.
struct TestDaemon {
    let daemon: Daemon
    let directory: String

    init(name: String = "alpha", trusting trusted: [Identity] = []) throws {
        directory = NSTemporaryDirectory() + "handoff-daemon-test-" + UUID().uuidString
        let state = StateDirectory(path: directory)
        try state.prepare()
        var trust = try TrustStore.load(from: state)
        for peer in trusted {
            try trust.add(peer.publicKey, name: "peer", material: .init(agreementKey: peer.agreementKey, discoverySecret: peer.discoverySecret(),
                                                                       sealChain: SealChain(epoch: 0, key: [UInt8](repeating: 1, count: 32))!),
                          nowMillis: 1)
        }
        var configuration = DaemonConfiguration(stateDirectory: directory, socketPath: directory + "/api.sock", name: name)
        configuration.logLevel = .error
        configuration.transferTimeoutMillis = 30_000
        daemon = try Daemon(configuration: configuration)
    }

    func remove() { try? FileManager.default.removeItem(atPath: directory) }

    /// Runs the daemon's real connection handler on one end of a socket pair, starting now.
    func serve(_ connection: StreamConnection) -> Started<Void> {
        let daemon = self.daemon
        return Started { daemon.serve(connection) }
    }
}

private let readerActivity = Activity(type: "org.example.reader.document", title: "Chapter 1",
                                      userInfo: ["page": .integer(42)], targetContentIdentifier: nil, webpageURL: nil,
                                      expiresAtMillis: nil, sequence: 0)

@Suite struct DaemonOverSecureChannelTests {
    /// Connects as `client` to the daemon's `serve` and runs the receiver's exchange for `offer`.
    private func fetch(from test: TestDaemon, as client: Identity, offer: SignedSummary) async throws -> Result<Activity, HandoffError> {
        let (clientConnection, serverConnection) = try connectedPair("test receiver", "test daemon")
        let served = test.serve(serverConnection)
        let secrets = pairSecrets(client, await test.daemon.identity)
        let outcome = await onOwnThread {
            result { () throws(HandoffError) -> Activity in
                let channel = try SecureChannel.connect(clientConnection, identity: client, purpose: .fetch, secrets: secrets)
                defer { channel.close() }
                return try Daemon.exchange(over: channel, offer: offer, identity: client)
            }
        }
        clientConnection.close()
        await served.value
        return outcome
    }

    /// A device this daemon never paired with hears a refusal that names nobody, before any identity is sent.
    @Test func aStrangerIsRefusedWithoutLearningWhoAnswered() async throws {
        let test = try TestDaemon(trusting: [beta])
        defer { test.remove() }
        let published = try await test.daemon.publish(readerActivity)
        let outcome = try await fetch(from: test, as: gamma, offer: published.summary)
        expectFailure(outcome, .network)
        if case let .failure(error) = outcome {
            let deviceID = await test.daemon.deviceID.description
            #expect(!error.message.contains("alpha") && !error.message.contains(deviceID), "\(error.message)")
            #expect(error.message.contains("did not recognise this device"))
        }
        #expect(await test.daemon.server.refused == 1)
        #expect(await test.daemon.server.served == 0)
    }

    /// A device this daemon untrusted still proves who it is, and hears, authenticated, that it is no longer trusted.
    @Test func aDeviceUntrustedHereHearsItWithTrust() async throws {
        let test = try TestDaemon(trusting: [beta])
        defer { test.remove() }
        let published = try await test.daemon.publish(readerActivity)
        try await test.daemon.untrust(beta.publicKey)
        #expect(await test.daemon.trust.revoked.map(\.key) == [beta.publicKey])
        let outcome = try await fetch(from: test, as: beta, offer: published.summary)
        expectFailure(outcome, .trust)
        if case let .failure(error) = outcome {
            #expect(error.message == "alpha no longer trusts this device: pair again.")
            #expect(error.fix == Daemon.fix(forRefusal: .trust, peerName: "alpha"))
        }
        #expect(await test.daemon.server.refused == 1)
        #expect(await test.daemon.server.served == 0)
    }

    @Test func aPairedClientGetsTheCurrentActivity() async throws {
        let test = try TestDaemon(trusting: [beta])
        defer { test.remove() }
        let published = try await test.daemon.publish(readerActivity)
        let activity = try await fetch(from: test, as: beta, offer: published.summary).get()
        var expected = readerActivity
        expected.sequence = published.activity.sequence
        #expect(activity == expected)
        #expect(activity.title == "Chapter 1")
        #expect(await test.daemon.server.served == 1)
        #expect(await test.daemon.server.refused == 0)
    }

    @Test func aPairedClientCitingAnOldOfferIsNotCurrent() async throws {
        let test = try TestDaemon(trusting: [beta])
        defer { test.remove() }
        let old = try await test.daemon.publish(readerActivity)
        _ = try await test.daemon.publish(readerActivity)
        expectFailure(try await fetch(from: test, as: beta, offer: old.summary), .notCurrent)
    }

    @Test func somethingOtherThanAFetchIsAnInvalidRequest() async throws {
        let test = try TestDaemon(trusting: [beta])
        defer { test.remove() }
        let (clientConnection, serverConnection) = try connectedPair()
        let served = test.serve(serverConnection)
        let secrets = pairSecrets(beta, await test.daemon.identity)
        let answer = await onOwnThread {
            result { () throws(HandoffError) -> TransferFrame in
                let channel = try SecureChannel.connect(clientConnection, identity: beta, purpose: .fetch, secrets: secrets)
                try channel.send(.pairConfirm(accepted: true))
                return try channel.receive()
            }
        }
        clientConnection.close()
        await served.value
        #expect(try answer.get() == .refusal(.init(code: .invalidRequest, message: "expected a fetch request")))
    }

    /// Pairing while the user has not opened it: refused before the handshake, naming nobody.
    @Test func pairingWhenNotOpenIsRefused() async throws {
        let test = try TestDaemon()
        defer { test.remove() }
        let (clientConnection, serverConnection) = try connectedPair()
        let served = test.serve(serverConnection)
        let answer = await onOwnThread {
            result { () throws(HandoffError) -> SecureChannel in
                try SecureChannel.connect(clientConnection, identity: gamma, purpose: .pair, secrets: nil, peerName: "alpha")
            }
        }
        clientConnection.close()
        await served.value
        expectFailure(answer, .trust)
        if case let .failure(error) = answer { #expect(error.message == "alpha refused: pairing is not open here.") }
    }

    // `answer` itself, on the actor.

    @Test func answerRefusesUntrustedRequesters() async throws {
        let test = try TestDaemon(trusting: [beta])
        defer { test.remove() }
        let published = try await test.daemon.publish(readerActivity)
        let summary = published.summary.summary
        let request = TransferFrame.FetchRequest(summarySender: summary.senderKey, summarySequence: summary.sequence,
                                                 payloadDigest: summary.payloadDigest)
        let refused = await test.daemon.answer(request, from: gamma.publicKey, remote: "test")
        guard case let .refusal(refusal) = refused else {
            Issue.record("expected a refusal, got \(refused)")
            return
        }
        #expect(refusal.code == .trust)
        #expect(await test.daemon.answer(request, from: beta.publicKey, remote: "test") == .payload(published.payload))
        #expect(await test.daemon.server.refused == 1)
        #expect(await test.daemon.server.served == 1)
    }

    @Test func answerRefusesAnythingButTheCurrentSummary() async throws {
        let test = try TestDaemon(trusting: [beta])
        defer { test.remove() }
        let daemon = test.daemon
        let nothingYet = TransferFrame.FetchRequest(summarySender: await daemon.identity.publicKey, summarySequence: 1,
                                                    payloadDigest: Blake2b.digest([]))
        #expect(await daemon.answer(nothingYet, from: beta.publicKey, remote: "test").refusalCode == .notCurrent)
        let published = try await daemon.publish(readerActivity)
        let summary = published.summary.summary
        let current = TransferFrame.FetchRequest(summarySender: summary.senderKey, summarySequence: summary.sequence,
                                                 payloadDigest: summary.payloadDigest)
        var otherSender = current
        otherSender.summarySender = gamma.publicKey
        var otherSequence = current
        otherSequence.summarySequence += 1
        var otherDigest = current
        otherDigest.payloadDigest[0] ^= 1
        for request in [otherSender, otherSequence, otherDigest] {
            #expect(await daemon.answer(request, from: beta.publicKey, remote: "test").refusalCode == .notCurrent)
        }
        #expect(await daemon.answer(current, from: beta.publicKey, remote: "test") == .payload(published.payload))
        #expect(await daemon.server.refused == 4)
    }

    /// A served fetch is decided on its own thread from what the actor last said (`Fixed.servable`):
    /// switching off, resigning and untrusting each show in the very next decision.
    @Test func aServedFetchSeesEveryChangeAtOnce() async throws {
        let test = try TestDaemon(trusting: [beta])
        defer { test.remove() }
        let daemon = test.daemon
        func request() async throws -> TransferFrame.FetchRequest {
            let summary = try #require(await daemon.published).summary.summary
            return TransferFrame.FetchRequest(summarySender: summary.senderKey, summarySequence: summary.sequence,
                                              payloadDigest: summary.payloadDigest)
        }
        func handle(_ request: Request) async throws {
            let (client, server) = try connectedPair()
            defer { client.close(); server.close() }
            if case let .failure(error)? = await daemon.handle(request, payloadActivity: nil, id: nil, session: LocalSession(connection: server, loop: .shared)) { throw error }
        }
        let published = try await daemon.publish(readerActivity)
        #expect(daemon.admit(try await request(), from: beta.publicKey).frame == .payload(published.payload))
        try await handle(.disable)
        #expect(daemon.admit(try await request(), from: beta.publicKey).frame.refusalCode == .enabled)
        try await handle(.enable)
        let current = try await request()
        #expect(daemon.admit(current, from: beta.publicKey).frame.refusalCode == nil)
        try await handle(.invalidate(publisher: nil))
        #expect(daemon.admit(current, from: beta.publicKey).frame.refusalCode == .notCurrent)
        _ = try await daemon.publish(readerActivity)
        try await handle(.untrust(peer: beta.publicKey.hex))
        #expect(daemon.admit(try await request(), from: beta.publicKey).frame.refusalCode == .trust)
    }

    /// A resume gets the payload (sent from its offset by `serveFetch`) while the
    /// offset is inside it; one at or past the end is refused as a bad request.
    @Test func answerTakesResumeOffsetsInsideThePayloadOnly() async throws {
        let test = try TestDaemon(trusting: [beta])
        defer { test.remove() }
        let published = try await test.daemon.publish(readerActivity)
        let summary = published.summary.summary
        var request = TransferFrame.FetchRequest(summarySender: summary.senderKey, summarySequence: summary.sequence,
                                                 payloadDigest: summary.payloadDigest)
        for offset in [1, published.payload.count - 1] {
            request.offset = UInt64(offset)
            #expect(await test.daemon.answer(request, from: beta.publicKey, remote: "test") == .payload(published.payload))
        }
        for offset in [published.payload.count, published.payload.count + 1] {
            request.offset = UInt64(offset)
            #expect(await test.daemon.answer(request, from: beta.publicKey, remote: "test").refusalCode == .invalidRequest)
        }
    }
}

extension TransferFrame {
    fileprivate var refusalCode: HandoffError.Code? {
        if case let .refusal(refusal) = self { return refusal.code }
        return nil
    }
}

extension Daemon {
    /// `untrust`, as the local API does it.
    func untrust(_ key: DeviceKey) throws(HandoffError) {
        try trust.remove(key, nowMillis: wallClockMillis())
        trustChanged()
    }
}
