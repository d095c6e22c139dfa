import Foundation
import Glibc
import Testing
@testable import HandoffTransport
import HandoffRuntime

// readSome and write(UnsafeRawBufferPointer): the raw byte path of continuation streams.
@Suite struct StreamConnectionRawTests {
    @Test func bytesBufferedAfterALineComeFirst() throws {
        let (local, peer) = try socketPair()
        try peer.write(Array("reply\nraw bytes".utf8))
        #expect(try local.readLine(maxBytes: 100) == Array("reply".utf8))
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4, alignment: 1)
        defer { buffer.deallocate() }
        // What readLine read past the newline is handed out first, in pieces as small as the buffer.
        #expect(try local.readSome(into: buffer) == 4)
        #expect(Array(buffer) == Array("raw ".utf8))
        #expect(try local.readSome(into: buffer) == 4)
        #expect(Array(buffer) == Array("byte".utf8))
        #expect(try local.readSome(into: buffer) == 1)
        #expect(buffer[0] == UInt8(ascii: "s"))
    }

    @Test func endOfStreamIsZeroAndAClosedConnectionFails() throws {
        let (local, peer) = try socketPair()
        let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: 3, alignment: 1)
        defer { bytes.deallocate() }
        bytes.copyBytes(from: [1, 2, 3])
        try peer.write(UnsafeRawBufferPointer(bytes))
        peer.shutdownWrite()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16, alignment: 1)
        defer { buffer.deallocate() }
        #expect(try local.readSome(into: buffer) == 3)
        #expect(try local.readSome(into: buffer) == 0)
        local.close()
        #expect(throws: SystemError.self) { try local.readSome(into: buffer) }
        #expect(throws: SystemError.self) { try local.write(UnsafeRawBufferPointer(bytes)) }
    }
}
