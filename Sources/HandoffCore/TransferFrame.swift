/// Frames on the transfer socket: `version u8, kind u8, length u32 BE, body`.
/// The three handshake frames travel in the clear; every other frame travels
/// only inside the encrypted channel the handshake sets up (Docs/PROTOCOL.md).
public enum TransferFrame: Equatable, Sendable {
    case hello([UInt8])
    case serverHello([UInt8])
    case clientAuth([UInt8])
    case fetch(FetchRequest)
    case payload([UInt8])
    /// The rest of a payload, from `offset`: the answer to a fetch that resumes (Docs/PROTOCOL.md, "Resume").
    case payloadFrom(offset: UInt64, bytes: [UInt8])
    case refusal(Refusal)
    case pairRequest(name: String)
    case pairCommit(name: String, commitment: [UInt8])
    case pairNonce([UInt8])
    case pairReveal([UInt8])
    case pairConfirm(accepted: Bool)
    /// After both users confirmed: what the other side must store (Docs/PROTOCOL.md, "Pairing").
    case pairKeys(PairKeys)
    /// After storing (or failing to): only when both sent `true` is the pairing kept.
    case pairStored(Bool)

    public static let version: UInt8 = 2
    public static let headerBytes = 6
    public static let maximumBodyBytes = ActivityLimits.payloadBytes
    public static let pairNonceBytes = 32

    enum Kind: UInt8 {
        case fetch = 2, payload = 3, refusal = 4, hello = 5, serverHello = 6, clientAuth = 7
        case pairRequest = 8, pairCommit = 9, pairNonce = 10, pairReveal = 11, pairConfirm = 12
        case pairKeys = 13, pairStored = 14
        case fetchFrom = 15, payloadFrom = 16
    }

    /// What a `payloadFrom` body carries before the payload bytes: the offset.
    public static let payloadOffsetBytes = 8

    public struct PairKeys: Equatable, Sendable {
        /// The sender's static X25519 key, for the pair key.
        public var agreementKey: [UInt8]
        /// The secret the sender's discovery tokens are keyed with.
        public var discoverySecret: [UInt8]
        /// The sender's current 15-minute period; the seal chain starts just before the earlier of the two.
        public var epoch: UInt64
        public static let bodyBytes = 72

        public init(agreementKey: [UInt8], discoverySecret: [UInt8], epoch: UInt64) {
            self.agreementKey = agreementKey
            self.discoverySecret = discoverySecret
            self.epoch = epoch
        }
    }

    /// The receiver cites the summary it accepted; the channel already proves who it is.
    /// A request with an offset resumes a cut transfer: it travels as `fetchFrom`
    /// (kind 15), one without as `fetch` (kind 2), so each request has one encoding.
    public struct FetchRequest: Equatable, Sendable {
        public var summarySender: DeviceKey
        public var summarySequence: UInt64
        public var payloadDigest: [UInt8]
        /// The first payload byte wanted: what the receiver already holds, authenticated.
        public var offset: UInt64

        public init(summarySender: DeviceKey, summarySequence: UInt64, payloadDigest: [UInt8], offset: UInt64 = 0) {
            self.summarySender = summarySender
            self.summarySequence = summarySequence
            self.payloadDigest = payloadDigest
            self.offset = offset
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
        let (header, body) = encodedParts()
        var bytes = header
        bytes.reserveCapacity(header.count + body.count)
        bytes += body
        return bytes
    }

