import Foundation
import HandoffAPI
import HandoffCore
import Testing

/// One sample of every request; the suite fails when an op has none.
let sampleRequests: [Request] = [
    .hello,
    .publish(.json(Activity(type: "org.example.reader", title: "Ch. 3", userInfo: ["page": .integer(3), "blob": .data([0, 1, 255])],
                            targetContentIdentifier: "document:3F2A", webpageURL: "https://example.org/a", expiresAtMillis: 1_796_010_000_000)), publisher: "handoff-reader"),
    .publish(.descriptor(0), publisher: nil),
    .becomeCurrent(publisher: "browser-firefox"), .resign(publisher: nil), .invalidate(publisher: "documents"), .list,
    .accept(peer: "laptop-a", requireApp: true, payload: true),
    .accept(peer: "K7QM", requireApp: false, payload: false),
    .accept(peer: "K7QM", requireApp: false, payload: false, sequence: 12, digest: String(repeating: "0f", count: 32),
            ticket: String(repeating: "a1", count: 16)),
    .decline(peer: "laptop-a"), .decline(peer: "laptop-a", sequence: 3), .status, .id,
    .pair(peer: "laptop-a", address: nil), .pair(peer: nil, address: "169.254.10.2:47181"),
    .pairListen(timeoutSeconds: 30), .pairOpen(timeoutSeconds: 60), .pairConfirm(session: 4, accept: true), .pairable, .devices,
    .untrust(peer: "laptop-a"), .enable, .disable, .doctor(peer: nil), .doctor(peer: "laptop-a"),
    .declare(app: "Reader", types: ["org.example.reader"], desktopID: "reader.desktop", payloads: true),
    .declarations, .subscribe(payloads: false), .subscribe(payloads: true),
    .awaitStream(sequence: 7), .openStream(peer: nil, sequence: 7), .openStream(peer: "laptop-a", sequence: 9),
]

func line(_ json: JSONValue) -> [UInt8] { JSONWriter.line(json).dropLast() }

func decodeError(_ text: String) -> RequestFailure? {
    if case let .failure(failure) = RequestEnvelope.decode(line: Array(text.utf8)) { return failure }
    return nil
}

@Suite struct RequestTests {
    @Test func everyOpHasASample() {
        #expect(Set(sampleRequests.map(\.op)) == Set(Op.allCases))
    }

    @Test(arguments: sampleRequests) func roundTripsThroughItsLine(_ request: Request) throws {
        let envelope = RequestEnvelope(id: .integer(7), request: request)
        let decoded = try RequestEnvelope.decode(line: line(envelope.json)).get()
        #expect(decoded == envelope)
        #expect(decoded.request.descriptorCount == Request.declaredDescriptors(envelope.json.objectValue ?? [:]))
    }

