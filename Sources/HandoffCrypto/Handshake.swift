import HandoffCore

/// The transfer socket's handshake (Docs/PROTOCOL.md, "Handshake"): ephemeral
/// X25519 for forward secrecy, both identity keys proven by Ed25519
/// signatures over the transcript, and a pre-shared key (from the pair key)
/// mixed into every key, so that only a device paired with the server can
/// read the server's identity, and only the server can read the client's.
/// Three messages:
///
///     client -> server  hello:       version 5, purpose, record ciphers offered, client ephemeral (32), hint (16)
///     server -> client  serverHello: server ephemeral (32), AEAD(server key || signature || chosen cipher)
///     client -> server  clientAuth:  AEAD(client key || signature)
///
/// The hint, a MAC over the client's ephemeral key under a key of the pair,
/// tells the server which pair key to use; to anyone else it is random and
/// differs on every connection. A server that finds no pair for the hint
/// answers with a refusal that names nobody. Pairing (purpose 2) has no pair
/// key yet: its hint is zeros and its PSK is 32 zero bytes, and the server
/// answers it only while its user has pairing open. A continuation stream
/// (purpose 3) is keyed like a fetch.
///
/// Version 5 adds the choice of record cipher: the hello offers, the server
/// chooses inside its sealed, signed answer. A server still answers the hellos
/// of hosts from before (version 3: fetch and pairing; 4: a stream) as they
/// expect, with XChaCha20-Poly1305 records; a client speaks only version 5, so
/// an older server refuses it by version, with a message.
public enum Handshake {
    public static let version: UInt8 = 5
    /// The hello versions of hosts before version 5, still answered: 3 (fetch, pairing), 4 (stream).
    public static let fetchVersion3: UInt8 = 3
    public static let streamVersion4: UInt8 = 4
    public static let hintBytes = 16
    public static let helloBytes = 3 + X25519.keyBytes + hintBytes
    /// A version 3 or 4 hello has no cipher byte.
    public static let olderHelloBytes = 2 + X25519.keyBytes + hintBytes
    static let sealedIdentityBytes = DeviceKey.byteCount + SignatureSize.ed25519 + AEAD.tagBytes
    /// The server's answer to a version 5 hello: its sealed identity carries the chosen cipher.
    public static let serverHelloBytes = X25519.keyBytes + sealedIdentityBytes + 1
    /// The server's answer to a version 3 or 4 hello.
    public static let olderServerHelloBytes = X25519.keyBytes + sealedIdentityBytes
    public static let clientAuthBytes = sealedIdentityBytes
    /// The PSK of a pairing handshake: there is no shared secret yet.
    public static let openPSK = [UInt8](repeating: 0, count: 32)

    public enum Purpose: UInt8, Sendable {
        case fetch = 1
        case pair = 2
        /// A continuation stream between two apps, after a continuation (Docs/PROTOCOL.md, "Continuation stream").
        case stream = 3

        /// The hello version that carried this purpose before version 5.
        public var olderHelloVersion: UInt8 { self == .stream ? Handshake.streamVersion4 : Handshake.fetchVersion3 }
        /// Keyed by the pair (the hint names a paired device); pairing has no pair key yet.
        public var needsPairSecrets: Bool { self != .pair }
    }

    /// What a completed handshake gives both sides. Its keys are wiped when the last
    /// reference goes (the channel that holds it closes); nothing else keeps a copy.
    public final class Session: @unchecked Sendable {
        // @unchecked Sendable: every property is set in init and only read after; deinit
        // alone writes (the wipe), when nothing else can read.
        public let purpose: Purpose
        /// The records' cipher (XChaCha20-Poly1305 with a host before version 5).
        public let cipher: RecordCipher
        public let peerKey: DeviceKey
        public private(set) var sendKey: [UInt8]
        public private(set) var receiveKey: [UInt8]
        /// Binds everything exchanged; pairing derives its code from it.
        public let transcriptHash: [UInt8]
        /// A secret of this session for keys outside the channel (pairing seeds the seal chain with it).
        public private(set) var exporterKey: [UInt8]

        init(purpose: Purpose, cipher: RecordCipher, peerKey: DeviceKey, sendKey: [UInt8], receiveKey: [UInt8],
             transcriptHash: [UInt8], exporterKey: [UInt8]) {
            self.purpose = purpose
            self.cipher = cipher
            self.peerKey = peerKey
            self.sendKey = sendKey
            self.receiveKey = receiveKey
            self.transcriptHash = transcriptHash
            self.exporterKey = exporterKey
        }

