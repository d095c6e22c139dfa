/// What a peer sees before accepting: who offers what, how big it is and its
/// digest. Signed by the sender over the exact encoded bytes.
public struct Summary: Equatable, Sendable {
    public var senderKey: DeviceKey
    public var senderName: String
    public var activityType: String
    public var title: String
    public var payloadSize: UInt32
    /// BLAKE2b-256 of the payload.
    public var payloadDigest: [UInt8]
    public var sequence: UInt64
    public var timestampMillis: UInt64
    public var expiresAtMillis: UInt64

    public init(senderKey: DeviceKey, senderName: String, activityType: String, title: String,
                payloadSize: UInt32, payloadDigest: [UInt8], sequence: UInt64,
                timestampMillis: UInt64, expiresAtMillis: UInt64) {
        self.senderKey = senderKey
        self.senderName = senderName
        self.activityType = activityType
        self.title = title
        self.payloadSize = payloadSize
        self.payloadDigest = payloadDigest
        self.sequence = sequence
        self.timestampMillis = timestampMillis
        self.expiresAtMillis = expiresAtMillis
    }

    public static let version: UInt8 = 1
    public static let digestBytes = 32
    public static let nameBytes = 64
    /// Largest signed summary: fixed fields, the longest name, type and title, and the signature.
    public static let maximumEncodedBytes = 1 + 32 + 1 + nameBytes + 1 + ActivityLimits.typeBytes + 2
        + ActivityLimits.titleBytes + 4 + digestBytes + 8 + 8 + 8 + SignatureSize.ed25519

    public func isExpired(nowMillis: UInt64) -> Bool { expiresAtMillis <= nowMillis }

    /// The bytes the signature covers (without the context prefix).
    public func encodedBody() throws(WireError) -> [UInt8] {
        guard senderName.utf8.count <= Self.nameBytes else {
            throw .tooLong(field: "device name", length: senderName.utf8.count, limit: Self.nameBytes)
        }
        guard activityType.utf8.count <= ActivityLimits.typeBytes else {
            throw .tooLong(field: "activity type", length: activityType.utf8.count, limit: ActivityLimits.typeBytes)
        }
        guard title.utf8.count <= ActivityLimits.titleBytes else {
            throw .tooLong(field: "title", length: title.utf8.count, limit: ActivityLimits.titleBytes)
        }
        guard payloadDigest.count == Self.digestBytes else {
            throw .invalidValue("digest must be \(Self.digestBytes) bytes")
        }
        var writer = ByteWriter(capacity: Self.maximumEncodedBytes)
        writer.write(Self.version)
        writer.write(senderKey.bytes)
        writer.write(UInt8(senderName.utf8.count))
        writer.write(contentsOf: senderName.utf8)
        writer.write(UInt8(activityType.utf8.count))
        writer.write(contentsOf: activityType.utf8)
        writer.write(UInt16(title.utf8.count))
        writer.write(contentsOf: title.utf8)
        writer.write(payloadSize)
        writer.write(payloadDigest)
        writer.write(sequence)
        writer.write(timestampMillis)
        writer.write(expiresAtMillis)
        return writer.bytes
    }

    /// Encodes and signs: body followed by the 64-byte Ed25519 signature.
    public func signed(by signer: some MessageSigning) throws(WireError) -> SignedSummary {
        let body = try encodedBody()
        let signature = signer.signature(for: SigningContext.summary + body)
        return SignedSummary(summary: self, body: body, signature: signature)
    }
}

/// A summary as it travels: the decoded fields, the exact body bytes and the signature.
public struct SignedSummary: Equatable, Sendable {
    public let summary: Summary
    public let body: [UInt8]
    public let signature: [UInt8]

    public var encoded: [UInt8] { body + signature }

    public func verify(with verifier: some SignatureVerifying) -> Bool {
        verifier.isValid(signature: signature, message: SigningContext.summary + body, key: summary.senderKey)
    }

    public init(summary: Summary, body: [UInt8], signature: [UInt8]) {
        self.summary = summary
        self.body = body
        self.signature = signature
    }

    /// Parses without verifying; the caller verifies with the sender's key.
    public init(decoding bytes: [UInt8]) throws(WireError) {
        guard bytes.count <= Summary.maximumEncodedBytes else {
            throw .tooLong(field: "summary", length: bytes.count, limit: Summary.maximumEncodedBytes)
        }
        var reader = ByteReader(bytes)
        let version = try reader.readUInt8()
        guard version == Summary.version else { throw .unsupportedVersion(version) }
        let key = DeviceKey(bytes: try reader.readBytes(DeviceKey.byteCount))!
        let nameLength = Int(try reader.readUInt8())
        guard nameLength <= Summary.nameBytes else {
            throw .tooLong(field: "device name", length: nameLength, limit: Summary.nameBytes)
        }
        let name = try reader.readUTF8(nameLength)
        let typeLength = Int(try reader.readUInt8())
        guard typeLength <= ActivityLimits.typeBytes else {
            throw .tooLong(field: "activity type", length: typeLength, limit: ActivityLimits.typeBytes)
        }
        let type = try reader.readUTF8(typeLength)
        let titleLength = Int(try reader.readUInt16BE())
        guard titleLength <= ActivityLimits.titleBytes else {
            throw .tooLong(field: "title", length: titleLength, limit: ActivityLimits.titleBytes)
        }
        let title = try reader.readUTF8(titleLength)
        let size = try reader.readUInt32BE()
        let digest = try reader.readBytes(Summary.digestBytes)
        let sequence = try reader.readUInt64BE()
        let timestamp = try reader.readUInt64BE()
        let expires = try reader.readUInt64BE()
        let bodyLength = reader.offset
        let signature = try reader.readBytes(SignatureSize.ed25519)
        try reader.expectEnd()
        // Shown to people as they are: refuse what could rewrite a terminal line.
        for text in [name, type, title] where Activity.containsUnsafeCharacters(text) {
            throw .invalidValue("summary text contains control characters")
        }
        summary = Summary(senderKey: key, senderName: name, activityType: type, title: title,
                          payloadSize: size, payloadDigest: digest, sequence: sequence,
                          timestampMillis: timestamp, expiresAtMillis: expires)
        body = Array(bytes[0..<bodyLength])
        self.signature = signature
    }
}
