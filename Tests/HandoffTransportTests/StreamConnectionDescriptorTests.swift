import Glibc
import HandoffCore
import Testing
@testable import HandoffTransport
import HandoffRuntime

/// Descriptors passed with a message's first byte (SCM_RIGHTS) and taken, in
/// order, by the message that declares them.
@Suite struct StreamConnectionDescriptorTests {
    func sealed(_ text: String) throws -> PayloadBuffer {
        try Array(text.utf8).withUnsafeBytes { try PayloadBuffer.sealed(copying: $0) }
    }

    func contents(_ descriptor: Int32) throws -> String {
        let buffer = try PayloadBuffer(adopting: descriptor, maximumBytes: 1024)
        return String(decoding: buffer.bytes, as: UTF8.self)
    }

    @Test func descriptorsArriveWithTheirLineInOrder() throws {
        let (sender, receiver) = try socketPair()
        let first = try sealed("first payload")
        let second = try sealed("second payload")
        try sender.write(Array("one\n".utf8), passing: [first.descriptorForPassing])
        try sender.write(Array("plain\n".utf8))
        try sender.write(Array("two\n".utf8), passing: [second.descriptorForPassing])
        #expect(try receiver.readLine(maxBytes: 100) == Array("one".utf8))
        #expect(try contents(receiver.takeDescriptors(1)[0]) == "first payload")
        #expect(try receiver.readLine(maxBytes: 100) == Array("plain".utf8))
        #expect(try receiver.takeDescriptors(0).isEmpty)
        #expect(try receiver.readLine(maxBytes: 100) == Array("two".utf8))
        #expect(try contents(receiver.takeDescriptors(1)[0]) == "second payload")
        #expect(receiver.queuedDescriptors == 0)
    }

    /// A long line: the descriptor comes with its first byte, before the rest is read.
    @Test func aLongLineBringsItsDescriptorWithItsFirstBytes() throws {
        let (sender, receiver) = try socketPair()
        let payload = try sealed("x")
        let text = Array(repeating: UInt8(ascii: "a"), count: 100_000) + [UInt8(ascii: "\n")]
        let writer = onThread { (try? sender.write(text, passing: [payload.descriptorForPassing])) != nil }
        #expect(try receiver.readLine(maxBytes: 200_000)?.count == 100_000)
        #expect(writer(5_000) == true)
        #expect(try contents(receiver.takeDescriptors(1)[0]) == "x")
    }

    @Test func aMessageThatDeclaresAMissingDescriptorFails() throws {
        let (sender, receiver) = try socketPair()
        try sender.write(Array("no descriptor\n".utf8))
        _ = try receiver.readLine(maxBytes: 100)
        #expect(throws: SystemError.self) { try receiver.takeDescriptors(1) }
    }

    /// A peer that floods descriptors no message claims is cut off, and what was queued is closed.
    @Test func tooManyUnclaimedDescriptorsEndTheRead() throws {
        let (sender, receiver) = try socketPair()
        let payload = try sealed("x")
        for _ in 0...StreamConnection.maximumQueuedDescriptors {
            try sender.write(Array("x".utf8), passing: [payload.descriptorForPassing])
        }
        try sender.write(Array("\n".utf8))
        var failure: SystemError?
        do {
            _ = try receiver.readLine(maxBytes: 1024)
        } catch {
            failure = error
        }
        #expect(failure?.errno == ETOOMANYREFS)
    }

    @Test func tcpAndPlainWritesCarryNoDescriptors() throws {
        let (sender, receiver) = try socketPair()
        #expect(sender.carriesDescriptors)
        #expect(throws: SystemError.self) { try sender.write([], passing: [0]) }
        try sender.write(Array("x\n".utf8), passing: [])
        #expect(try receiver.readLine(maxBytes: 10) == Array("x".utf8))
    }
}
