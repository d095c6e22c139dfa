/// The signed announcement: "this device is here, reachable on this port,
/// offering this summary". It travels sealed (`SealedAnnouncement`) by
/// multicast and unicast; in the clear only as a pairing beacon. Signed, so
/// nobody else can speak for a device; its sequence only grows, so a captured
/// datagram cannot be replayed.
public struct Announcement: Equatable, Sendable {
    public enum Kind: UInt8, Sendable {
        case present = 1
        /// Sent when the daemon stops, so peers drop it at once instead of after the TTL.
        case goodbye = 2
        /// Sent in the clear, only while the user has pairing open: "I can be paired".
        case pairing = 3
    }

    public var kind: Kind
    public var senderKey: DeviceKey
    /// Strictly increasing per sender, across restarts (it starts from the clock).
    public var sequence: UInt64
    public var timestampMillis: UInt64
    public var transferPort: UInt16
    public var ttlSeconds: UInt16
    /// What the sender says about its own transport conditions, so that a
    /// peer can name the one that fails on the sender's side.
    public var state: SenderState = []
    public var name: String
    public var summary: SignedSummary?

    public init(kind: Kind, senderKey: DeviceKey, sequence: UInt64, timestampMillis: UInt64,
                transferPort: UInt16, ttlSeconds: UInt16, name: String, summary: SignedSummary?) {
        self.kind = kind
        self.senderKey = senderKey
        self.sequence = sequence
        self.timestampMillis = timestampMillis
        self.transferPort = transferPort
        self.ttlSeconds = ttlSeconds
        self.name = name
        self.summary = summary
    }

    public struct SenderState: OptionSet, Sendable, Hashable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// Handoff is switched off on the sender (`handoff-peer disable`).
        public static let disabled = SenderState(rawValue: 0x01)
        /// The sender uses Bluetooth (it was given a controller).
        public static let bluetoothConfigured = SenderState(rawValue: 0x02)
        /// ... and its controller is up, advertising and scanning.
        public static let bluetoothWorking = SenderState(rawValue: 0x04)
        /// The offered activity has a webpageURL: a receiver without an app for
        /// its type can open it in a browser (Safari's fallback).
        public static let offerHasWebpageURL = SenderState(rawValue: 0x08)
        /// Nothing is offered because the last offer was resigned (it may be made current again) ...
        public static let offerResigned = SenderState(rawValue: 0x10)
        /// ... or invalidated (that activity has ended). Neither: it expired, or there was none.
        public static let offerInvalidated = SenderState(rawValue: 0x20)
        /// The sender takes announcements by unicast on its transfer port (UDP): once
        /// its address is known, send it no multicast copies.
        public static let acceptsUnicast = SenderState(rawValue: 0x40)
        /// The sender does not list the recipient now (it just started, its address
        /// changed, or it has not heard it): answer with the current state at once.
        public static let answerMe = SenderState(rawValue: 0x80)
    }

    public static let magic: [UInt8] = Array("HNDF".utf8)

    /// Size, magic and version, shared by both forms; returns a reader at the kind byte.
    static func prologue(_ bytes: [UInt8], version expected: UInt8) throws(WireError) -> ByteReader {
        guard bytes.count <= maximumBytes else {
            throw .tooLong(field: "announcement", length: bytes.count, limit: maximumBytes)
        }
        var reader = ByteReader(bytes)
        guard try reader.readBytes(4) == magic else { throw .badMagic }
        let version = try reader.readUInt8()
        guard version == expected else { throw .unsupportedVersion(version) }
        return reader
    }
    public static let version: UInt8 = 1
    /// Comfortably below the IPv6 minimum MTU, so a datagram is never fragmented.
    public static let maximumBytes = 1200

    public func encodedBody() throws(WireError) -> [UInt8] {
        guard name.utf8.count <= Summary.nameBytes else {
            throw .tooLong(field: "device name", length: name.utf8.count, limit: Summary.nameBytes)
        }
        var writer = ByteWriter(capacity: Self.maximumBytes)
        writer.write(Self.magic)
        writer.write(Self.version)
        writer.write(kind.rawValue)
        writer.write(senderKey.bytes)
        writer.write(sequence)
        writer.write(timestampMillis)
        writer.write(transferPort)
        writer.write(ttlSeconds)
        writer.write(state.rawValue)
        writer.write(UInt8(name.utf8.count))
        writer.write(contentsOf: name.utf8)
        let summaryBytes = summary?.encoded ?? []
        writer.write(UInt16(summaryBytes.count))
        writer.write(summaryBytes)
        return writer.bytes
    }

    /// The datagram: body, then the Ed25519 signature over context + body.
    public func signedDatagram(by signer: some MessageSigning) throws(WireError) -> [UInt8] {
        let body = try encodedBody()
        let datagram = body + signer.signature(for: SigningContext.announcement + body)
        guard datagram.count <= Self.maximumBytes else {
            throw .tooLong(field: "announcement", length: datagram.count, limit: Self.maximumBytes)
        }
        return datagram
    }
}

