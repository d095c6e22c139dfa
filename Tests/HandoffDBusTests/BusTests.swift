import CSystemd
import Glibc
import HandoffBlueZ
import HandoffCore
@testable import HandoffDBus
import Testing

/// MessageWriter and MessageReader against sd-bus itself: a message is built,
/// sealed and read back, with no bus daemon (a started bus on one end of a socket pair).
@Suite struct BusTests {
    func roundTrip(_ build: (inout MessageWriter) throws(BusError) -> Void) throws -> [BusValue] {
        var sockets: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &sockets) == 0)
        defer { close(sockets[1]) }
        var bus: OpaquePointer?
        try #require(sd_bus_new(&bus) >= 0)
        defer { sd_bus_close_unref(bus) } // no flush: nobody reads the other end
        try #require(sd_bus_set_fd(bus, sockets[0], sockets[0]) >= 0)
        try #require(sd_bus_start(bus) >= 0)
        var message: OpaquePointer?
        try #require(sd_bus_message_new_signal(bus, &message, "/org/bluez/hci0/dev_11", "org.freedesktop.DBus.Properties", "PropertiesChanged") >= 0)
        let signal = try #require(message)
        defer { sd_bus_message_unref(signal) }
        var writer = MessageWriter(message: signal)
        try build(&writer)
        try #require(sd_bus_message_seal(signal, 1, 0) >= 0)
        try #require(sd_bus_message_rewind(signal, 1) >= 0)
        return try MessageReader.values(of: signal)
    }

    /// A Device1 PropertiesChanged as bluetoothd sends it for a beacon.
    @Test func deviceProperties() throws {
        let payload: [UInt8] = [1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
        let values = try roundTrip { (body: inout MessageWriter) throws(BusError) in
            try body.string("org.bluez.Device1")
            try body.container("a", "{sv}") { (map: inout MessageWriter) throws(BusError) in
                try map.option("RSSI", "n") { (value: inout MessageWriter) throws(BusError) in try value.int16(-50) }
                try map.option("Paired", "b") { (value: inout MessageWriter) throws(BusError) in try value.bool(false) }
                try map.option("AdvertisingFlags", "ay") { (value: inout MessageWriter) throws(BusError) in try value.bytes([4]) }
                try map.option("ManufacturerData", "a{qv}") { (value: inout MessageWriter) throws(BusError) in
                    try value.container("a", "{qv}") { (data: inout MessageWriter) throws(BusError) in
                        try data.container("e", "qv") { (entry: inout MessageWriter) throws(BusError) in
                            try entry.uint16(0xFFFF)
                            try entry.container("v", "ay") { (bytes: inout MessageWriter) throws(BusError) in try bytes.bytes(payload) }
                        }
                    }
                }
            }
            try body.container("a", "s") { (list: inout MessageWriter) throws(BusError) in try list.string("Name") }
        }
        #expect(values.count == 3)
        #expect(values[0] == .string("org.bluez.Device1"))
        #expect(values[2] == .array([.string("Name")]))
        let properties = try #require(values[1].stringDictionary)
        #expect(properties["Paired"]?.bool == false)
        #expect(properties["AdvertisingFlags"]?.bytes == [4])
        let update = BlueZ.DeviceUpdate(properties, companyID: 0xFFFF)
        #expect(update.rssi == -50)
        #expect(update.token == Array(payload.dropFirst()))
    }

    /// The monitor's Patterns property: a(yyay).
    @Test func structuresAndEmptyArrays() throws {
        let values = try roundTrip { (body: inout MessageWriter) throws(BusError) in
            try body.container("a", "(yyay)") { (list: inout MessageWriter) throws(BusError) in
                try list.container("r", "yyay") { (entry: inout MessageWriter) throws(BusError) in
                    try entry.byte(0)
                    try entry.byte(0xFF)
                    try entry.bytes([0xFF, 0xFF, 1])
                }
            }
            try body.container("a", "{sv}") { _ throws(BusError) in }
            try body.bytes([])
            try body.uint32(100)
            try body.objectPath("/org/handoff/beacon")
        }
        #expect(values == [.array([.structure([.byte(0), .byte(0xFF), .bytes([0xFF, 0xFF, 1])])]), .array([]), .bytes([]),
                           .uint32(100), .string("/org/handoff/beacon")])
    }

    /// Deeper than the reader's budget: refused, not followed.
    @Test func nestingBeyondTheLimitIsRefused() throws {
        func nest(_ writer: inout MessageWriter, _ depth: Int) throws(BusError) {
            if depth == 0 { return try writer.string("bottom") }
            try writer.container("v", depth == 1 ? "s" : "v") { (inner: inout MessageWriter) throws(BusError) in try nest(&inner, depth - 1) }
        }
        #expect(throws: BusError.self) { _ = try roundTrip { (body: inout MessageWriter) throws(BusError) in try nest(&body, MessageReader.maximumDepth + 4) } }
        let shallow = try roundTrip { (body: inout MessageWriter) throws(BusError) in try nest(&body, 3) }
        #expect(shallow.first?.string == "bottom")
    }
}