    /// The 6-byte header and the body, apart, so a large payload is never copied
    /// into a second buffer just to be sent.
    public func encodedParts() -> (header: [UInt8], body: [UInt8]) {
        let kind: Kind
        var body = ByteWriter()
        switch self {
        case let .hello(bytes):
            kind = .hello
            body.write(bytes)
        case let .serverHello(bytes):
            kind = .serverHello
            body.write(bytes)
        case let .clientAuth(bytes):
            kind = .clientAuth
            body.write(bytes)
        case let .fetch(request):
            kind = request.offset == 0 ? .fetch : .fetchFrom
            body.write(request.summarySender.bytes)
            body.write(request.summarySequence)
            body.write(request.payloadDigest)
            if request.offset != 0 { body.write(request.offset) }
        case .payload:
            kind = .payload // the body is the payload itself, returned below without a copy
        case let .payloadFrom(offset, bytes):
            kind = .payloadFrom
            body = ByteWriter(capacity: Self.payloadOffsetBytes + bytes.count)
            body.write(offset)
            body.write(bytes)
        case let .refusal(refusal):
            kind = .refusal
            let code = Array(refusal.code.rawValue.utf8)
            let message = Array(refusal.message.utf8Prefix(maxBytes: Refusal.messageBytes).utf8)
            body.write(UInt8(code.count))
            body.write(code)
            body.write(UInt16(message.count))
            body.write(message)
        case let .pairRequest(name):
            kind = .pairRequest
            Self.writeName(name, into: &body)
        case let .pairCommit(name, commitment):
            kind = .pairCommit
            Self.writeName(name, into: &body)
            body.write(commitment)
        case let .pairNonce(nonce):
            kind = .pairNonce
            body.write(nonce)
        case let .pairReveal(nonce):
            kind = .pairReveal
            body.write(nonce)
        case let .pairConfirm(accepted):
            kind = .pairConfirm
            body.write(UInt8(accepted ? 1 : 0))
        case let .pairKeys(keys):
            kind = .pairKeys
            body.write(keys.agreementKey)
            body.write(keys.discoverySecret)
            body.write(keys.epoch)
        case let .pairStored(stored):
            kind = .pairStored
            body.write(UInt8(stored ? 1 : 0))
        }
        if case let .payload(bytes) = self { return (Self.header(kind: kind, length: bytes.count), bytes) }
        return (Self.header(kind: kind, length: body.bytes.count), body.bytes)
    }

    /// The raw kinds of the two payload frames, for a receiver that reads their bodies itself.
    public static let payloadKind = Kind.payload.rawValue
    public static let payloadFromKind = Kind.payloadFrom.rawValue

    /// The header of a `payload` frame (offset 0) or a `payloadFrom` frame of `count` bytes.
    public static func header(payloadFrom offset: Int, count: Int) -> [UInt8] {
        offset == 0 ? header(kind: .payload, length: count) : header(kind: .payloadFrom, length: payloadOffsetBytes + count)
    }

    static func header(kind: Kind, length: Int) -> [UInt8] {
        var writer = ByteWriter(capacity: headerBytes)
        writer.write(version)
        writer.write(kind.rawValue)
        writer.write(UInt32(length))
        return writer.bytes
    }

    private static func writeName(_ name: String, into body: inout ByteWriter) {
        let bytes = Array(name.utf8Prefix(maxBytes: Summary.nameBytes).utf8)
        body.write(UInt8(bytes.count))
        body.write(bytes)
    }

    private static func readName(_ reader: inout ByteReader) throws(WireError) -> String {
        let length = Int(try reader.readUInt8())
        guard length <= Summary.nameBytes else { throw .tooLong(field: "device name", length: length, limit: Summary.nameBytes) }
        let name = try reader.readUTF8(length)
        guard !Activity.containsUnsafeCharacters(name) else { throw .invalidValue("device name contains control characters") }
        return name
    }

    /// Which frames a reader takes in its current state, and the most each may carry.
    public enum Limits: Sendable {
        /// Before authentication: only the handshake messages (and a refusal), each
        /// small, so a stranger's frame is refused from its 6-byte header, before
        /// any of its body is read or allocated.
        case clear
        /// Inside the authenticated channel: any frame up to `maximumBodyBytes`.
        case authenticated

        public func maximumBodyBytes(kind: UInt8) -> Int? {
            switch self {
            case .authenticated:
                return Kind(rawValue: kind) == .payloadFrom ? TransferFrame.maximumBodyBytes + TransferFrame.payloadOffsetBytes
                    : TransferFrame.maximumBodyBytes
            case .clear:
                switch Kind(rawValue: kind) {
                case .hello, .serverHello, .clientAuth: return TransferFrame.maximumHandshakeBodyBytes
                case .refusal: return TransferFrame.maximumRefusalBodyBytes
                default: return nil
                }
            }
        }
    }

    public static let maximumHandshakeBodyBytes = 256
    /// Code length byte, code, message length, message.
    public static let maximumRefusalBodyBytes = 1 + 255 + 2 + Refusal.messageBytes

    /// Parses the 6-byte header; returns the kind and the body length to read next,
    /// refusing a kind or length that `limits` does not allow.
    public static func bodyLength(header: [UInt8], limits: Limits = .authenticated) throws(WireError) -> (kind: UInt8, length: Int) {
        var reader = ByteReader(header)
        let version = try reader.readUInt8()
        guard version == Self.version else { throw .unsupportedVersion(version) }
        let kind = try reader.readUInt8()
        guard Kind(rawValue: kind) != nil else { throw .unknownKind(kind) }
        let length = Int(try reader.readUInt32BE())
        guard let limit = limits.maximumBodyBytes(kind: kind) else {
            throw .invalidValue("frame kind \(kind) is not allowed before authentication")
        }
        guard length <= limit else {
            throw .tooLong(field: "frame", length: length, limit: limit)
        }
        return (kind, length)
    }

