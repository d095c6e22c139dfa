/// HCI events Handoff understands (Core Vol 4, Part E, 7.7); anything else is
/// kept as `.other` and ignored. Every length is checked against the bytes
/// that arrived: controllers and emulators are trusted no more than the network.
public enum HCIEvent: Equatable, Sendable {
    case commandComplete(opcode: UInt16, returnParameters: [UInt8])
    case commandStatus(status: UInt8, opcode: UInt16)
    case advertisingReports([AdvertisingReport])
    case other(code: UInt8)

    public static let packetType: UInt8 = 0x04

    /// The status byte that starts most Command Complete return parameters.
    public var status: UInt8? {
        switch self {
        case let .commandComplete(_, parameters): parameters.first
        case let .commandStatus(status, _): status
        default: nil
        }
    }

    /// Parses an event packet without its H4 type byte: code, length, parameters.
    public init(packet: [UInt8]) throws(WireError) {
        var reader = LittleEndianReader(packet)
        let code = try reader.readUInt8()
        let length = Int(try reader.readUInt8())
        guard reader.remaining == length else {
            throw reader.remaining < length ? .truncated(needed: length, available: reader.remaining) : .trailingBytes(reader.remaining - length)
        }
        switch code {
        case 0x0E:
            _ = try reader.readUInt8() // Num_HCI_Command_Packets
            let opcode = try reader.readUInt16()
            self = .commandComplete(opcode: opcode, returnParameters: try reader.readBytes(reader.remaining))
        case 0x0F:
            let status = try reader.readUInt8()
            _ = try reader.readUInt8()
            self = .commandStatus(status: status, opcode: try reader.readUInt16())
        case 0x3E:
            let subevent = try reader.readUInt8()
            switch subevent {
            case 0x02: self = .advertisingReports(try Self.legacyReports(&reader))
            case 0x0D: self = .advertisingReports(try Self.extendedReports(&reader))
            default: self = .other(code: code)
            }
        default:
            self = .other(code: code)
        }
    }

    /// LE Advertising Report (subevent 0x02). Reports are read one after the
    /// other, each with its own fields, as Linux does; with one report per
    /// event (what controllers send) this is exactly the specification's layout.
    static func legacyReports(_ reader: inout LittleEndianReader) throws(WireError) -> [AdvertisingReport] {
        let count = Int(try reader.readUInt8())
        guard (1...25).contains(count) else { throw .invalidValue("\(count) advertising reports") }
        var reports: [AdvertisingReport] = []
        for _ in 0..<count {
            let eventType = UInt16(try reader.readUInt8())
            let addressType = try reader.readUInt8()
            guard let address = BluetoothAddress(littleEndian: try reader.readBytes(6)) else { throw .invalidValue("address") }
            let dataLength = Int(try reader.readUInt8())
            guard dataLength <= HCICommand.maximumAdvertisingData else {
                throw .tooLong(field: "advertising data", length: dataLength, limit: HCICommand.maximumAdvertisingData)
            }
            let data = try reader.readBytes(dataLength)
            let rssi = Int8(bitPattern: try reader.readUInt8())
            reports.append(AdvertisingReport(eventType: eventType, addressType: addressType, address: address,
                                             rssi: rssi, data: data, extended: false))
        }
        try reader.expectEnd()
        return reports
    }

    /// LE Extended Advertising Report (subevent 0x0D).
    static func extendedReports(_ reader: inout LittleEndianReader) throws(WireError) -> [AdvertisingReport] {
        let count = Int(try reader.readUInt8())
        guard (1...10).contains(count) else { throw .invalidValue("\(count) extended advertising reports") }
        var reports: [AdvertisingReport] = []
        for _ in 0..<count {
            let eventType = try reader.readUInt16()
            let addressType = try reader.readUInt8()
            guard let address = BluetoothAddress(littleEndian: try reader.readBytes(6)) else { throw .invalidValue("address") }
            _ = try reader.readBytes(4) // primary PHY, secondary PHY, advertising SID, TX power
            let rssi = Int8(bitPattern: try reader.readUInt8())
            _ = try reader.readBytes(2 + 1 + 6) // periodic interval, direct address type, direct address
            let dataLength = Int(try reader.readUInt8())
            // Extended advertising data can be up to 229 bytes in one report.
            guard dataLength <= 229 else { throw .tooLong(field: "advertising data", length: dataLength, limit: 229) }
            let data = try reader.readBytes(dataLength)
            reports.append(AdvertisingReport(eventType: eventType, addressType: addressType, address: address,
                                             rssi: rssi, data: data, extended: true))
        }
        try reader.expectEnd()
        return reports
    }
}

