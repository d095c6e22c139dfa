/// Frames on the transfer socket: `version u8, kind u8, length u32 BE, body`.
/// The sender opens with a challenge, the receiver answers with a signed fetch
/// citing the summary it accepted, the sender replies with the payload or a refusal.
public enum TransferFrame: Equatable, Sendable {
    case challenge(Challenge)
    case fetch(FetchRequest)
    case payload([UInt8])
    case refusal(Refusal)

    public static let version: UInt8 = 1
    public static let headerBytes = 6
    public static let maximumBodyBytes = ActivityLimits.payloadBytes

    enum Kind: UInt8 { case challenge = 1, fetch = 2, payload = 3, refusal = 4 }

    public struct Challenge: Equatable, Sendable {
        public static let nonceBytes = 32
        public var nonce: [UInt8]
        public var serverKey: DeviceKey
        public init(nonce: [UInt8], serverKey: DeviceKey) {
            self.nonce = nonce
            self.serverKey = serverKey
        }
    }

    /// Signed by the receiver over the challenge, so it proves its key and cannot be replayed.
    public struct FetchRequest: Equatable, Sendable {
        public var clientKey: DeviceKey
        public var summarySender: DeviceKey
        public var summarySequence: UInt64
        public var payloadDigest: [UInt8]
        public var signature: [UInt8]

        public init(clientKey: DeviceKey, summarySender: DeviceKey, summarySequence: UInt64,
                    payloadDigest: [UInt8], signature: [UInt8] = []) {
            self.clientKey = clientKey
            self.summarySender = summarySender
            self.summarySequence = summarySequence
            self.payloadDigest = payloadDigest
            self.signature = signature
        }

        var unsignedBody: [UInt8] {
            var writer = ByteWriter()
            writer.write(clientKey.bytes)
            writer.write(summarySender.bytes)
            writer.write(summarySequence)
            writer.write(payloadDigest)
            return writer.bytes
        }

        public func signedMessage(for challenge: Challenge) -> [UInt8] {
            SigningContext.fetch + challenge.nonce + challenge.serverKey.bytes + unsignedBody
        }

        public mutating func sign(for challenge: Challenge, with signer: some MessageSigning) {
            signature = signer.signature(for: signedMessage(for: challenge))
        }

        public func verify(for challenge: Challenge, with verifier: some SignatureVerifying) -> Bool {
            verifier.isValid(signature: signature, message: signedMessage(for: challenge), key: clientKey)
        }
    }

    public struct Refusal: Equatable, Sendable {
        public var code: HandoffError.Code
        public var message: String
        public init(code: HandoffError.Code, message: String) {
            self.code = code
            self.message = message
        }
        public static let messageBytes = 512
    }

    public func encoded() -> [UInt8] {
        let kind: Kind
        var body = ByteWriter()
        switch self {
        case let .challenge(challenge):
            kind = .challenge
            body.write(challenge.nonce)
            body.write(challenge.serverKey.bytes)
        case let .fetch(request):
            kind = .fetch
            body.write(request.unsignedBody)
            body.write(request.signature)
        case let .payload(bytes):
            kind = .payload
            body.write(bytes)
        case let .refusal(refusal):
            kind = .refusal
            let code = Array(refusal.code.rawValue.utf8)
            let message = Array(refusal.message.utf8Prefix(maxBytes: Refusal.messageBytes).utf8)
            body.write(UInt8(code.count))
            body.write(code)
            body.write(UInt16(message.count))
            body.write(message)
        }
        var writer = ByteWriter(capacity: Self.headerBytes + body.bytes.count)
        writer.write(Self.version)
        writer.write(kind.rawValue)
        writer.write(UInt32(body.bytes.count))
        writer.write(body.bytes)
        return writer.bytes
    }

    /// Parses the 6-byte header; returns the body length to read next.
    public static func bodyLength(header: [UInt8]) throws(WireError) -> (kind: UInt8, length: Int) {
        var reader = ByteReader(header)
        let version = try reader.readUInt8()
        guard version == Self.version else { throw .unsupportedVersion(version) }
        let kind = try reader.readUInt8()
        guard Kind(rawValue: kind) != nil else { throw .unknownKind(kind) }
        let length = Int(try reader.readUInt32BE())
        guard length <= maximumBodyBytes else {
            throw .tooLong(field: "frame", length: length, limit: maximumBodyBytes)
        }
        return (kind, length)
    }

    public init(kind rawKind: UInt8, body: [UInt8]) throws(WireError) {
        guard let kind = Kind(rawValue: rawKind) else { throw .unknownKind(rawKind) }
        var reader = ByteReader(body)
        switch kind {
        case .challenge:
            let nonce = try reader.readBytes(Challenge.nonceBytes)
            let key = DeviceKey(bytes: try reader.readBytes(DeviceKey.byteCount))!
            self = .challenge(Challenge(nonce: nonce, serverKey: key))
        case .fetch:
            let client = DeviceKey(bytes: try reader.readBytes(DeviceKey.byteCount))!
            let sender = DeviceKey(bytes: try reader.readBytes(DeviceKey.byteCount))!
            let sequence = try reader.readUInt64BE()
            let digest = try reader.readBytes(Summary.digestBytes)
            let signature = try reader.readBytes(SignatureSize.ed25519)
            self = .fetch(FetchRequest(clientKey: client, summarySender: sender, summarySequence: sequence,
                                       payloadDigest: digest, signature: signature))
        case .payload:
            self = .payload(body)
            return
        case .refusal:
            let codeText = try reader.readUTF8(Int(try reader.readUInt8()))
            let messageLength = Int(try reader.readUInt16BE())
            guard messageLength <= Refusal.messageBytes else {
                throw .tooLong(field: "refusal message", length: messageLength, limit: Refusal.messageBytes)
            }
            let message = try reader.readUTF8(messageLength)
            // An unknown code from a newer peer still fails closed, as an internal error.
            self = .refusal(Refusal(code: HandoffError.Code(rawValue: codeText) ?? .internal, message: message))
        }
        try reader.expectEnd()
    }

    /// Decodes one complete frame from a buffer (header and body).
    public init(decoding bytes: [UInt8]) throws(WireError) {
        let (kind, length) = try Self.bodyLength(header: Array(bytes.prefix(Self.headerBytes)))
        guard bytes.count - Self.headerBytes >= length else {
            throw .truncated(needed: length, available: bytes.count - Self.headerBytes)
        }
        guard bytes.count - Self.headerBytes == length else { throw .trailingBytes(bytes.count - Self.headerBytes - length) }
        try self.init(kind: kind, body: Array(bytes[Self.headerBytes...]))
    }
}

extension String {
    /// The longest prefix of whole characters that fits in `maxBytes` of UTF-8.
    public func utf8Prefix(maxBytes: Int) -> String {
        guard utf8.count > maxBytes else { return self }
        var result = ""
        var used = 0
        for character in self {
            let size = character.utf8.count
            guard used + size <= maxBytes else { break }
            result.append(character)
            used += size
        }
        return result
    }
}