        deinit {
            Sodium.wipe(&sendKey)
            Sodium.wipe(&receiveKey)
            Sodium.wipe(&exporterKey)
        }
    }

    /// A client's first message, parsed (version first, so an old client hears which version to install).
    public struct Hello: Sendable {
        public let version: UInt8
        public let purpose: Purpose
        /// What the client can decrypt; a version 3 or 4 hello knows XChaCha20-Poly1305 only.
        public let offered: RecordCiphers
        public let ephemeral: [UInt8]
        public let hint: [UInt8]
        let bytes: [UInt8]

        public init(_ bytes: [UInt8]) throws(HandoffError) {
            guard let first = bytes.first, first == Handshake.version || first == Handshake.fetchVersion3 || first == Handshake.streamVersion4 else {
                throw unsupported(bytes.first)
            }
            let current = first == Handshake.version
            guard bytes.count == (current ? helloBytes : olderHelloBytes) else { throw failure("the hello has the wrong size") }
            guard let purpose = Purpose(rawValue: bytes[1]), current || purpose.olderHelloVersion == first else {
                throw failure("unknown purpose \(bytes[1]) in a version \(first) hello")
            }
            // Bits a later version may add are ignored; XChaCha20-Poly1305 is what every host can fall back to.
            offered = current ? RecordCiphers(rawValue: bytes[2]) : .xchacha20poly1305
            guard offered.contains(.xchacha20poly1305) else { throw failure("the hello does not offer XChaCha20-Poly1305") }
            let keyStart = current ? 3 : 2
            version = first
            self.purpose = purpose
            ephemeral = Array(bytes[keyStart..<(keyStart + X25519.keyBytes)])
            hint = Array(bytes[(keyStart + X25519.keyBytes)...])
            self.bytes = bytes
        }

        /// Whether the client made this hello with `secrets`, i.e. is the other device of that pair.
        public func isFrom(_ secrets: PairSecrets) -> Bool {
            purpose.needsPairSecrets && constantTimeEqual(hint, Handshake.hint(hintKey: secrets.handshakeHintKey, purpose: purpose, ephemeral: ephemeral))
        }
    }

    public static func unsupported(_ version: UInt8?) -> HandoffError {
        HandoffError(.invalidRequest, "The peer speaks handshake version \(version.map(String.init) ?? "none"); this host speaks \(Handshake.version) (and answers 3 and 4).",
                     fix: "Install the same handoff version on both hosts.")
    }

    static func hint(hintKey: [UInt8], purpose: Purpose, ephemeral: [UInt8]) -> [UInt8] {
        Blake2b.keyed(Array("handoff/hs-hint/v3".utf8) + [purpose.rawValue] + ephemeral, key: hintKey, outputBytes: hintBytes)
    }

    static func hash(_ parts: [UInt8]...) -> [UInt8] { Blake2b.digest(parts.flatMap { $0 }) }

    static func nonce(_ counter: UInt8) -> [UInt8] { [UInt8](repeating: 0, count: AEAD.nonceBytes - 1) + [counter] }

    static func failure(_ what: String) -> HandoffError {
        HandoffError(.signatureMismatch, "The secure handshake failed: \(what).",
                     fix: "Make sure both hosts run the same handoff version; if it persists, something on the network alters traffic.")
    }

    /// The identity key and its signature over `message` || `trailer`, sealed; `trailer` (the
    /// server's chosen cipher, version 5) follows the signature in the plaintext too.
    static func sealIdentity(_ identity: Identity, signing message: [UInt8], trailer: [UInt8] = [], key: [UInt8], counter: UInt8,
                             associatedData: [UInt8]) -> [UInt8] {
        AEAD.seal(identity.publicKey.bytes + identity.signature(for: message + trailer) + trailer, key: key, nonce: nonce(counter),
                  associatedData: associatedData)
    }

    /// The peer's key, once its signature over `message` || trailer verifies, and the trailer (`trailerBytes` long).
    static func openIdentity(_ sealed: [UInt8], signed message: [UInt8], trailerBytes: Int = 0, key: [UInt8], counter: UInt8,
                             associatedData: [UInt8]) throws(HandoffError) -> (DeviceKey, trailer: [UInt8]) {
        guard let plain = AEAD.open(sealed, key: key, nonce: nonce(counter), associatedData: associatedData),
              plain.count == DeviceKey.byteCount + SignatureSize.ed25519 + trailerBytes else {
            throw failure("the peer's identity does not decrypt")
        }
        let key = DeviceKey(bytes: Array(plain[0..<DeviceKey.byteCount]))!
        let signatureEnd = DeviceKey.byteCount + SignatureSize.ed25519
        let signature = Array(plain[DeviceKey.byteCount..<signatureEnd])
        let trailer = Array(plain[signatureEnd...])
        guard Ed25519().isValid(signature: signature, message: message + trailer, key: key) else {
            throw failure("the peer's signature over the handshake does not verify")
        }
        return (key, trailer)
    }