    /// The JSON that scripts, the Python tests and Scripts/bench send by hand still reads the same.
    @Test func readsTheLinesScriptsWrite() throws {
        let accept = try RequestEnvelope.decode(line: Array(#"{"op":"accept","id":1,"peer":"laptop-a"}"#.utf8)).get()
        #expect(accept == RequestEnvelope(id: 1, version: nil, request: .accept(peer: "laptop-a", requireApp: false, payload: false)))
        let publish = try RequestEnvelope.decode(line: Array(#"{"op":"publish","activity":{"type":"org.example.bench","title":"run 1","userInfo":{"n":1}}}"#.utf8)).get()
        #expect(publish.request == .publish(.json(Activity(type: "org.example.bench", title: "run 1", userInfo: ["n": .integer(1)])), publisher: nil))
        let declare = try RequestEnvelope.decode(line: Array(#"{"op": "declare", "app": "handoff-check", "types": ["a.b"]}"#.utf8)).get()
        #expect(declare.request == .declare(app: "handoff-check", types: ["a.b"], desktopID: nil, payloads: false))
    }

    @Test func anUnknownOpNamesTheKnownOnesAndKeepsTheID() {
        let failure = decodeError(#"{"op":"teleport","id":"x"}"#)
        #expect(failure?.id == "x")
        #expect(failure?.error.code == .invalidRequest)
        #expect(failure?.error.message == "Unknown op 'teleport'. Known: " + Op.allCases.map(\.rawValue).joined(separator: ", ") + ".")
        #expect(decodeError(#"{"id":3}"#)?.error.message == "The request has no \"op\".")
        #expect(decodeError("[1]")?.error.message == "The request is not a JSON object.")
        #expect(decodeError("{not json")?.error.message == "The request is not valid JSON.")
        // Round two, 8: these were answered "not a JSON object".
        #expect(decodeError(#"{"op":"status","op":"list"}"#)?.error.message == "The request is not valid JSON: an object repeats a key.")
        #expect(decodeError(#"{"op":"status","n":1e400}"#)?.error.message == "The request is not valid JSON: a number no double holds (such as 1e400).")
    }

    /// A client of another release says which version it speaks and is told both.
    @Test func anUnsupportedVersionNamesBothVersions() throws {
        let failure = decodeError(#"{"op":"status","id":1,"version":1}"#)
        #expect(failure?.id == 1)
        #expect(failure?.error.code == .invalidRequest)
        #expect(failure?.error.message == "This client speaks local API version 1; this handoffd speaks version 2.")
        #expect(decodeError(#"{"op":"status","version":"2"}"#)?.error.code == .invalidRequest)
        #expect(try RequestEnvelope.decode(line: Array(#"{"op":"status","version":2}"#.utf8)).get().version == 2)
    }

    @Test func missingOrMistypedParametersAreInvalidRequests() {
        #expect(decodeError(#"{"op":"accept"}"#)?.error.message == "accept needs \"peer\" (a device id (or a unique prefix of it) or a device name).")
        #expect(decodeError(#"{"op":"accept","peer":""}"#)?.error.code == .invalidRequest)
        #expect(decodeError(#"{"op":"accept","peer":"a","requireApp":"yes"}"#)?.error.message == "accept needs \"requireApp\" (true or false).")
        // The chosen offer and the ticket are checked as they come (review, round three, item 3).
        #expect(decodeError(#"{"op":"accept","peer":"a","sequence":-1}"#)?.error.code == .invalidRequest)
        #expect(decodeError(#"{"op":"accept","peer":"a","sequence":1,"digest":"zz"}"#)?.error.message.contains("64 hex digits") == true)
        #expect(decodeError(#"{"op":"accept","peer":"a","ticket":"../x"}"#)?.error.message.contains("hex digits") == true)
        #expect(decodeError(#"{"op":"decline","peer":"a","sequence":"1"}"#)?.error.code == .invalidRequest)
        #expect(decodeError(#"{"op":"pairListen","timeoutSeconds":0}"#)?.error.message == "\"timeoutSeconds\" must be 1 to 3600.")
        #expect(decodeError(#"{"op":"declare","app":"A","types":[1]}"#)?.error.message == "\"types\" must hold strings.")
        #expect(decodeError(#"{"op":"publish"}"#)?.error.code == .invalidRequest)
        // A publisher name is short printable ASCII, and only the ops that offer take one.
        #expect(decodeError(#"{"op":"resign","publisher":"two words"}"#)?.error.message.contains("printable ASCII") == true)
        #expect(decodeError(#"{"op":"resign","publisher":""}"#)?.error.code == .invalidRequest)
        #expect(decodeError(#"{"op":"resign","publisher":"\#(String(repeating: "x", count: 65))"}"#)?.error.code == .invalidRequest)
        #expect(decodeError(#"{"op":"status","publisher":"a"}"#)?.error.message.contains("Only publish, becomeCurrent, resign and invalidate") == true)
        // The activity's own checks keep their code and key path.
        let bad = decodeError(#"{"op":"publish","activity":{"type":"a.b","userInfo":{"a":{"b":[1,null]}}}}"#)
        #expect(bad?.error.code == .invalidActivity)
        #expect(bad?.error.message.contains("userInfo.a.b[1]") == true)
    }

    /// Only publish carries a descriptor; a line that declares one anyway still has it taken (and closed).
    @Test func descriptorsAreDeclaredByPayloadFd() {
        let stray = decodeError(#"{"op":"status","payloadFd":0}"#)
        #expect(stray?.error.code == .invalidRequest)
        #expect(stray?.descriptorCount == 1)
        let both = decodeError(#"{"op":"publish","payloadFd":0,"activity":{"type":"a.b"}}"#)
        #expect(both?.descriptorCount == 1)
        #expect(decodeError(#"{"op":"publish","payloadFd":1}"#)?.descriptorCount == 1)
        #expect(MessageDescriptors.declared(in: ["id": 1, "ok": true, "result": ["payloadFd": 0]]) == 1)
        #expect(MessageDescriptors.declared(in: ["event": "continued", "payloadFd": 0]) == 1)
        #expect(MessageDescriptors.declared(in: ["event": "continued"]) == 0)
    }
}
