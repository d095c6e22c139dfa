/// A publisher's activity as the daemon keeps it: the encoded payload (the bytes a
/// peer fetches) and the fixed fields read from it, with no decoded userInfo, so an
/// activity costs its payload once. Offering it again under a new sequence rewrites
/// the sequence's eight bytes in place.
public struct EncodedActivity: Sendable {
    public private(set) var header: ActivityHeader
    public private(set) var payload: [UInt8]

    /// A checked activity (Activity.validate) encoded.
    public init(_ activity: Activity) throws(HandoffError) {
        try self.init(payload: activity.encodedPayload())
    }

    /// A payload checked as the decoder checks it (Activity.scanPayload), without building its userInfo.
    public init(payload: [UInt8]) throws(HandoffError) {
        var scanned: Result<ActivityHeader, HandoffError> = .failure(.init(.internal, "not scanned", fix: ""))
        payload.withUnsafeBytes { bytes in scanned = Result { () throws(HandoffError) in try Activity.scanPayload(bytes) } }
        header = try scanned.get()
        self.payload = payload
    }

    /// Where the sequence is in the payload: the eight bytes before the userInfo (Docs/PROTOCOL.md, "Activity payload").
    private var sequenceOffset: Int { header.userInfoOffset - 8 }

    public var sequence: UInt64 {
        get { header.sequence }
        set {
            header.sequence = newValue
            let offset = sequenceOffset
            payload.withUnsafeMutableBytes { $0.storeBytes(of: newValue.bigEndian, toByteOffset: offset, as: UInt64.self) }
        }
    }

    public var type: String { header.type }
    public var expiresAtMillis: UInt64? { header.expiresAtMillis }

    public func isExpired(nowMillis: UInt64) -> Bool { header.isExpired(nowMillis: nowMillis) }
}
