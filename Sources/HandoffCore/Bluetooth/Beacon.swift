/// Handoff's Bluetooth LE advertisement: the Flags AD structure and one
/// manufacturer-specific AD structure holding a protocol version and a
/// rotating 10-byte token (Docs/PROTOCOL.md, "Bluetooth beacon"). 18 bytes,
/// well inside a 31-byte legacy advertisement.
public struct Beacon: Equatable, Sendable {
    /// 0xFFFF: the Bluetooth SIG's company identifier reserved for testing.
    public static let defaultCompanyID: UInt16 = 0xFFFF
    public static let version: UInt8 = 1
    public static let tokenBytes = 10

    public var companyID: UInt16
    public var token: [UInt8]

    public init(companyID: UInt16 = Beacon.defaultCompanyID, token: [UInt8]) {
        self.companyID = companyID
        self.token = token
    }

    static let flagsType: UInt8 = 0x01
    static let manufacturerType: UInt8 = 0xFF
    /// LE General Discoverable off, BR/EDR not supported.
    static let flags: UInt8 = 0x04

    /// The advertising data, measured before it is built.
    public func advertisingData() throws(WireError) -> [UInt8] {
        guard token.count == Self.tokenBytes else { throw .invalidValue("beacon token must be \(Self.tokenBytes) bytes") }
        let manufacturerLength = 1 + 2 + 1 + token.count // type, company, version, token
        let total = 3 + 1 + manufacturerLength
        guard total <= HCICommand.maximumAdvertisingData else {
            throw .tooLong(field: "advertising data", length: total, limit: HCICommand.maximumAdvertisingData)
        }
        return [2, Self.flagsType, Self.flags,
                UInt8(manufacturerLength), Self.manufacturerType, UInt8(companyID & 0xff), UInt8(companyID >> 8), Self.version]
            + token
    }

    /// The manufacturer-specific data after the company identifier: version, then
    /// token. BlueZ takes and reports manufacturer data in this form, keyed by company.
    public var manufacturerPayload: [UInt8] { [Self.version] + token }

    /// A beacon from BlueZ's ManufacturerData value for `companyID`; nil unless it is exactly version 1 and a token.
    public init?(manufacturerPayload payload: [UInt8], companyID: UInt16 = Beacon.defaultCompanyID) {
        guard payload.count == 1 + Self.tokenBytes, payload[0] == Self.version else { return nil }
        self.init(companyID: companyID, token: Array(payload[1...]))
    }

    /// Finds a Handoff beacon in advertising data; nil if there is none (most
    /// advertisements around are other devices'). Malformed AD structures end
    /// the search rather than being guessed at.
    public init?(advertisingData data: [UInt8], companyID: UInt16 = Beacon.defaultCompanyID) {
        var index = 0
        while index < data.count {
            let length = Int(data[index])
            if length == 0 { return nil } // padding: no more structures
            guard index + 1 + length <= data.count else { return nil }
            let type = data[index + 1]
            let value = Array(data[(index + 2)..<(index + 1 + length)])
            if type == Self.manufacturerType, value.count == 2 + 1 + Self.tokenBytes,
               UInt16(value[0]) | UInt16(value[1]) << 8 == companyID, value[2] == Self.version {
                self.init(companyID: companyID, token: Array(value[3...]))
                return
            }
            index += 1 + length
        }
        return nil
    }
}
