import HandoffCore
import Testing

/// Command encodings worked from the Core specification (Vol 4, Part E, 7.3 and 7.8)
/// and checked against an emulated controller (Scripts/ble-lab.py), which answered
/// each of these with Command Complete, status 0.
@Suite struct HCICommandTests {
    let address = BluetoothAddress(bytes: hex("c0 11 22 33 44 55"))!

    @Test func controllerAndEventMaskCommands() throws {
        #expect(try HCICommand.reset.encoded() == hex("01 030c 00"))
        #expect(try HCICommand.setEventMask(.max).encoded() == hex("01 010c 08 ffffffffffffffff"))
        #expect(try HCICommand.leSetEventMask(.max).encoded() == hex("01 0120 08 ffffffffffffffff"))
        // Little-endian: bit 61 (LE Meta) lands in the last byte.
        #expect(try HCICommand.setEventMask(0x2000_1FFF_FFFF_FFFF).encoded() == hex("01 010c 08 ffffffffff1f0020"))
    }

    @Test func randomAddressIsLittleEndian() throws {
        #expect(try HCICommand.leSetRandomAddress(address).encoded() == hex("01 0520 06 5544332211c0"))
    }

    @Test func advertisingParameters() throws {
        #expect(try HCICommand.leSetAdvertisingParameters(AdvertisingParameters(type: .connectableUndirected)).encoded()
            == hex("01 0620 0f a000 a000 00 01 00 000000000000 07 00"))
        #expect(try HCICommand.leSetAdvertisingParameters(AdvertisingParameters(type: .nonConnectableUndirected)).encoded()
            == hex("01 0620 0f a000 a000 03 01 00 000000000000 07 00"))
    }

    @Test func advertisingDataIsPaddedTo31Bytes() throws {
        let data = hex("0e ff ffff 01020304 68616e646f6666")
        #expect(try HCICommand.leSetAdvertisingData(data).encoded()
            == hex("01 0820 20 0f") + data + [UInt8](repeating: 0, count: 31 - data.count))
    }

    @Test func advertisingDataOver31BytesIsRefused() {
        #expect(throws: WireError.tooLong(field: "advertising data", length: 32, limit: 31)) {
            try HCICommand.leSetAdvertisingData([UInt8](repeating: 1, count: 32)).encoded()
        }
    }

    @Test func enablesAndScanning() throws {
        #expect(try HCICommand.leSetAdvertisingEnable(true).encoded() == hex("01 0a20 01 01"))
        #expect(try HCICommand.leSetAdvertisingEnable(false).encoded() == hex("01 0a20 01 00"))
        var scan = ScanParameters()
        scan.interval = 0x0010
        scan.window = 0x0010
        scan.ownAddressType = .public
        #expect(try HCICommand.leSetScanParameters(scan).encoded() == hex("01 0b20 07 00 1000 1000 00 00"))
        #expect(try HCICommand.leSetScanParameters(ScanParameters()).encoded() == hex("01 0b20 07 00 6000 3000 01 00"))
        #expect(try HCICommand.leSetScanEnable(true, filterDuplicates: false).encoded() == hex("01 0c20 02 01 00"))
    }
}

@Suite struct BluetoothAddressTests {
    @Test func formatsMostSignificantByteFirst() {
        #expect(BluetoothAddress(littleEndian: hex("5544332211c0"))?.description == "C0:11:22:33:44:55")
        #expect(BluetoothAddress(bytes: [1, 2, 3]) == nil)
    }

    @Test func nonResolvablePrivateAddressesHaveTopBitsZero() {
        var rng = SplitMix64(seed: 7)
        for _ in 0..<500 {
            let address = BluetoothAddress.nonResolvablePrivate(from: rng.bytes(10))
            #expect(address.bytes[0] & 0xC0 == 0)
            #expect(address.bytes != [UInt8](repeating: 0, count: 6))
        }
        #expect(BluetoothAddress.nonResolvablePrivate(from: [UInt8](repeating: 0, count: 10)).bytes != [UInt8](repeating: 0, count: 6))
        #expect(BluetoothAddress.nonResolvablePrivate(from: [UInt8](repeating: 0xff, count: 10)).bytes[0] == 0x3F)
    }
}