/// A parsed datagram before its signature is checked.
public struct ReceivedAnnouncement: Sendable {
    public let announcement: Announcement
    public let body: [UInt8]
    /// nil when the datagram carries no signature at all.
    public let signature: [UInt8]?

    public init(decoding bytes: [UInt8]) throws(WireError) {
        var reader = try Announcement.prologue(bytes, version: Announcement.version)
        let rawKind = try reader.readUInt8()
        guard let kind = Announcement.Kind(rawValue: rawKind) else { throw .unknownKind(rawKind) }
        let key = DeviceKey(bytes: try reader.readBytes(DeviceKey.byteCount))!
        let sequence = try reader.readUInt64BE()
        let timestamp = try reader.readUInt64BE()
        let port = try reader.readUInt16BE()
        let ttl = try reader.readUInt16BE()
        // Bits this version does not know are kept (the signature covers them) and mean nothing here.
        let state = Announcement.SenderState(rawValue: try reader.readUInt8())
        let nameLength = Int(try reader.readUInt8())
        guard nameLength <= Summary.nameBytes else {
            throw .tooLong(field: "device name", length: nameLength, limit: Summary.nameBytes)
        }
        let name = try reader.readUTF8(nameLength)
        guard !Activity.containsUnsafeCharacters(name) else { throw .invalidValue("device name contains control characters") }
        let summaryLength = Int(try reader.readUInt16BE())
        let summary = summaryLength == 0 ? nil : try SignedSummary(decoding: try reader.readBytes(summaryLength))
        let bodyLength = reader.offset
        switch reader.remaining {
        case 0: signature = nil
        case SignatureSize.ed25519: signature = try reader.readBytes(SignatureSize.ed25519)
        default: throw .invalidValue("signature must be \(SignatureSize.ed25519) bytes, found \(reader.remaining)")
        }
        var decoded = Announcement(kind: kind, senderKey: key, sequence: sequence, timestampMillis: timestamp,
                                   transferPort: port, ttlSeconds: ttl, name: name, summary: summary)
        decoded.state = state
        announcement = decoded
        body = Array(bytes[0..<bodyLength])
    }

    public func verify(with verifier: some SignatureVerifying) -> Bool {
        guard let signature else { return false }
        return verifier.isValid(signature: signature, message: SigningContext.announcement + body,
                                key: announcement.senderKey)
    }
}

/// The sealed form in which `present` and `goodbye` announcements travel: one
/// datagram per paired peer, encrypted with the key that pair shares
/// (Docs/PROTOCOL.md, "Sealed announcements"). Strangers see a rotating hint,
/// a nonce and ciphertext: no key, name, type or title.
public struct SealedAnnouncement: Equatable, Sendable {
    public static let version: UInt8 = 2
    public static let kind: UInt8 = 1
    public static let hintBytes = 8
    public static let nonceBytes = 24
    public static let tagBytes = 16
    public static let headerBytes = 4 + 1 + 1 + hintBytes + nonceBytes

    public var hint: [UInt8]
    public var nonce: [UInt8]
    public var ciphertext: [UInt8]

    public init(hint: [UInt8], nonce: [UInt8], ciphertext: [UInt8]) {
        self.hint = hint
        self.nonce = nonce
        self.ciphertext = ciphertext
    }

    /// The bytes the AEAD authenticates besides the ciphertext.
    public var header: [UInt8] { Self.header(hint: hint, nonce: nonce) }

    public var encoded: [UInt8] { header + ciphertext }

    public static func header(hint: [UInt8], nonce: [UInt8]) -> [UInt8] {
        Announcement.magic + [version, kind] + hint + nonce
    }

    public init(decoding bytes: [UInt8]) throws(WireError) {
        var reader = try Announcement.prologue(bytes, version: Self.version)
        let kind = try reader.readUInt8()
        guard kind == Self.kind else { throw .unknownKind(kind) }
        hint = try reader.readBytes(Self.hintBytes)
        nonce = try reader.readBytes(Self.nonceBytes)
        guard reader.remaining >= Self.tagBytes else {
            throw .truncated(needed: Self.tagBytes, available: reader.remaining)
        }
        ciphertext = try reader.readBytes(reader.remaining)
    }

    /// The version byte of a datagram, to tell clear pairing beacons (1) from sealed announcements (2).
    public static func version(of bytes: [UInt8]) -> UInt8? {
        bytes.count > 4 && Array(bytes[0..<4]) == Announcement.magic ? bytes[4] : nil
    }
}