    /// The handshake's root secret: the ephemeral DH and the PSK together, so a
    /// stranger (no PSK) and a later thief of the PSK (no DH) both learn nothing.
    static func secret(shared: [UInt8], psk: [UInt8]) -> [UInt8] {
        Blake2b.keyed(Array("handoff/hs-secret/v3".utf8), key: shared + psk)
    }

    static func sessionKeys(secret: [UInt8], transcript: [UInt8])
        -> (clientToServer: [UInt8], serverToClient: [UInt8], exporter: [UInt8]) {
        (Blake2b.keyed(Array("handoff/c2s/v3".utf8) + transcript, key: secret),
         Blake2b.keyed(Array("handoff/s2c/v3".utf8) + transcript, key: secret),
         Blake2b.keyed(Array("handoff/exporter/v3".utf8) + transcript, key: secret))
    }

    static let serverContext = Array("handoff/handshake-server/v3".utf8)
    static let clientContext = Array("handoff/handshake-client/v3".utf8)
    static let transcriptContext = Array("handoff/handshake/v3".utf8)
    static let handshakeKeyContext = Array("handoff/hs-key/v3".utf8)

    /// The side that connects. A fetch or a stream needs the pair's secrets; pairing has none.
    public final class Client: @unchecked Sendable {
        // @unchecked Sendable: driven by one thread, start to finish.
        let identity: Identity
        let purpose: Purpose
        let ephemeral: EphemeralKey
        let psk: [UInt8]
        /// nil: a client from before version 5 (tests of the servers' compatibility).
        let offered: RecordCiphers?
        public let hello: [UInt8]

        public convenience init(identity: Identity, purpose: Purpose, secrets: PairSecrets?, ephemeral: EphemeralKey = EphemeralKey(),
                                offering offered: RecordCiphers = .available) {
            self.init(identity: identity, purpose: purpose, secrets: secrets, ephemeral: ephemeral, offered: offered)
        }

        init(identity: Identity, purpose: Purpose, secrets: PairSecrets?, ephemeral: EphemeralKey, offered: RecordCiphers?) {
            precondition(purpose.needsPairSecrets == (secrets != nil), "a fetch or stream needs the pair's secrets, pairing has none")
            precondition(offered?.contains(.xchacha20poly1305) ?? true, "every hello offers XChaCha20-Poly1305")
            self.identity = identity
            self.purpose = purpose
            self.ephemeral = ephemeral
            self.offered = offered
            psk = secrets?.handshakePSK ?? Handshake.openPSK
            let hint = secrets.map { Handshake.hint(hintKey: $0.handshakeHintKey, purpose: purpose, ephemeral: ephemeral.publicKey) }
                ?? [UInt8](repeating: 0, count: hintBytes)
            hello = (offered.map { [Handshake.version, purpose.rawValue, $0.rawValue] } ?? [purpose.olderHelloVersion, purpose.rawValue])
                + ephemeral.publicKey + hint
        }

        /// Checks the server's identity and returns the client's authentication message with the session.
        public func receive(serverHello: [UInt8]) throws(HandoffError) -> (clientAuth: [UInt8], session: Session) {
            guard serverHello.count == (offered == nil ? olderServerHelloBytes : serverHelloBytes) else {
                throw failure("the server's answer has the wrong size")
            }
            let serverEphemeral = Array(serverHello[0..<X25519.keyBytes])
            let sealed = Array(serverHello[X25519.keyBytes...])
            guard var shared = ephemeral.sharedSecret(with: serverEphemeral) else { throw failure("bad ephemeral key") }
            defer { Sodium.wipe(&shared) }
            var secret = Handshake.secret(shared: shared, psk: psk)
            defer { Sodium.wipe(&secret) }
            let h1 = hash(transcriptContext, hello, serverEphemeral)
            var handshakeKey = Blake2b.keyed(handshakeKeyContext + h1, key: secret)
            defer { Sodium.wipe(&handshakeKey) }
            let (serverKey, trailer) = try openIdentity(sealed, signed: serverContext + h1, trailerBytes: offered == nil ? 0 : 1,
                                                        key: handshakeKey, counter: 1, associatedData: serverEphemeral)
            let cipher: RecordCipher
            if let offered {
                guard let chosen = RecordCipher(rawValue: trailer[0]), offered.contains(RecordCiphers(rawValue: chosen.rawValue)) else {
                    throw failure("the server chose a cipher this host did not offer")
                }
                cipher = chosen
            } else {
                cipher = .xchacha20poly1305
            }
            let h2 = hash(h1, sealed)
            let clientAuth = sealIdentity(identity, signing: clientContext + h2, key: handshakeKey, counter: 2, associatedData: [])
            let h3 = hash(h2, clientAuth)
            let keys = sessionKeys(secret: secret, transcript: h3)
            return (clientAuth, Session(purpose: purpose, cipher: cipher, peerKey: serverKey, sendKey: keys.clientToServer,
                                        receiveKey: keys.serverToClient, transcriptHash: h3, exporterKey: keys.exporter))
        }
    }

