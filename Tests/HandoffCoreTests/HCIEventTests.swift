import HandoffCore
import Testing

/// Event packets as an emulated controller sent them (H4 type byte removed),
/// laid out by field from Core Vol 4, Part E, 7.7.14, 7.7.15, 7.7.65.2 and 7.7.65.13.
@Suite struct HCIEventTests {
    static let commandComplete = hex("0e 04 01 0520 00")
    static let commandDisallowed = hex("0e 04 01 0520 0c")
    static let commandStatus = hex("0f 04 00 01 0c20")
    /// Legacy report: 1 report, ADV_IND, random address C0:11:22:33:44:55, 15 bytes of data, RSSI -50.
    static let legacyReport = hex("3e 1b 02 01 00 01 5544332211c0 0f 0effffff0102030468616e646f6666 ce")
    /// Extended report: event type 0x0013 (legacy ADV_IND), 1M PHY, no SID, TX power unknown, RSSI -50.
    static let extendedReport = hex("3e 20 0d 01 1300 01 5544332211c0 01 00 ff 7f ce 0000 00 000000000000 06 05ffffff0102")

    @Test func commandCompleteAndStatus() throws {
        #expect(try HCIEvent(packet: Self.commandComplete) == .commandComplete(opcode: 0x2005, returnParameters: [0]))
        #expect(try HCIEvent(packet: Self.commandDisallowed).status == 0x0C)
        #expect(try HCIEvent(packet: Self.commandStatus) == .commandStatus(status: 0, opcode: 0x200C))
    }

    @Test func legacyAdvertisingReport() throws {
        guard case let .advertisingReports(reports) = try HCIEvent(packet: Self.legacyReport) else {
            Issue.record("not a report")
            return
        }
        #expect(reports.count == 1)
        #expect(reports[0].address.description == "C0:11:22:33:44:55")
        #expect(reports[0].addressType == 1)
        #expect(reports[0].rssi == -50)
        #expect(reports[0].data == hex("0effffff0102030468616e646f6666"))
        #expect(!reports[0].extended)
    }

    @Test func extendedAdvertisingReport() throws {
        guard case let .advertisingReports(reports) = try HCIEvent(packet: Self.extendedReport) else {
            Issue.record("not a report")
            return
        }
        #expect(reports == [AdvertisingReport(eventType: 0x0013, addressType: 1,
                                              address: BluetoothAddress(bytes: hex("c01122334455"))!,
                                              rssi: -50, data: hex("05ffffff0102"), extended: true)])
    }

    @Test func otherEventsAreKeptAsOther() throws {
        #expect(try HCIEvent(packet: hex("05 04 00 0100 08")) == .other(code: 0x05)) // Disconnection Complete
        #expect(try HCIEvent(packet: hex("3e 01 0a")) == .other(code: 0x3E)) // an LE subevent we do not use
    }

    @Test func truncationAtEveryPrefixThrows() {
        for packet in [Self.commandComplete, Self.commandStatus, Self.legacyReport, Self.extendedReport] {
            for length in 0..<packet.count {
                #expect(throws: WireError.self) { try HCIEvent(packet: Array(packet.prefix(length))) }
            }
        }
    }

    @Test func lengthFieldMustMatchTheBytes() {
        #expect(throws: WireError.self) { try HCIEvent(packet: Self.commandComplete + [0]) }
        #expect(throws: WireError.self) { try HCIEvent(packet: hex("0e 05 01 0520 00")) }
    }

    @Test func hostileReportsAreRefused() {
        // Zero reports, more reports than fit, and data longer than 31 bytes in a legacy report.
        #expect(throws: WireError.self) { try HCIEvent(packet: hex("3e 02 02 00")) }
        #expect(throws: WireError.self) { try HCIEvent(packet: hex("3e 02 02 1a")) }
        var long = hex("3e 00 02 01 00 01 5544332211c0 20") + [UInt8](repeating: 0, count: 32) + [0xce]
        long[1] = UInt8(long.count - 2)
        #expect(throws: WireError.self) { try HCIEvent(packet: long) }
    }

    @Test func garbageNeverCrashes() {
        for bytes in randomGarbage(seed: 0xB1E, count: 3000, maxLength: 80) { _ = try? HCIEvent(packet: bytes) }
        for bytes in mutations(of: Self.extendedReport, seed: 0xB1F) { _ = try? HCIEvent(packet: bytes) }
    }
}

@Suite struct H4DeframerTests {
    let stream = hex("04") + HCIEventTests.commandComplete + hex("04") + HCIEventTests.legacyReport
        + hex("02 0100 0300 aabbcc") + hex("04") + HCIEventTests.extendedReport

    @Test func splitsAStreamFedByteByByte() throws {
        var deframer = H4Deframer()
        var packets: [(UInt8, [UInt8])] = []
        for byte in stream {
            try deframer.append([byte])
            while let packet = try deframer.next() { packets.append(packet) }
        }
        #expect(packets.map(\.0) == [4, 4, 2, 4])
        #expect(packets[0].1 == HCIEventTests.commandComplete)
        #expect(packets[1].1 == HCIEventTests.legacyReport)
        #expect(packets[2].1 == hex("0100 0300 aabbcc"))
        #expect(packets[3].1 == HCIEventTests.extendedReport)
    }

    @Test func splitsAStreamFedAtOnce() throws {
        var deframer = H4Deframer()
        try deframer.append(stream)
        var count = 0
        while try deframer.next() != nil { count += 1 }
        #expect(count == 4)
    }

    @Test func anUnknownPacketTypeIsAnError() throws {
        var deframer = H4Deframer()
        try deframer.append(hex("09 00"))
        #expect(throws: WireError.unknownKind(9)) { try deframer.next() }
    }

    @Test func bufferIsBounded() {
        var deframer = H4Deframer()
        #expect(throws: WireError.self) { try deframer.append([UInt8](repeating: 2, count: H4Deframer.maximumBuffered + 1)) }
    }
}
