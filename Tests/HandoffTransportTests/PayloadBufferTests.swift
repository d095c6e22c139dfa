import CLinux
import Glibc
import Testing
@testable import HandoffTransport
import HandoffRuntime

@Suite struct PayloadBufferTests {
    /// Passes `fd` across a Unix socket pair, as the local API does, and returns the received copy.
    func passAcross(_ fd: Int32) throws -> Int32 {
        var pair: [Int32] = [-1, -1]
        try #require(pair.withUnsafeMutableBufferPointer { socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, $0.baseAddress) } == 0)
        defer { close(pair[0]); close(pair[1]) }
        let byte: [UInt8] = [0x7B]
        let sent = [fd].withUnsafeBufferPointer { fds in byte.withUnsafeBytes { handoff_send_with_fds(pair[0], $0.baseAddress, 1, fds.baseAddress, 1, 0) } }
        try #require(sent == 1)
        var received: [Int32] = [-1, -1, -1, -1]
        var count: Int32 = 0, truncated: Int32 = 0
        var into: [UInt8] = [0]
        let got = received.withUnsafeMutableBufferPointer { fds in
            into.withUnsafeMutableBytes { handoff_recv_with_fds(pair[1], $0.baseAddress, 1, fds.baseAddress, 4, &count, &truncated, 0) }
        }
        try #require(got == 1 && count == 1 && truncated == 0 && into == byte)
        return received[0]
    }

    @Test func sealedBufferCrossesASocketReadOnly() throws {
        let buffer = try PayloadBuffer.create(count: 3 * 4096 + 5)
        for index in 0..<buffer.count { buffer.mutableBytes[index] = UInt8(truncatingIfNeeded: index) }
        try buffer.seal()
        let received = try PayloadBuffer(adopting: try passAcross(buffer.descriptorForPassing), maximumBytes: 1 << 20)
        #expect(received.count == buffer.count)
        #expect(Array(received.bytes) == Array(buffer.bytes))
        // The receiver cannot make it writable again.
        #expect(write(received.descriptorForPassing, [1], 1) == -1)
    }

    @Test func anUnsealedMemfdIsRefused() throws {
        let buffer = try PayloadBuffer.create(count: 16)
        #expect(throws: SystemError.self) { try PayloadBuffer(adopting: try passAcross(dup(buffer.fd)), maximumBytes: 1024) }
    }

    @Test func anOversizedMemfdIsRefusedBeforeMapping() throws {
        let bytes = [UInt8](repeating: 1, count: 2048)
        let buffer = try bytes.withUnsafeBytes { raw in try PayloadBuffer.sealed(copying: raw) }
        #expect(throws: SystemError.self) { try PayloadBuffer(adopting: try passAcross(buffer.descriptorForPassing), maximumBytes: 1024) }
    }

    @Test func aPlainFileIsRefused() throws {
        let fd = open("/dev/null", O_RDONLY)
        try #require(fd >= 0)
        #expect(throws: SystemError.self) { try PayloadBuffer(adopting: fd, maximumBytes: 1024) }
    }

    @Test func anEmptyPayloadSeals() throws {
        let buffer = try PayloadBuffer.create(count: 0)
        try buffer.seal()
        let received = try PayloadBuffer(adopting: try passAcross(buffer.descriptorForPassing), maximumBytes: 10)
        #expect(received.count == 0 && received.bytes.isEmpty)
    }

    @Test func anUnmappedBufferIsFilledByWritesInAnyOrder() throws {
        let count = 2 * 4096 + 100
        let buffer = try PayloadBuffer.unmapped(count: count)
        let expected = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        // A resumed transfer writes its tail after its head; pieces need not be page-aligned.
        try expected.withUnsafeBytes { raw in
            try buffer.write(UnsafeRawBufferPointer(rebasing: raw[5000...]), at: 5000)
            try buffer.write(UnsafeRawBufferPointer(rebasing: raw[..<5000]), at: 0)
        }
        try buffer.seal()
        #expect(Array(buffer.bytes) == expected)
        let received = try PayloadBuffer(adopting: try passAcross(buffer.descriptorForPassing), maximumBytes: 1 << 20)
        #expect(Array(received.bytes) == expected)
    }
}
