/// The HCI commands Handoff sends, encoded by hand from the Bluetooth Core
/// specification (Vol 4, Part E, 7.x): opcode = OGF << 10 | OCF, little-endian,
/// then a parameter length byte and the parameters. Building the bytes here,
/// rather than filling libbluetooth's packed structs, keeps every byte visible
/// and testable.
public enum HCICommand: Equatable, Sendable {
    case reset
    case setEventMask(UInt64)
    case leSetEventMask(UInt64)
    case leSetRandomAddress(BluetoothAddress)
    case leSetAdvertisingParameters(AdvertisingParameters)
    case leSetAdvertisingData([UInt8])
    case leSetAdvertisingEnable(Bool)
    case leSetScanParameters(ScanParameters)
    case leSetScanEnable(Bool, filterDuplicates: Bool)
    case leReadLocalSupportedFeatures

    /// H4 packet type of a command.
    public static let packetType: UInt8 = 0x01
    /// Legacy advertising data is at most 31 bytes (Core Vol 3, Part C, 11).
    public static let maximumAdvertisingData = 31

    public var opcode: UInt16 {
        switch self {
        case .reset: 0x0C03
        case .setEventMask: 0x0C01
        case .leSetEventMask: 0x2001
        case .leReadLocalSupportedFeatures: 0x2003
        case .leSetRandomAddress: 0x2005
        case .leSetAdvertisingParameters: 0x2006
        case .leSetAdvertisingData: 0x2008
        case .leSetAdvertisingEnable: 0x200A
        case .leSetScanParameters: 0x200B
        case .leSetScanEnable: 0x200C
        }
    }

    public var name: String {
        switch self {
        case .reset: "Reset"
        case .setEventMask: "Set Event Mask"
        case .leSetEventMask: "LE Set Event Mask"
        case .leReadLocalSupportedFeatures: "LE Read Local Supported Features"
        case .leSetRandomAddress: "LE Set Random Address"
        case .leSetAdvertisingParameters: "LE Set Advertising Parameters"
        case .leSetAdvertisingData: "LE Set Advertising Data"
        case .leSetAdvertisingEnable: "LE Set Advertising Enable"
        case .leSetScanParameters: "LE Set Scan Parameters"
        case .leSetScanEnable: "LE Set Scan Enable"
        }
    }

    public var parameters: [UInt8] {
        var writer = LittleEndianWriter()
        switch self {
        case .reset, .leReadLocalSupportedFeatures:
            break
        case let .setEventMask(mask), let .leSetEventMask(mask):
            writer.write(mask)
        case let .leSetRandomAddress(address):
            writer.write(address.littleEndianBytes)
        case let .leSetAdvertisingParameters(parameters):
            writer.write(parameters.intervalMin)
            writer.write(parameters.intervalMax)
            writer.write(parameters.type.rawValue)
            writer.write(parameters.ownAddressType.rawValue)
            writer.write(UInt8(0)) // peer address type: unused without directed advertising
            writer.write([UInt8](repeating: 0, count: 6))
            writer.write(parameters.channelMap)
            writer.write(UInt8(0)) // filter policy: anyone may scan or connect
        case let .leSetAdvertisingData(data):
            // Always 31 bytes on the wire: the significant length, then the data padded with zeros.
            writer.write(UInt8(data.count))
            writer.write(data + [UInt8](repeating: 0, count: Self.maximumAdvertisingData - data.count))
        case let .leSetAdvertisingEnable(enable):
            writer.write(UInt8(enable ? 1 : 0))
        case let .leSetScanParameters(parameters):
            writer.write(UInt8(parameters.active ? 1 : 0))
            writer.write(parameters.interval)
            writer.write(parameters.window)
            writer.write(parameters.ownAddressType.rawValue)
            writer.write(UInt8(0)) // filter policy: accept all advertisements
        case let .leSetScanEnable(enable, filterDuplicates):
            writer.write(UInt8(enable ? 1 : 0))
            writer.write(UInt8(filterDuplicates ? 1 : 0))
        }
        return writer.bytes
    }

    /// The H4 packet: type, opcode (LE), parameter length, parameters.
    public func encoded() throws(WireError) -> [UInt8] {
        if case let .leSetAdvertisingData(data) = self, data.count > Self.maximumAdvertisingData {
            throw .tooLong(field: "advertising data", length: data.count, limit: Self.maximumAdvertisingData)
        }
        let parameters = parameters
        var writer = LittleEndianWriter()
        writer.write(Self.packetType)
        writer.write(opcode)
        writer.write(UInt8(parameters.count))
        writer.write(parameters)
        return writer.bytes
    }
}

public enum AddressType: UInt8, Sendable {
    case `public` = 0
    case random = 1
}

public struct AdvertisingParameters: Equatable, Sendable {
    public enum AdvertisingType: UInt8, Sendable {
        /// Connectable and scannable undirected (ADV_IND).
        case connectableUndirected = 0x00
        case scannableUndirected = 0x02
        /// Non-connectable: nothing can connect to us, the natural type for a beacon.
        case nonConnectableUndirected = 0x03
    }

    /// Units of 0.625 ms; 0x00A0 = 100 ms.
    public var intervalMin: UInt16 = 0x00A0
    public var intervalMax: UInt16 = 0x00A0
    public var type: AdvertisingType
    public var ownAddressType: AddressType = .random
    /// All three advertising channels.
    public var channelMap: UInt8 = 0x07

    public init(type: AdvertisingType) {
        self.type = type
    }
}

public struct ScanParameters: Equatable, Sendable {
    /// Passive: listen only, send no scan requests (nothing about us goes on air).
    public var active = false
    /// Units of 0.625 ms.
    public var interval: UInt16 = 0x0060
    public var window: UInt16 = 0x0030
    public var ownAddressType: AddressType = .random

    public init() {}
}

/// Little-endian writer: HCI is little-endian, unlike our network formats.
struct LittleEndianWriter {
    var bytes: [UInt8] = []
    mutating func write(_ value: UInt8) { bytes.append(value) }
    mutating func write(_ value: UInt16) { bytes += [UInt8(value & 0xff), UInt8(value >> 8)] }
    mutating func write(_ value: UInt64) {
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }
    mutating func write(_ raw: [UInt8]) { bytes += raw }
}
