/// A continuation stream on the wire (Docs/PROTOCOL.md, "Continuation
/// stream"): after a handshake with purpose 3, each direction is a
/// secretstream of records `u32 BE length || ciphertext`. The first record each
/// way is a control message (tag PUSH): the continuing host's `open`, the
/// originating host's `accepted` or `refused`. Then come data records (tag
/// MESSAGE, 1 byte to `maximumDataBytes`) and one empty FINAL record when that
/// side's app stops writing. Nothing may follow FINAL.
public enum ContinuationStreamFrame: Equatable, Sendable {
    /// Cites the summary the continuing host accepted, as a fetch does.
    case open(TransferFrame.FetchRequest)
    case accepted
    case refused(TransferFrame.Refusal)

    public static let version: UInt8 = 1
    /// Largest data record: big enough to amortise a record's cost, small enough
    /// that each side holds one of them per direction.
    public static let maximumDataBytes = 256 * 1024
    public static let lengthBytes = 4
    /// secretstream's per-record overhead (header byte and MAC), counted in `length`.
    public static let sealOverheadBytes = 17
    public static let maximumRecordBytes = maximumDataBytes + sealOverheadBytes
    static let openBytes = 2 + DeviceKey.byteCount + 8 + Summary.digestBytes

    /// secretstream tags as this format uses them.
    public enum Tag {
        public static let message: UInt8 = 0
        public static let push: UInt8 = 1
        public static let final: UInt8 = 3
    }

    enum Kind: UInt8 {
        case open = 1, accepted = 2, refused = 3
    }

    public func encoded() -> [UInt8] {
        var writer = ByteWriter()
        writer.write(Self.version)
        switch self {
        case let .open(request):
            writer.write(Kind.open.rawValue)
            writer.write(request.summarySender.bytes)
            writer.write(request.summarySequence)
            writer.write(request.payloadDigest)
        case .accepted:
            writer.write(Kind.accepted.rawValue)
        case let .refused(refusal):
            writer.write(Kind.refused.rawValue)
            let code = Array(refusal.code.rawValue.utf8)
            let message = Array(refusal.message.utf8Prefix(maxBytes: TransferFrame.Refusal.messageBytes).utf8)
            writer.write(UInt8(code.count))
            writer.write(code)
            writer.write(UInt16(message.count))
            writer.write(message)
        }
        return writer.bytes
    }

    public init(_ bytes: [UInt8]) throws(WireError) {
        var reader = ByteReader(bytes)
        let version = try reader.readUInt8()
        guard version == Self.version else { throw .unsupportedVersion(version) }
        guard let kind = Kind(rawValue: try reader.readUInt8()) else { throw .invalidValue("unknown stream control kind") }
        switch kind {
        case .open:
            guard let sender = DeviceKey(bytes: try reader.readBytes(DeviceKey.byteCount)) else { throw .invalidValue("bad sender key") }
            let sequence = try reader.readUInt64BE()
            let digest = try reader.readBytes(Summary.digestBytes)
            self = .open(.init(summarySender: sender, summarySequence: sequence, payloadDigest: digest))
        case .accepted:
            self = .accepted
        case .refused:
            let codeText = try reader.readUTF8(Int(try reader.readUInt8()))
            guard let code = HandoffError.Code(rawValue: codeText) else { throw .invalidValue("unknown refusal code") }
            let length = Int(try reader.readUInt16BE())
            guard length <= TransferFrame.Refusal.messageBytes else {
                throw .tooLong(field: "refusal message", length: length, limit: TransferFrame.Refusal.messageBytes)
            }
            self = .refused(.init(code: code, message: try reader.readUTF8(length)))
        }
        try reader.expectEnd()
    }

    /// The sealed length a record's 4-byte prefix declares, checked before anything is read or allocated.
    public static func sealedLength(prefix: UnsafeRawBufferPointer) throws(WireError) -> Int {
        guard prefix.count >= lengthBytes else { throw .truncated(needed: lengthBytes, available: prefix.count) }
        let length = Int(prefix.loadUnaligned(as: UInt32.self).bigEndian)
        guard length >= sealOverheadBytes, length <= maximumRecordBytes else {
            throw .invalidValue("a stream record of \(length) bytes (allowed \(sealOverheadBytes) to \(maximumRecordBytes))")
        }
        return length
    }
}

/// What one side has received so far in one direction of a stream: a control
/// message first, then data until FINAL, then nothing. Pure; the relay feeds it
/// each authenticated record's tag and size.
public struct StreamInbound: Sendable, Equatable {
    public enum State: Sendable, Equatable { case control, data, finished }
    public enum Record: Sendable, Equatable { case control, data, end }

    public private(set) var state: State

    public init(state: State = .control) { self.state = state }

    public mutating func received(tag: UInt8, plaintextBytes: Int) throws(WireError) -> Record {
        typealias Tag = ContinuationStreamFrame.Tag
        switch state {
        case .control:
            guard tag == Tag.push else { throw .invalidValue("a stream must start with a control message") }
            state = .data
            return .control
        case .data:
            if tag == Tag.final {
                guard plaintextBytes == 0 else { throw .invalidValue("the FINAL record of a stream carries data") }
                state = .finished
                return .end
            }
            guard tag == Tag.message else { throw .invalidValue("unexpected tag \(tag) in a stream") }
            guard plaintextBytes > 0 else { throw .invalidValue("an empty data record") }
            return .data
        case .finished:
            throw .invalidValue("a record after the end of the stream")
        }
    }
}

/// The two directions of a relayed stream and how each ended. A clean end of
/// one direction (its app stopped writing) leaves the other open; a failure of
/// either ends both. Pure; the relay asks it what to do after each end.
public struct StreamRelayState: Sendable, Equatable {
    public enum Direction: Sendable, Hashable { case toPeer, toApp }
    public enum Outcome: Sendable, Equatable { case clean, failed }
    public enum Action: Sendable, Equatable {
        /// The other direction goes on.
        case keepGoing
        /// Both ended cleanly: the owners close their sockets.
        case done
        /// Close both sockets now, which ends the other direction too.
        case abort
    }

    public private(set) var ended: [Direction: Outcome] = [:]

    public init() {}

    public mutating func end(_ direction: Direction, _ outcome: Outcome) -> Action {
        guard ended[direction] == nil else { return ended.count == 2 ? .done : .keepGoing }
        ended[direction] = outcome
        if outcome == .failed { return .abort }
        if ended.count == 2 { return ended.values.contains(.failed) ? .abort : .done }
        return ended.values.contains(.failed) ? .abort : .keepGoing
    }
}
