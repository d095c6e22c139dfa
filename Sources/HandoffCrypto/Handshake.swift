import HandoffCore

/// The transfer socket's handshake (Docs/PROTOCOL.md, "Handshake"): ephemeral
/// X25519 for forward secrecy, both identity keys proven by Ed25519
/// signatures over the transcript, identities encrypted so an eavesdropper
/// learns neither. Three messages:
///
///     client -> server  hello:       version 2, purpose, client ephemeral (32)
///     server -> client  serverHello: server ephemeral (32), AEAD(server key || signature)
///     client -> server  clientAuth:  AEAD(client key || signature)
///
/// then one secretstream per direction, keyed from the DH secret and the transcript.
public enum Handshake {
    public static let version: UInt8 = 2
    public static let helloBytes = 2 + X25519.keyBytes
    static let sealedIdentityBytes = DeviceKey.byteCount + SignatureSize.ed25519 + AEAD.tagBytes
    public static let serverHelloBytes = X25519.keyBytes + sealedIdentityBytes
    public static let clientAuthBytes = sealedIdentityBytes

    public enum Purpose: UInt8, Sendable {
        case fetch = 1
        case pair = 2
    }

    /// What a completed handshake gives both sides.
    public struct Session: Sendable {
        public let purpose: Purpose
        public let peerKey: DeviceKey
        public let sendKey: [UInt8]
        public let receiveKey: [UInt8]
        /// Binds everything exchanged; pairing derives its code from it.
        public let transcriptHash: [UInt8]
    }

    static func hash(_ parts: [UInt8]...) -> [UInt8] { Blake2b.digest(parts.flatMap { $0 }) }

    static func nonce(_ counter: UInt8) -> [UInt8] { [UInt8](repeating: 0, count: AEAD.nonceBytes - 1) + [counter] }

    static func failure(_ what: String) -> HandoffError {
        HandoffError(.signatureMismatch, "The secure handshake failed: \(what).",
                     fix: "Make sure both hosts run the same handoff version; if it persists, something on the network alters traffic.")
    }

    static func sealIdentity(_ identity: Identity, signing message: [UInt8], key: [UInt8], counter: UInt8,
                             associatedData: [UInt8]) -> [UInt8] {
        AEAD.seal(identity.publicKey.bytes + identity.signature(for: message), key: key, nonce: nonce(counter),
                  associatedData: associatedData)
    }

    static func openIdentity(_ sealed: [UInt8], signed message: [UInt8], key: [UInt8], counter: UInt8,
                             associatedData: [UInt8]) throws(HandoffError) -> DeviceKey {
        guard let plain = AEAD.open(sealed, key: key, nonce: nonce(counter), associatedData: associatedData) else {
            throw failure("the peer's identity does not decrypt")
        }
        let key = DeviceKey(bytes: Array(plain[0..<DeviceKey.byteCount]))!
        let signature = Array(plain[DeviceKey.byteCount...])
        guard Ed25519().isValid(signature: signature, message: message, key: key) else {
            throw failure("the peer's signature over the handshake does not verify")
        }
        return key
    }

    static func sessionKeys(shared: [UInt8], transcript: [UInt8]) -> (clientToServer: [UInt8], serverToClient: [UInt8]) {
        (Blake2b.keyed(Array("handoff/c2s/v1".utf8) + transcript, key: shared),
         Blake2b.keyed(Array("handoff/s2c/v1".utf8) + transcript, key: shared))
    }

    static let serverContext = Array("handoff/handshake-server/v1".utf8)
    static let clientContext = Array("handoff/handshake-client/v1".utf8)
    static let transcriptContext = Array("handoff/handshake/v1".utf8)
    static let handshakeKeyContext = Array("handoff/hs-key/v1".utf8)

    /// The side that connects.
    public final class Client: @unchecked Sendable {
        // @unchecked Sendable: driven by one thread, start to finish.
        let identity: Identity
        let purpose: Purpose
        let ephemeral: EphemeralKey
        public let hello: [UInt8]

