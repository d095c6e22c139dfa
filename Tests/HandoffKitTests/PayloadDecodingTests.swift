import Glibc
import HandoffCore
import HandoffKit
import HandoffTransport
import Testing

/// An app decodes the activity from the payload's mapping.
@Suite struct PayloadDecodingTests {
    @Test func decodesTheActivityFromASealedMemfd() throws {
        let activity = Activity(type: "org.example.reader", title: "Ch. 3",
                                userInfo: ["blob": .data((0..<100_000).map { UInt8(truncatingIfNeeded: $0) }), "page": .integer(3)],
                                targetContentIdentifier: "document:3F2A", sequence: 9)
        let buffer = try activity.encodedPayload().withUnsafeBytes { try PayloadBuffer.sealed(copying: $0) }
        // As the app gets it: a received descriptor, adopted.
        let received = try PayloadBuffer(adopting: dup(buffer.descriptorForPassing), maximumBytes: ActivityLimits.payloadBytes)
        #expect(try HandoffClient.activity(from: received) == activity)
    }

    @Test func aPayloadThatIsNoActivityIsPayloadInvalid() throws {
        let buffer = try [UInt8](repeating: 7, count: 64).withUnsafeBytes { try PayloadBuffer.sealed(copying: $0) }
        #expect(throws: HandoffError.self) { try HandoffClient.activity(from: buffer) }
    }
}