public struct AdvertisingReport: Equatable, Sendable {
    public var eventType: UInt16
    public var addressType: UInt8
    public var address: BluetoothAddress
    /// dBm; 127 means "not available".
    public var rssi: Int8
    public var data: [UInt8]
    public var extended: Bool

    public init(eventType: UInt16, addressType: UInt8, address: BluetoothAddress, rssi: Int8, data: [UInt8], extended: Bool) {
        self.eventType = eventType
        self.addressType = addressType
        self.address = address
        self.rssi = rssi
        self.data = data
        self.extended = extended
    }
}

/// Splits an H4 byte stream into packets: type byte, then a header whose
/// length field says how much follows. A stream that desynchronises (an
/// unknown type) is an error: the caller reconnects rather than guess.
public struct H4Deframer: Sendable {
    private var buffer: [UInt8] = []
    /// Larger than any HCI packet (ACL data is at most 65535 + 4).
    public static let maximumBuffered = 70_000

    public init() {}

    public mutating func append(_ bytes: [UInt8]) throws(WireError) {
        buffer += bytes
        guard buffer.count <= Self.maximumBuffered else {
            throw .tooLong(field: "H4 buffer", length: buffer.count, limit: Self.maximumBuffered)
        }
    }

    /// The next complete packet (type byte, then the packet), or nil until more bytes arrive.
    public mutating func next() throws(WireError) -> (type: UInt8, packet: [UInt8])? {
        guard let type = buffer.first else { return nil }
        let headerLength: Int
        switch type {
        case 0x01: headerLength = 3 // command: opcode (2), length (1)
        case 0x02: headerLength = 4 // ACL: handle (2), length (2)
        case 0x03: headerLength = 3 // SCO: handle (2), length (1)
        case 0x04: headerLength = 2 // event: code, length
        case 0x05: headerLength = 4 // ISO: handle (2), length (2, 14 bits)
        default: throw .unknownKind(type)
        }
        guard buffer.count >= 1 + headerLength else { return nil }
        let payloadLength: Int
        switch type {
        case 0x01, 0x03: payloadLength = Int(buffer[3])
        case 0x02: payloadLength = Int(buffer[3]) | Int(buffer[4]) << 8
        case 0x05: payloadLength = (Int(buffer[3]) | Int(buffer[4]) << 8) & 0x3FFF
        default: payloadLength = Int(buffer[2])
        }
        let total = 1 + headerLength + payloadLength
        guard buffer.count >= total else { return nil }
        let packet = Array(buffer[1..<total])
        buffer.removeFirst(total)
        return (type, packet)
    }
}

/// Little-endian cursor for HCI, failing instead of overrunning.
struct LittleEndianReader {
    private var inner: ByteReader

    init(_ bytes: [UInt8]) { inner = ByteReader(bytes) }

    var remaining: Int { inner.remaining }

    mutating func readUInt8() throws(WireError) -> UInt8 { try inner.readUInt8() }

    mutating func readUInt16() throws(WireError) -> UInt16 {
        let bytes = try inner.readBytes(2)
        return UInt16(bytes[0]) | UInt16(bytes[1]) << 8
    }

    mutating func readBytes(_ count: Int) throws(WireError) -> [UInt8] { try inner.readBytes(count) }

    func expectEnd() throws(WireError) { try inner.expectEnd() }
}