        public init(identity: Identity, purpose: Purpose, ephemeral: EphemeralKey = EphemeralKey()) {
            self.identity = identity
            self.purpose = purpose
            self.ephemeral = ephemeral
            hello = [Handshake.version, purpose.rawValue] + ephemeral.publicKey
        }

        /// Checks the server's identity and returns the client's authentication message with the session.
        public func receive(serverHello: [UInt8]) throws(HandoffError) -> (clientAuth: [UInt8], session: Session) {
            guard serverHello.count == serverHelloBytes else { throw failure("the server's answer has the wrong size") }
            let serverEphemeral = Array(serverHello[0..<X25519.keyBytes])
            let sealed = Array(serverHello[X25519.keyBytes...])
            guard let shared = ephemeral.sharedSecret(with: serverEphemeral) else { throw failure("bad ephemeral key") }
            let h1 = hash(transcriptContext, hello, serverEphemeral)
            let handshakeKey = Blake2b.keyed(handshakeKeyContext + h1, key: shared)
            let serverKey = try openIdentity(sealed, signed: serverContext + h1, key: handshakeKey, counter: 1,
                                             associatedData: serverEphemeral)
            let h2 = hash(h1, sealed)
            let clientAuth = sealIdentity(identity, signing: clientContext + h2, key: handshakeKey, counter: 2, associatedData: [])
            let h3 = hash(h2, clientAuth)
            let keys = sessionKeys(shared: shared, transcript: h3)
            return (clientAuth, Session(purpose: purpose, peerKey: serverKey, sendKey: keys.clientToServer,
                                        receiveKey: keys.serverToClient, transcriptHash: h3))
        }
    }

    /// The side that listens.
    public final class Server: @unchecked Sendable {
        // @unchecked Sendable: driven by one connection thread, start to finish.
        let identity: Identity
        let ephemeral: EphemeralKey
        private var pending: (purpose: Purpose, shared: [UInt8], handshakeKey: [UInt8], h2: [UInt8])?

        public init(identity: Identity, ephemeral: EphemeralKey = EphemeralKey()) {
            self.identity = identity
            self.ephemeral = ephemeral
        }

        /// Reads the client's hello; returns its purpose and the server's answer.
        public func receive(hello: [UInt8]) throws(HandoffError) -> (purpose: Purpose, serverHello: [UInt8]) {
            guard hello.count == helloBytes else { throw failure("the hello has the wrong size") }
            guard hello[0] == Handshake.version else {
                throw HandoffError(.payloadInvalid, "The peer speaks handshake version \(hello[0]); this host speaks \(Handshake.version).",
                                   fix: "Install the same handoff version on both hosts.")
            }
            guard let purpose = Purpose(rawValue: hello[1]) else { throw failure("unknown purpose \(hello[1])") }
            let clientEphemeral = Array(hello[2...])
            guard let shared = ephemeral.sharedSecret(with: clientEphemeral) else { throw failure("bad ephemeral key") }
            let h1 = hash(transcriptContext, hello, ephemeral.publicKey)
            let handshakeKey = Blake2b.keyed(handshakeKeyContext + h1, key: shared)
            let sealed = sealIdentity(identity, signing: serverContext + h1, key: handshakeKey, counter: 1,
                                      associatedData: ephemeral.publicKey)
            pending = (purpose, shared, handshakeKey, hash(h1, sealed))
            return (purpose, ephemeral.publicKey + sealed)
        }

        /// Checks the client's identity; the handshake is then complete.
        public func receive(clientAuth: [UInt8]) throws(HandoffError) -> Session {
            guard let pending else { throw failure("authentication before hello") }
            guard clientAuth.count == clientAuthBytes else { throw failure("the client's authentication has the wrong size") }
            let clientKey = try openIdentity(clientAuth, signed: clientContext + pending.h2, key: pending.handshakeKey,
                                             counter: 2, associatedData: [])
            let h3 = hash(pending.h2, clientAuth)
            let keys = sessionKeys(shared: pending.shared, transcript: h3)
            return Session(purpose: pending.purpose, peerKey: clientKey, sendKey: keys.serverToClient,
                           receiveKey: keys.clientToServer, transcriptHash: h3)
        }
    }
}