    /// The side that listens. It answers a hello only once its owner has
    /// decided which PSK applies (and for a fetch, which device the hint names).
    public final class Server: @unchecked Sendable {
        // @unchecked Sendable: driven by one connection thread, start to finish.
        let identity: Identity
        let ephemeral: EphemeralKey
        let supported: RecordCiphers
        private var pending: (purpose: Purpose, cipher: RecordCipher, secret: [UInt8], handshakeKey: [UInt8], h2: [UInt8], expected: DeviceKey?)?

        public init(identity: Identity, ephemeral: EphemeralKey = EphemeralKey(), supporting supported: RecordCiphers = .available) {
            self.identity = identity
            self.ephemeral = ephemeral
            self.supported = supported
        }

        deinit { wipePending() }

        /// The handshake's secrets go with the server when no session took them.
        private func wipePending() {
            guard var pending = self.pending else { return }
            self.pending = nil
            Sodium.wipe(&pending.secret)
            Sodium.wipe(&pending.handshakeKey)
        }

        /// The server's answer to `hello` under `psk`; `expectedClient` is the device the hint named, if any.
        /// To a version 5 hello it adds the record cipher it chose, signed and sealed with its identity.
        public func answer(_ hello: Hello, psk: [UInt8], expectedClient: DeviceKey?) throws(HandoffError) -> [UInt8] {
            guard var shared = ephemeral.sharedSecret(with: hello.ephemeral) else { throw failure("bad ephemeral key") }
            defer { Sodium.wipe(&shared) }
            let secret = Handshake.secret(shared: shared, psk: psk)
            let h1 = hash(transcriptContext, hello.bytes, ephemeral.publicKey)
            let handshakeKey = Blake2b.keyed(handshakeKeyContext + h1, key: secret)
            wipePending()
            let current = hello.version == Handshake.version
            let cipher = current ? RecordCipher.choose(offered: hello.offered, supported: supported) : .xchacha20poly1305
            let sealed = sealIdentity(identity, signing: serverContext + h1, trailer: current ? [cipher.rawValue] : [], key: handshakeKey,
                                      counter: 1, associatedData: ephemeral.publicKey)
            pending = (hello.purpose, cipher, secret, handshakeKey, hash(h1, sealed), expectedClient)
            return ephemeral.publicKey + sealed
        }

        /// Checks the client's identity; the handshake is then complete.
        public func receive(clientAuth: [UInt8]) throws(HandoffError) -> Session {
            // Taken out, so this is the secrets' one reference and the wipe reaches them.
            guard var pending = self.pending else { throw failure("authentication before hello") }
            self.pending = nil
            defer {
                Sodium.wipe(&pending.secret)
                Sodium.wipe(&pending.handshakeKey)
            }
            guard clientAuth.count == clientAuthBytes else { throw failure("the client's authentication has the wrong size") }
            let (clientKey, _) = try openIdentity(clientAuth, signed: clientContext + pending.h2, key: pending.handshakeKey,
                                                  counter: 2, associatedData: [])
            if let expected = pending.expected, expected != clientKey {
                throw failure("the client is not the device its hint names")
            }
            let h3 = hash(pending.h2, clientAuth)
            let keys = sessionKeys(secret: pending.secret, transcript: h3)
            return Session(purpose: pending.purpose, cipher: pending.cipher, peerKey: clientKey, sendKey: keys.serverToClient,
                           receiveKey: keys.clientToServer, transcriptHash: h3, exporterKey: keys.exporter)
        }
    }
}
