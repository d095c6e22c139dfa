import HandoffCore
import Testing

@Suite struct ByteReaderTests {
    @Test func readsBigEndianIntegersInOrder() throws {
        var reader = ByteReader(hex("01 0203 04050607 08090a0b0c0d0e0f"))
        #expect(try reader.readUInt8() == 0x01)
        #expect(try reader.readUInt16BE() == 0x0203)
        #expect(try reader.readUInt32BE() == 0x0405_0607)
        #expect(try reader.readUInt64BE() == 0x0809_0A0B_0C0D_0E0F)
        #expect(reader.isAtEnd)
        #expect(reader.remaining == 0)
        #expect(reader.offset == 15)
    }

    @Test func shortReadsThrowTruncatedAndConsumeNothing() {
        var reader = ByteReader([0xAA, 0xBB, 0xCC])
        #expect(throws: WireError.truncated(needed: 4, available: 3)) { try reader.readUInt32BE() }
        #expect(throws: WireError.truncated(needed: 8, available: 3)) { try reader.readUInt64BE() }
        #expect(throws: WireError.truncated(needed: 5, available: 3)) { try reader.readBytes(5) }
        #expect(reader.offset == 0)
        #expect(throws: Never.self) { _ = try reader.readUInt16BE() }
        #expect(throws: WireError.truncated(needed: 2, available: 1)) { try reader.readUInt16BE() }
        #expect(reader.offset == 2)
        var empty = ByteReader([])
        #expect(throws: WireError.truncated(needed: 1, available: 0)) { try empty.readUInt8() }
    }

    @Test func negativeCountsAreRefused() {
        var reader = ByteReader([1, 2, 3])
        #expect(throws: WireError.truncated(needed: -1, available: 3)) { try reader.readBytes(-1) }
        #expect(reader.offset == 0)
    }

    @Test func readBytesCopiesTheRightSlice() throws {
        var reader = ByteReader([1, 2, 3, 4, 5])
        _ = try reader.readUInt8()
        #expect(try reader.readBytes(3) == [2, 3, 4])
        #expect(try reader.readBytes(0) == [])
        #expect(reader.remaining == 1)
    }

    @Test func peekDoesNotConsume() throws {
        var reader = ByteReader([0x42, 0x43])
        #expect(reader.peekUInt8() == 0x42)
        #expect(reader.peekUInt8() == 0x42)
        #expect(reader.offset == 0)
        _ = try reader.readBytes(2)
        #expect(reader.peekUInt8() == nil)
    }

    @Test func utf8IsValidatedNotRepaired() throws {
        var good = ByteReader(hex("68c3a9"))  // "hé"
        #expect(try good.readUTF8(3) == "hé")
        for bad in [hex("ff"), hex("c3"), hex("c328"), hex("eda080"), hex("f4908080"), hex("c0af")] {
            var reader = ByteReader(bad)
            #expect(throws: WireError.invalidText) { try reader.readUTF8(bad.count) }
        }
        // A multi-byte character cut in half by the length is refused too.
        var split = ByteReader(hex("68c3a9"))
        #expect(throws: WireError.invalidText) { try split.readUTF8(2) }
    }

    @Test func expectEndReportsLeftoverBytes() throws {
        var reader = ByteReader([1, 2, 3])
        #expect(throws: WireError.trailingBytes(3)) { try reader.expectEnd() }
        _ = try reader.readUInt8()
        #expect(throws: WireError.trailingBytes(2)) { try reader.expectEnd() }
        _ = try reader.readUInt16BE()
        #expect(throws: Never.self) { try reader.expectEnd() }
    }

    @Test func writerIsBigEndianAndMirrorsReader() throws {
        var writer = ByteWriter()
        writer.write(UInt8(0x01))
        writer.write(UInt16(0x0203))
        writer.write(UInt32(0x0405_0607))
        writer.write(UInt64(0x0809_0A0B_0C0D_0E0F))
        writer.write([0xAA, 0xBB])
        writer.write(contentsOf: "hi".utf8)
        #expect(writer.bytes == hex("01 0203 04050607 08090a0b0c0d0e0f aabb 6869"))

        var reader = ByteReader(writer.bytes)
        #expect(try reader.readUInt8() == 0x01)
        #expect(try reader.readUInt16BE() == 0x0203)
        #expect(try reader.readUInt32BE() == 0x0405_0607)
        #expect(try reader.readUInt64BE() == 0x0809_0A0B_0C0D_0E0F)
        #expect(try reader.readBytes(2) == [0xAA, 0xBB])
        #expect(try reader.readUTF8(2) == "hi")
        #expect(reader.isAtEnd)
    }

    @Test func extremeIntegersRoundTrip() throws {
        var writer = ByteWriter()
        writer.write(UInt16.max)
        writer.write(UInt32.max)
        writer.write(UInt64.max)
        writer.write(UInt64(0))
        #expect(writer.bytes == [UInt8](repeating: 0xFF, count: 14) + [UInt8](repeating: 0, count: 8))
        var reader = ByteReader(writer.bytes)
        #expect(try reader.readUInt16BE() == .max)
        #expect(try reader.readUInt32BE() == .max)
        #expect(try reader.readUInt64BE() == .max)
        #expect(try reader.readUInt64BE() == 0)
    }

    @Test func errorDescriptionsNameTheProblem() {
        #expect(WireError.truncated(needed: 4, available: 1).description == "truncated: needed 4 bytes, 1 left")
        #expect(WireError.trailingBytes(2).description == "2 unexpected bytes after the end")
        #expect(WireError.tooLong(field: "title", length: 300, limit: 256).description == "title is 300 bytes, limit 256")
        #expect(WireError.unsupportedVersion(9).description == "unsupported version 9")
        #expect(WireError.unknownKind(7).description == "unknown message kind 7")
        #expect(WireError.nestingTooDeep(limit: 32).description == "values nested deeper than 32")
    }
}
