import HandoffCore
@testable import HandoffBlueZ
import HandoffDBus
import Testing

/// bluetoothd's property dictionaries as the bus reader builds them.
@Suite struct BlueZObjectsTests {
    let token = hex("00112233445566778899")

    func dictionary(_ pairs: [(String, BusValue)]) -> BusValue {
        .array(pairs.map { .entry(.string($0.0), .variant($0.1)) })
    }

    func manufacturerData(_ pairs: [(UInt16, [UInt8])]) -> BusValue {
        .array(pairs.map { .entry(.uint16($0.0), .variant(.bytes($0.1))) })
    }

    @Test func manufacturerPayloadRoundTrip() {
        let beacon = Beacon(token: token)
        #expect(beacon.manufacturerPayload == hex("01 00112233445566778899"))
        #expect(Beacon(manufacturerPayload: beacon.manufacturerPayload) == beacon)
        #expect(Beacon(manufacturerPayload: hex("02 00112233445566778899")) == nil) // another version
        #expect(Beacon(manufacturerPayload: hex("01 0011")) == nil)
        #expect(Beacon(manufacturerPayload: []) == nil)
    }

    @Test func deviceWithBeaconRSSIAndAddress() throws {
        let properties = try #require(dictionary([
            ("Address", .string("3A:11:22:33:44:55")), ("RSSI", .int16(-50)),
            ("ManufacturerData", manufacturerData([(0x004C, [1, 2, 3]), (0xFFFF, [1] + token)])),
            ("Name", .string("ignored")),
        ]).stringDictionary)
        let update = BlueZ.DeviceUpdate(properties, companyID: 0xFFFF)
        #expect(update.token == token)
        #expect(update.rssi == -50)
        #expect(update.address == "3A:11:22:33:44:55")
        #expect(update.manufacturerDataSeen)
    }

    @Test func otherCompaniesAndMalformedValuesAreNotBeacons() throws {
        let other = try #require(dictionary([("ManufacturerData", manufacturerData([(0x1234, [1] + token)]))]).stringDictionary)
        let update = BlueZ.DeviceUpdate(other, companyID: 0xFFFF)
        #expect(update.token == nil)
        #expect(update.manufacturerDataSeen) // a sighting, just not ours
        let wrongType = try #require(dictionary([("ManufacturerData", .string("x")), ("RSSI", .string("-50"))]).stringDictionary)
        let ignored = BlueZ.DeviceUpdate(wrongType, companyID: 0xFFFF)
        #expect(ignored.token == nil && ignored.rssi == nil && !ignored.manufacturerDataSeen)
        let outOfRange = try #require(dictionary([("RSSI", .int16(300))]).stringDictionary)
        #expect(BlueZ.DeviceUpdate(outOfRange, companyID: 0xFFFF).rssi == nil)
    }

    @Test func rssiOnlyChange() throws {
        let changed = try #require(dictionary([("RSSI", .int16(-81))]).stringDictionary)
        let update = BlueZ.DeviceUpdate(changed, companyID: 0xFFFF)
        #expect(update.rssi == -81 && update.token == nil && !update.manufacturerDataSeen)
    }

    @Test func paths() {
        #expect(BlueZ.adapterName(path: "/org/bluez/hci0") == "hci0")
        #expect(BlueZ.adapterName(path: "/org/bluez/hci12") == "hci12")
        #expect(BlueZ.adapterName(path: "/org/bluez/hci0/dev_11_22_33_44_55_66") == nil)
        #expect(BlueZ.adapterName(path: "/org/bluez") == nil)
        #expect(BlueZ.adapterName(path: "/org/bluez/hcix") == nil)
        #expect(BlueZ.adapterPath(ofDevice: "/org/bluez/hci1/dev_11_22_33_44_55_66") == "/org/bluez/hci1")
        #expect(BlueZ.adapterPath(ofDevice: "/org/bluez/hci1") == nil)
        #expect(BlueZ.adapterPath(ofDevice: "/org/bluez/hci1/dev_1/service0001") == nil)
    }

    @Test func adapterChoiceAndProperties() throws {
        var hci0 = BlueZ.Adapter(path: "/org/bluez/hci0", name: "hci0")
        hci0.apply(try #require(dictionary([("Powered", .bool(true)), ("Address", .string("00:00:5E:00:53:01")), ("Unknown", .uint32(7))]).stringDictionary))
        #expect(hci0.powered && hci0.address == "00:00:5E:00:53:01" && !hci0.discoverable)
        let adapters = ["/org/bluez/hci10": BlueZ.Adapter(path: "/org/bluez/hci10", name: "hci10"),
                        "/org/bluez/hci2": BlueZ.Adapter(path: "/org/bluez/hci2", name: "hci2"), "/org/bluez/hci0": hci0]
        #expect(BlueZ.choose(adapters, wanted: nil)?.name == "hci0")
        #expect(BlueZ.choose(adapters, wanted: "hci10")?.name == "hci10")
        #expect(BlueZ.choose(adapters, wanted: "hci3") == nil)
        #expect(BlueZ.choose([:], wanted: nil) == nil)
    }

    @Test func busValueAccessors() {
        #expect(BusValue.variant(.variant(.string("le"))).string == "le")
        #expect(BusValue.uint64(.max).integer == nil)
        #expect(BusValue.array([]).bytes == [])
        #expect(BusValue.array([.string("not an entry")]).stringDictionary == nil)
        #expect(BusValue.array([.entry(.uint16(1), .bool(true))]).stringDictionary == nil) // keys must be strings
    }
}

/// Bytes from hex written in a test; spaces separate fields.
private func hex(_ text: String) -> [UInt8] {
    guard let bytes = Hex.decode(text.filter { !$0.isWhitespace }) else { preconditionFailure("bad hex literal in a test: \(text)") }
    return bytes
}
