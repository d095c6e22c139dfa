import HandoffCore
import Testing

@Suite struct ServiceRecordTests {
    static let token = "TSK0BCE2PZ22TEVF"

    @Test func txtAndInstanceName() {
        let record = ServiceRecord(token: Self.token)
        #expect(record.txt == ["v=1", "id=TSK0BCE2PZ22TEVF", "caps=udp"])
        #expect(record.instanceName == "tsk0bce2pz22tevf")
        #expect(ServiceRecord(token: Self.token, capabilities: ["udp", "ble"]).txt.last == "caps=udp,ble")
        #expect(ServiceRecord(token: Self.token, capabilities: []).txt.last == "caps=")
    }

    @Test func txtRoundTrips() throws {
        for capabilities in [["udp"], ["udp", "ble"], []] {
            let record = ServiceRecord(token: Self.token, capabilities: capabilities)
            #expect(try ServiceRecord(txt: record.txt) == record)
        }
    }

    @Test func unknownKeysAreIgnoredAndKeysAreCaseInsensitive() throws {
        let record = try ServiceRecord(txt: ["future=yes", "flag-without-value", "V=1", "ID=\(Self.token)"])
        #expect(record == ServiceRecord(token: Self.token, capabilities: []))
    }

    @Test func onlyTheFirstOccurrenceOfAKeyCounts() throws {
        let record = try ServiceRecord(txt: ["v=1", "id=\(Self.token)", "id=0000000000000000", "v=2"])
        #expect(record.token == Self.token)
        #expect(record.version == 1)
    }

    @Test func versionIsRequiredAndChecked() {
        #expect(throws: WireError.invalidValue("TXT record has no version")) { try ServiceRecord(txt: ["id=\(Self.token)"]) }
        #expect(throws: WireError.invalidValue("TXT record has no version")) { try ServiceRecord(txt: ["v=one", "id=\(Self.token)"]) }
        #expect(throws: WireError.unsupportedVersion(2)) { try ServiceRecord(txt: ["v=2", "id=\(Self.token)"]) }
        #expect(throws: WireError.unsupportedVersion(255)) { try ServiceRecord(txt: ["v=100000", "id=\(Self.token)"]) }
        #expect(throws: WireError.unsupportedVersion(0)) { try ServiceRecord(txt: ["v=-1", "id=\(Self.token)"]) }
    }

    @Test(arguments: ["", "TSK0BCE2PZ22TEV", "TSK0BCE2PZ22TEVFF", "tsk0bce2pz22tevf", "TSK0-BCE2-PZ22-TEVF", "USK0BCE2PZ22TEVF", "OSK0BCE2PZ22TEVF", "TSK0BCE2PZ22TEV!"])
    func idMustBeSixteenCanonicalCharacters(_ id: String) {
        #expect(throws: WireError.invalidValue("TXT record has no valid id")) { try ServiceRecord(txt: ["v=1", "id=\(id)"]) }
    }

    @Test func longTXTStringsAreRefused() {
        let long = "x=" + String(repeating: "y", count: 254)
        #expect(throws: WireError.tooLong(field: "TXT string", length: 256, limit: 255)) {
            try ServiceRecord(txt: ["v=1", "id=\(Self.token)", long])
        }
        #expect(throws: Never.self) { try ServiceRecord(txt: ["v=1", "id=\(Self.token)", String(long.dropLast())]) }
    }

    @Test func randomTXTRecordsThrowOrParse() {
        var rng = SplitMix64(seed: 0x5458_5401)
        for index in 0..<2000 {
            let strings = (0..<Int.random(in: 0...4, using: &rng)).map { _ in
                String(decoding: rng.bytes(Int.random(in: 0...20, using: &rng)), as: UTF8.self)
            }
            let candidates = strings + (index % 2 == 0 ? ["v=1"] : [])
            if let record = try? ServiceRecord(txt: candidates) {
                #expect(record.token.count == 16, "record #\(index)")
            }
        }
    }

    /// The wire forms avahi is handed for the service's own records (avahi-browse in the lab
    /// resolves the service published from them to its host, address, port and TXT: test_mdns).
    @Test func recordDataIsDNSWireFormat() {
        #expect(ServiceRecordData.name(["handoff-abc", "_handoff", "_tcp", "local"])
                == [11] + Array("handoff-abc".utf8) + [8] + Array("_handoff".utf8) + [4] + Array("_tcp".utf8) + [5] + Array("local".utf8) + [0])
        #expect(ServiceRecordData.labels("h5.local.") == ["h5", "local"])
        #expect(ServiceRecordData.service(port: 47181, target: ["h5", "local"])
                == [0, 0, 0, 0, 0xb8, 0x4d, 2, 0x68, 0x35, 5] + Array("local".utf8) + [0])
        #expect(ServiceRecordData.text(["v=1", "id=AB"]) == [3] + Array("v=1".utf8) + [5] + Array("id=AB".utf8))
        #expect(ServiceRecordData.text([]) == [0])
        // Out of bounds: a label of 64 bytes, an empty label, a TXT string of 256 bytes.
        #expect(ServiceRecordData.name([String(repeating: "a", count: 64)]) == nil)
        #expect(ServiceRecordData.name(["a", "", "b"]) == nil)
        #expect(ServiceRecordData.name((0..<5).map { _ in String(repeating: "a", count: 60) }) == nil)
        #expect(ServiceRecordData.text([String(repeating: "a", count: 256)]) == nil)
    }
}