    public init(kind rawKind: UInt8, body: [UInt8]) throws(WireError) {
        guard let kind = Kind(rawValue: rawKind) else { throw .unknownKind(rawKind) }
        var reader = ByteReader(body)
        switch kind {
        case .hello, .serverHello, .clientAuth:
            // Fixed sizes, checked by the handshake; bounded here so nothing large is held.
            guard body.count <= Self.maximumHandshakeBodyBytes else {
                throw .tooLong(field: "handshake message", length: body.count, limit: Self.maximumHandshakeBodyBytes)
            }
            self = kind == .hello ? .hello(body) : kind == .serverHello ? .serverHello(body) : .clientAuth(body)
            return
        case .fetch, .fetchFrom:
            let sender = DeviceKey(bytes: try reader.readBytes(DeviceKey.byteCount))!
            let sequence = try reader.readUInt64BE()
            let digest = try reader.readBytes(Summary.digestBytes)
            var offset: UInt64 = 0
            if kind == .fetchFrom {
                offset = try reader.readUInt64BE()
                try Self.checkResumeOffset(offset)
            }
            self = .fetch(FetchRequest(summarySender: sender, summarySequence: sequence, payloadDigest: digest, offset: offset))
        case .payload:
            self = .payload(body)
            return
        case .payloadFrom:
            let offset = try reader.readUInt64BE()
            try Self.checkResumeOffset(offset)
            guard body.count - Self.payloadOffsetBytes <= Self.maximumBodyBytes - Int(offset) else {
                throw .tooLong(field: "payload from \(offset)", length: body.count - Self.payloadOffsetBytes,
                               limit: Self.maximumBodyBytes - Int(offset))
            }
            self = .payloadFrom(offset: offset, bytes: Array(body[Self.payloadOffsetBytes...]))
            return
        case .refusal:
            let codeText = try reader.readUTF8(Int(try reader.readUInt8()))
            let messageLength = Int(try reader.readUInt16BE())
            guard messageLength <= Refusal.messageBytes else {
                throw .tooLong(field: "refusal message", length: messageLength, limit: Refusal.messageBytes)
            }
            // Shown to the user: characters that could rewrite the terminal are dropped.
            let message = String(String.UnicodeScalarView(try reader.readUTF8(messageLength).unicodeScalars.filter {
                !Activity.containsUnsafeCharacters(String($0))
            }))
            // An unknown code from a newer peer still fails closed, as an internal error.
            self = .refusal(Refusal(code: HandoffError.Code(rawValue: codeText) ?? .internal, message: message))
        case .pairRequest:
            self = .pairRequest(name: try Self.readName(&reader))
        case .pairCommit:
            let name = try Self.readName(&reader)
            self = .pairCommit(name: name, commitment: try reader.readBytes(32))
        case .pairNonce:
            self = .pairNonce(try reader.readBytes(Self.pairNonceBytes))
        case .pairReveal:
            self = .pairReveal(try reader.readBytes(Self.pairNonceBytes))
        case .pairConfirm:
            let flag = try reader.readUInt8()
            guard flag <= 1 else { throw .invalidValue("confirmation must be 0 or 1") }
            self = .pairConfirm(accepted: flag == 1)
        case .pairKeys:
            self = .pairKeys(PairKeys(agreementKey: try reader.readBytes(32), discoverySecret: try reader.readBytes(32),
                                      epoch: try reader.readUInt64BE()))
        case .pairStored:
            let flag = try reader.readUInt8()
            guard flag <= 1 else { throw .invalidValue("stored must be 0 or 1") }
            self = .pairStored(flag == 1)
        }
        try reader.expectEnd()
    }

    /// A resumed transfer starts after at least one byte and inside the largest payload;
    /// offset 0 is a plain `fetch` or `payload`, so it has one encoding only.
    public static func checkResumeOffset(_ offset: UInt64) throws(WireError) {
        guard offset >= 1, offset < UInt64(maximumBodyBytes) else {
            throw .invalidValue("resume offset \(offset) is outside 1..<\(maximumBodyBytes)")
        }
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
