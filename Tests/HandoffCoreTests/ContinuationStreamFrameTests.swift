import HandoffCore
import Testing

@Suite struct ContinuationStreamFrameTests {
    /// B opening a stream to the activity of the summary vector: it cites that summary, as a fetch does.
    static var open: ContinuationStreamFrame {
        .open(.init(summarySender: DeviceKey(bytes: rfcPublicKey)!, summarySequence: VectorInputs.timestamp,
                    payloadDigest: VectorInputs.payloadDigest))
    }

    static let openBytes = hex("""
        01 01
        d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a
        0000018bcfe56800
        2c8c27a5487834f63e6f0f7ba5d822ac8b52fdbe39ab20af91d104f3ccfcb951
        """)
    static let acceptedBytes = hex("01 02")
    static let refusedBytes = hex("01 03 03 617070 0004 6e6f6e65")
    static let refused = ContinuationStreamFrame.refused(.init(code: .app, message: "none"))

    @Test func encodesTheVectors() {
        #expect(Self.open.encoded() == Self.openBytes)
        #expect(ContinuationStreamFrame.accepted.encoded() == Self.acceptedBytes)
        #expect(Self.refused.encoded() == Self.refusedBytes)
    }

    @Test func decodesTheVectors() throws {
        #expect(try ContinuationStreamFrame(Self.openBytes) == Self.open)
        #expect(try ContinuationStreamFrame(Self.acceptedBytes) == .accepted)
        #expect(try ContinuationStreamFrame(Self.refusedBytes) == Self.refused)
    }

    @Test func everyTruncationIsRefused() {
        for bytes in [Self.openBytes, Self.acceptedBytes, Self.refusedBytes] {
            for length in 0..<bytes.count {
                #expect(throws: WireError.self) { try ContinuationStreamFrame(Array(bytes.prefix(length))) }
            }
        }
    }

    @Test func trailingBytesUnknownKindsAndVersionsAreRefused() {
        #expect(throws: WireError.trailingBytes(1)) { try ContinuationStreamFrame(Self.acceptedBytes + [0]) }
        #expect(throws: WireError.unsupportedVersion(2)) { try ContinuationStreamFrame(hex("02 02")) }
        #expect(throws: WireError.self) { try ContinuationStreamFrame(hex("01 04")) }
        // An unknown refusal code is refused, not mapped to something else.
        #expect(throws: WireError.self) { try ContinuationStreamFrame(hex("01 03 03 787878 0000")) }
    }

    @Test func aLongRefusalMessageIsCutToItsLimit() throws {
        let long = ContinuationStreamFrame.refused(.init(code: .notCurrent, message: String(repeating: "é", count: 400)))
        guard case let .refused(refusal) = try ContinuationStreamFrame(long.encoded()) else {
            Issue.record("not a refusal")
            return
        }
        #expect(refusal.message.utf8.count <= TransferFrame.Refusal.messageBytes)
        #expect(refusal.message.allSatisfy { $0 == "é" })
    }

    @Test func hostileControlMessagesNeverCrash() {
        for bytes in mutations(of: Self.openBytes, seed: 11) + randomGarbage(seed: 12) {
            if let frame = try? ContinuationStreamFrame(bytes) {
                // Whatever decodes has one encoding.
                #expect(frame.encoded() == bytes)
            }
        }
    }

    @Test func recordLengthsAreCheckedBeforeAnythingIsRead() throws {
        func length(_ bytes: [UInt8]) throws(WireError) -> Int {
            let raw = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 1)
            defer { raw.deallocate() }
            raw.copyBytes(from: bytes)
            return try ContinuationStreamFrame.sealedLength(prefix: UnsafeRawBufferPointer(raw))
        }
        #expect(try length(hex("00000011")) == 17)
        #expect(try length(hex("00040011")) == ContinuationStreamFrame.maximumRecordBytes)
        #expect(throws: WireError.self) { try length(hex("00000010")) }
        #expect(throws: WireError.self) { try length(hex("00040012")) }
        #expect(throws: WireError.self) { try length(hex("ffffffff")) }
        #expect(throws: WireError.truncated(needed: 4, available: 3)) { try length(hex("000011")) }
    }
}

@Suite struct StreamInboundTests {
    typealias Tag = ContinuationStreamFrame.Tag

    @Test func controlThenDataThenFinal() throws {
        var inbound = StreamInbound()
        #expect(try inbound.received(tag: Tag.push, plaintextBytes: 2) == .control)
        #expect(try inbound.received(tag: Tag.message, plaintextBytes: 5) == .data)
        #expect(try inbound.received(tag: Tag.message, plaintextBytes: 1) == .data)
        #expect(try inbound.received(tag: Tag.final, plaintextBytes: 0) == .end)
        #expect(inbound.state == .finished)
    }

    @Test func dataBeforeTheControlMessageIsRefused() {
        var inbound = StreamInbound()
        #expect(throws: WireError.self) { try inbound.received(tag: Tag.message, plaintextBytes: 5) }
        #expect(inbound.state == .control)
    }

    @Test func nothingFollowsFinal() throws {
        var inbound = StreamInbound(state: .data)
        _ = try inbound.received(tag: Tag.final, plaintextBytes: 0)
        #expect(throws: WireError.self) { try inbound.received(tag: Tag.message, plaintextBytes: 1) }
        #expect(throws: WireError.self) { try inbound.received(tag: Tag.final, plaintextBytes: 0) }
    }

    @Test func oddRecordsAreRefused() {
        var inbound = StreamInbound(state: .data)
        // A FINAL that carries bytes, an empty data record, a second control message, a rekey.
        #expect(throws: WireError.self) { try inbound.received(tag: Tag.final, plaintextBytes: 3) }
        #expect(throws: WireError.self) { try inbound.received(tag: Tag.message, plaintextBytes: 0) }
        #expect(throws: WireError.self) { try inbound.received(tag: Tag.push, plaintextBytes: 2) }
        #expect(throws: WireError.self) { try inbound.received(tag: 2, plaintextBytes: 2) }
        #expect(inbound.state == .data)
    }
}

@Suite struct StreamRelayStateTests {
    @Test func halfClosesLeaveTheOtherDirectionOpen() {
        var state = StreamRelayState()
        #expect(state.end(.toPeer, .clean) == .keepGoing)
        #expect(state.end(.toApp, .clean) == .done)
    }

    @Test func eitherOrderOfCleanEndsIsDone() {
        var state = StreamRelayState()
        #expect(state.end(.toApp, .clean) == .keepGoing)
        #expect(state.end(.toPeer, .clean) == .done)
    }

    @Test func aFailureEndsBoth() {
        var state = StreamRelayState()
        #expect(state.end(.toApp, .failed) == .abort)
        // The other direction, woken by the abort, fails too; nothing more to do.
        #expect(state.end(.toPeer, .failed) == .abort)
        var late = StreamRelayState()
        #expect(late.end(.toPeer, .clean) == .keepGoing)
        #expect(late.end(.toApp, .failed) == .abort)
    }

    @Test func aRepeatedEndChangesNothing() {
        var state = StreamRelayState()
        #expect(state.end(.toPeer, .clean) == .keepGoing)
        #expect(state.end(.toPeer, .failed) == .keepGoing)
        #expect(state.ended == [.toPeer: .clean])
    }
}
