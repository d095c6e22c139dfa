import Foundation
import HandoffAPI
import HandoffCore
import Testing

/// handoff-peer's `accept --json` writes the activity straight from the payload's mapping.
@Suite struct PayloadJSONTests {
    let activity = Activity(
        type: "org.example.reader", title: "Ch. \"3\" \\ ü",
        userInfo: ["page": .integer(-42), "scroll": .double(0.625), "done": .bool(false), "yes": .bool(true),
                   "tags": .array([.string("atomics"), .array([]), .dictionary([:])]),
                   "thumbnail": .data((0..<1000).map { UInt8(truncatingIfNeeded: $0 * 7) }), "empty": .data([]),
                   "opened": .date(1_796_006_430.5), "nested": .dictionary(["é": .string("ü\u{1}")])],
        targetContentIdentifier: "document:3F2A", webpageURL: "https://example.org/a", expiresAtMillis: 1_796_010_000_000, sequence: 9)

    final class Collected: @unchecked Sendable {
        var text: [UInt8] = []
        var chunks = 0
    }

    func json(_ payload: [UInt8], chunks: inout Int) throws -> String {
        let collected = Collected()
        var output = PayloadJSON { collected.text.append(contentsOf: $0); collected.chunks += 1 }
        let failure = payload.withUnsafeBytes { raw in Result { () throws(HandoffError) in try output.write(payload: raw) } }
        try failure.get()
        chunks = collected.chunks
        return String(decoding: collected.text, as: UTF8.self)
    }

    @Test func writesWhatTheActivitysJSONSays() throws {
        var chunks = 0
        let text = try json(activity.encodedPayload(), chunks: &chunks)
        #expect(try JSONValue.parse(text) == activity.json)
        #expect(text.hasSuffix("}\n"))
    }

    @Test func theStreamFlagIsWritten() throws {
        var streaming = activity
        streaming.supportsContinuationStreams = true
        var chunks = 0
        #expect(try JSONValue.parse(try json(streaming.encodedPayload(), chunks: &chunks)) == streaming.json)
    }

    @Test func largeDataLeavesInChunks() throws {
        var big = activity
        big.userInfo = ["blob": .data([UInt8](repeating: 0xA5, count: 5 << 20))]
        var chunks = 0
        let text = try json(big.encodedPayload(), chunks: &chunks)
        #expect(chunks > 4)
        #expect(try JSONValue.parse(text) == big.json)
    }

    /// Bad payloads fail before a byte is written: truncation at every prefix, bad UTF-8, trailing bytes.
    @Test func aBrokenPayloadWritesNothing() throws {
        var small = activity
        small.userInfo = ["a": .array([.string("xy"), .integer(1)]), "b": .data([1, 2])]
        let payload = small.encodedPayload()
        for length in 0..<payload.count {
            let collected = Collected()
            var output = PayloadJSON { collected.text.append(contentsOf: $0) }
            let outcome = Array(payload.prefix(length)).withUnsafeBytes { raw in Result { () throws(HandoffError) in try output.write(payload: raw) } }
            #expect(throws: HandoffError.self) { try outcome.get() }
            #expect(collected.text.isEmpty)
        }
        var output = PayloadJSON { _ in }
        let trailing = (payload + [0]).withUnsafeBytes { raw in Result { () throws(HandoffError) in try output.write(payload: raw) } }
        #expect(throws: HandoffError.self) { try trailing.get() }
        var badText = payload
        let index = badText.firstIndex(of: UInt8(ascii: "x"))!
        badText[index] = 0xFF
        let notUTF8 = badText.withUnsafeBytes { raw in Result { () throws(HandoffError) in try output.write(payload: raw) } }
        #expect(throws: HandoffError.self) { try notUTF8.get() }
    }
}
