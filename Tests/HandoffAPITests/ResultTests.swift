import HandoffAPI
import HandoffCore
import Testing

let activity = Activity(type: "org.example.reader", title: "Ch. 3", userInfo: ["page": .integer(3)],
                        targetContentIdentifier: "document:3F2A", webpageURL: "https://example.org/a",
                        expiresAtMillis: 1_796_010_000_000, sequence: 42)
let offer = OfferInfo(type: "org.example.reader", title: "Ch. 3", payloadSize: 120, sequence: 42, timestampMillis: 1_000,
                      expiresAtMillis: 61_000, digest: "ab01", ageMillis: 20, deliverTo: "Reader")

func roundTrip<T: JSONCodable>(_ value: T) throws -> T {
    try T(json: JSONValue.parse(String(decoding: JSONWriter.line(value.json), as: UTF8.self)), context: "test")
}

@Suite struct ResultTests {
    @Test func everyResultRoundTrips() throws {
        let header = ActivityHeader(activity)
        #expect(try roundTrip(header) == header)
        var bare = activity
        (bare.targetContentIdentifier, bare.webpageURL, bare.expiresAtMillis) = (nil, nil, nil)
        #expect(try roundTrip(ActivityHeader(bare)) == ActivityHeader(bare))
        #expect(try roundTrip(offer) == offer)
        let entry = PeerEntry(peer: "K7QM", name: "laptop-a", hosts: ["169.254.10.1"], port: 47181, lastSeenMillisAgo: 12,
                              paths: ["multicast"], proximity: ["enforced": false], offer: offer)
        #expect(try roundTrip(entry) == entry)
        var idle = entry
        idle.offer = nil
        #expect(try roundTrip(idle) == idle)
        let receipt = PublishReceipt(sequence: 42, payloadBytes: 120, userInfoBytes: 9, warnings: ["w"])
        #expect(try roundTrip(receipt) == receipt)
        let accepted = AcceptResult(peer: "K7QM", name: "laptop-a", activity: header, deliverTo: "terminal", payloadBytes: 120,
                                    handshakeMillis: 1.25, transferMillis: 3.5, payloadFd: 0)
        #expect(try roundTrip(accepted) == accepted)
        let pairing = PairingOffer(session: 3, code: "123456", name: "laptop-a", peer: "K7QM")
        #expect(try roundTrip(pairing) == pairing)
        #expect(try roundTrip(PairingResult(peer: "K7QM", name: "laptop-a")) == PairingResult(peer: "K7QM", name: "laptop-a"))
        #expect(try roundTrip(PairingWindow(openUntilMillis: 5)) == PairingWindow(openUntilMillis: 5))
        #expect(try roundTrip(PairableDevice(peer: "K7QM", name: "a", host: "h")) == PairableDevice(peer: "K7QM", name: "a", host: "h"))
        let device = DeviceEntry(peer: "K7QM", name: "a", publicKey: "00", pairedAtMillis: 5, inRange: true, needsPairingAgain: false)
        #expect(try roundTrip(device) == device)
        let app = AppEntry(app: "Reader", running: false, types: ["a.b"], desktopFile: "reader.desktop")
        #expect(try roundTrip(app) == app)
        #expect(try roundTrip(IdentityInfo(deviceID: "K7QM", publicKey: "00", name: "a")) == IdentityInfo(deviceID: "K7QM", publicKey: "00", name: "a"))
        #expect(try roundTrip(HelloResult()) == HelloResult())
    }

    /// Accept and continued carry the fixed fields only: userInfo travels by descriptor.
    @Test func acceptCarriesNoUserInfo() {
        let accepted = AcceptResult(peer: "K7QM", name: "a", activity: ActivityHeader(activity), deliverTo: "Reader", payloadBytes: 1,
                                    handshakeMillis: 1, transferMillis: 1, payloadFd: nil)
        #expect(accepted.json["activity"]?["userInfo"] == nil)
        #expect(accepted.json["activity"]?["title"] == "Ch. 3")
        #expect(accepted.json["payloadFd"] == nil)
    }

    @Test func repliesRoundTripWithTheirIDAndError() throws {
        let ok = Reply(id: "abc", outcome: .success(["declined": "K7QM"]))
        #expect(try Reply(json: ok.json) == ok)
        let failed = Reply(id: 3, outcome: .failure(HandoffError(.notFound, "No peer 'x' is in range.", fix: "Run 'handoff-peer list'.")))
        #expect(try Reply(json: failed.json) == failed)
        #expect(Reply(id: nil, outcome: .success(["payloadFd": 0])).descriptorCount == 1)
        #expect(ok.descriptorCount == 0)
        // A reply this client cannot read is a version mismatch, not a crash.
        #expect(throws: HandoffError.self) { try Reply(json: ["id": 1, "ok": false, "error": ["code": "warp-drive", "message": "m", "fix": "f"]]) }
    }
}
