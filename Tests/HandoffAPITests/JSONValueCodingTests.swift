import HandoffAPI
import HandoffCore
import Testing

private struct Inner: Codable, Equatable {
    var id: UInt64
    var tags: [String]
}

private struct Message: Codable, Equatable {
    var name: String
    var count: Int64
    var ratio: Double
    var flag: Bool
    var note: String?
    var inner: Inner
    var list: [Inner]
    var table: [String: Int]
    var anything: JSONValue
}

@Suite struct JSONValueCodingTests {
    fileprivate let sample = Message(name: "a", count: -3, ratio: 2.5, flag: true, note: nil, inner: Inner(id: 7, tags: ["x"]),
                         list: [Inner(id: 1, tags: [])], table: ["k": 2], anything: ["free": [1, "two"]])

    @Test func encodesAsTheLocalAPIWritesAndLeavesOutNil() {
        let json = JSONValueCoding.encode(sample)
        #expect(json == ["name": "a", "count": -3, "ratio": .double(2.5), "flag": true, "inner": ["id": 7, "tags": ["x"]],
                         "list": [["id": 1, "tags": []]], "table": ["k": 2], "anything": ["free": [1, "two"]]])
        #expect(json["note"] == nil)
    }

    @Test func readsBackWhatItWrites() throws {
        #expect(try JSONValueCoding.decode(Message.self, from: JSONValueCoding.encode(sample), context: "m") == sample)
    }

    @Test func nullReadsAsAbsentAndAnIntegralNumberAsADouble() throws {
        var json = JSONValueCoding.encode(sample)
        guard case var .object(fields) = json else { return }
        fields["note"] = .null
        fields["ratio"] = 3
        json = .object(fields)
        let message = try JSONValueCoding.decode(Message.self, from: json, context: "m")
        #expect(message.note == nil && message.ratio == 3)
    }

    @Test func aMissingOrMistypedFieldIsNamedWithItsPath() {
        guard case var .object(fields) = JSONValueCoding.encode(sample) else { return }
        fields["list"] = [["id": 1, "tags": [3]]]
        #expect(throws: HandoffError.self) { try JSONValueCoding.decode(Message.self, from: .object(fields), context: "the reply") }
        do {
            _ = try JSONValueCoding.decode(Message.self, from: .object(fields), context: "the reply")
        } catch {
            #expect(error.code == .internal)
            #expect(error.message.contains("the reply.list[0].tags[0] needs a string"))
        }
        fields["list"] = []
        fields.removeValue(forKey: "name")
        do {
            _ = try JSONValueCoding.decode(Message.self, from: .object(fields), context: "a request", code: .invalidRequest)
        } catch {
            #expect(error.code == .invalidRequest)
            #expect(error.message.contains("a request.name is missing"))
        }
    }

    @Test func integersOutOfTheirTypesRangeAreRefused() {
        let negative: JSONValue = ["id": -1, "tags": []]
        #expect(throws: HandoffError.self) { try JSONValueCoding.decode(Inner.self, from: negative, context: "x") }
        #expect(JSONValueCoding.encode(Inner(id: .max, tags: [])) == ["id": .integer(.max), "tags": []])
    }

    @Test func theLocalAPIsOwnFormsAreKept() throws {
        // Written only when true; absent reads as false.
        var fields = ActivityHeader(Activity(type: "t.a", title: "x"))
        #expect(fields.json["supportsContinuationStreams"] == nil)
        fields.supportsContinuationStreams = true
        #expect(fields.json["supportsContinuationStreams"] == true)
        // A peer offering nothing says so with null, which scripts test for.
        let entry = PeerEntry(peer: "P", name: "n", hosts: [], port: 1, lastSeenMillisAgo: 0, paths: [], proximity: .null, offer: nil)
        #expect(entry.json["offer"] == .null)
        #expect(try PeerEntry(json: entry.json, context: "p") == entry)
        #expect(HelloResult(version: 2, supported: 1...2).json == ["version": 2, "supported": ["min": 1, "max": 2]])
        #expect(throws: HandoffError.self) { try HelloResult(json: ["version": 2, "supported": ["min": 3, "max": 2]], context: "hello") }
        #expect(IdentityInfo(deviceID: "D", publicKey: "k", name: "n").json["deviceId"] == "D")
        #expect(PairingResult(peer: "P", name: "n").json["paired"] == true)
    }

    @Test func dropCountersKeepTheirNames() {
        var drops = DropCounters()
        drops.malformed = 1
        drops.tooMany = 9
        #expect(JSONValueCoding.encode(drops) == ["malformed": 1, "unsigned": 0, "badSignature": 0, "expired": 0, "replayed": 0,
                                                  "untrusted": 0, "unsealed": 0, "undecryptable": 0, "overBudget": 0, "tooMany": 9])
    }

    /// A tagged union's case is its fields beside the tag; errors name fields from the message's top.
    @Test func aTaggedUnionIsFlatAndItsErrorsNameTheField() {
        let event = Event.continued(ContinuedEvent(acceptID: 4, peer: "P", activity: ActivityHeader(Activity(type: "t.a", title: "x")),
                                                   deliverTo: "terminal", payloadBytes: 1))
        #expect(event.json["acceptId"] == 4)
        #expect(event.json["_0"] == nil)
        #expect(Event.enabled.json == ["event": "enabled"])
        do {
            _ = try Event(json: ["event": "willContinue", "acceptId": 1, "peer": "P", "type": "t.a"])
            Issue.record("a willContinue without deliverTo was read")
        } catch {
            #expect(error.message.contains("the willContinue event.deliverTo is missing"))
        }
        do {
            _ = try Event(json: ["event": "continued", "acceptId": "four"])
            Issue.record("a continued event with a text acceptId was read")
        } catch {
            #expect(error.message.contains("the continued event.acceptId needs an integer"))
        }
    }
}
