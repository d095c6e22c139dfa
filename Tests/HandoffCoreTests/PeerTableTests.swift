import HandoffCore
import HandoffCrypto
import Testing

private let own = try! Identity(seed: [UInt8](repeating: 1, count: 32))
private let alice = try! Identity(seed: [UInt8](repeating: 2, count: 32))
private let bob = try! Identity(seed: [UInt8](repeating: 3, count: 32))
private let mallory = try! Identity(seed: [UInt8](repeating: 4, count: 32))
private let verifier = Ed25519()
private let now: UInt64 = 1_700_000_000_000
private let hostA = "192.0.2.10"
private let hostB = "fe80::1%eth0"

private func trusted(_ key: DeviceKey) -> Bool { key == alice.publicKey || key == bob.publicKey }

private func body(_ signer: Identity, kind: Announcement.Kind = .present, sequence: UInt64,
                  timestamp: UInt64 = now, ttl: UInt16 = 30, name: String? = nil, port: UInt16 = 52345,
                  offer: SignedSummary? = nil) -> Announcement {
    Announcement(kind: kind, senderKey: signer.publicKey, sequence: sequence, timestampMillis: timestamp,
                 transferPort: port, ttlSeconds: ttl, name: name ?? (signer === alice ? "alice" : signer === bob ? "bob" : "other"),
                 summary: offer)
}

private func datagram(_ signer: Identity, kind: Announcement.Kind = .present, sequence: UInt64, timestamp: UInt64 = now,
                      ttl: UInt16 = 30, name: String? = nil, port: UInt16 = 52345, offer: SignedSummary? = nil) -> [UInt8] {
    try! body(signer, kind: kind, sequence: sequence, timestamp: timestamp, ttl: ttl, name: name, port: port, offer: offer)
        .signedDatagram(by: signer)
}

private func offer(_ signer: Identity, claimedSender: DeviceKey? = nil, sequence: UInt64,
                   expires: UInt64 = now + 600_000, title: String = "Chapter 1") -> SignedSummary {
    let summary = Summary(senderKey: claimedSender ?? signer.publicKey, senderName: "alice", activityType: "org.example.reader",
                          title: title, payloadSize: 10, payloadDigest: [UInt8](repeating: 7, count: 32),
                          sequence: sequence, timestampMillis: now, expiresAtMillis: expires)
    return try! summary.signed(by: signer)
}

private func makeTable() -> PeerTable {
    PeerTable(ownKey: own.publicKey, fingerprint: { Ed25519.deviceID(of: $0) })
}

extension PeerTable {
    fileprivate mutating func receive(_ bytes: [UInt8], from host: String = hostA, path: DiscoveryPathName = .multicast,
                                      at time: UInt64 = now, isTrusted: (DeviceKey) -> Bool = trusted) -> [PeerEvent] {
        receive(datagram: bytes, fromHost: host, path: path, nowMillis: time, verifier: verifier, isTrusted: isTrusted)
    }
}

private func counters(malformed: Int = 0, unsigned: Int = 0, badSignature: Int = 0, expired: Int = 0,
                      replayed: Int = 0, untrusted: Int = 0, unsealed: Int = 0, undecryptable: Int = 0) -> DropCounters {
    var drops = DropCounters()
    drops.malformed = malformed
    drops.unsigned = unsigned
    drops.badSignature = badSignature
    drops.expired = expired
    drops.replayed = replayed
    drops.untrusted = untrusted
    drops.unsealed = unsealed
    drops.undecryptable = undecryptable
    return drops
}

@Suite struct PeerTableReceiveTests {
    @Test func trustedAnnouncementAddsAPeer() throws {
        var table = makeTable()
        let bytes = datagram(alice, sequence: 10, port: 4000)
        #expect(table.receive(bytes) == [.appeared(alice.publicKey)])
        let peer = try #require(table.peers[alice.publicKey])
        #expect(peer.name == "alice")
        #expect(peer.deviceID == alice.deviceID)
        #expect(peer.hosts == [hostA])
        #expect(peer.transferPort == 4000)
        #expect(peer.lastSeenMillis == now)
        #expect(peer.ttlMillis == 30_000)
        #expect(peer.announceSequence == 10)
        #expect(peer.lastDatagram == bytes)
        #expect(peer.offer == nil)
        #expect(table.drops == DropCounters())
    }

    @Test func newerAnnouncementUpdatesThePeer() throws {
        var table = makeTable()
        _ = table.receive(datagram(alice, sequence: 10))
        #expect(table.receive(datagram(alice, sequence: 11, name: "alice's laptop", port: 5000), from: hostB, at: now + 5000) == [])
        let peer = try #require(table.peers[alice.publicKey])
        #expect(peer.name == "alice's laptop")
        #expect(peer.transferPort == 5000)
        #expect(peer.hosts == [hostB, hostA])
        #expect(peer.lastSeenMillis == now + 5000)
        #expect(peer.announceSequence == 11)
    }

    @Test func senderStateIsKeptFromTheLatestAnnouncement() throws {
        var table = makeTable()
        var first = body(alice, sequence: 1)
        first.state = [.bluetoothConfigured, .bluetoothWorking]
        _ = table.receive(try first.signedDatagram(by: alice))
        #expect(table.peers[alice.publicKey]?.senderState == [.bluetoothConfigured, .bluetoothWorking])
        var second = body(alice, sequence: 2)
        second.state = [.disabled, .bluetoothConfigured]
        _ = table.receive(try second.signedDatagram(by: alice))
        #expect(table.peers[alice.publicKey]?.senderState == [.disabled, .bluetoothConfigured])
        // A replayed older state changes nothing.
        _ = table.receive(try first.signedDatagram(by: alice))
        #expect(table.peers[alice.publicKey]?.senderState == [.disabled, .bluetoothConfigured])
        #expect(table.drops == counters(replayed: 1))
    }

    @Test func malformedDatagramsAreCounted() {
        var table = makeTable()
        for bytes in [[], [0x48, 0x4E, 0x44], Array("HNDF".utf8) + [2], [UInt8](repeating: 0, count: 1201)] {
            #expect(table.receive(bytes) == [])
        }
        #expect(table.drops == counters(malformed: 4))
        #expect(table.peers.isEmpty)
    }

    @Test func ownAnnouncementsAreIgnoredWithoutCounting() throws {
        var table = makeTable()
        #expect(table.receive(datagram(own, sequence: 1)) == [])
        // Even unsigned or badly signed ones: they are ours, so they are neither peers nor drops.
        #expect(table.receive(try body(own, sequence: 2).encodedBody()) == [])
        var forged = datagram(own, sequence: 3)
        forged[forged.count - 1] ^= 1
        #expect(table.receive(forged, isTrusted: { _ in true }) == [])
        #expect(table.peers.isEmpty)
        #expect(table.drops == DropCounters())
    }

    @Test func unsignedDatagramsAreCounted() throws {
        var table = makeTable()
        #expect(table.receive(try body(alice, sequence: 1).encodedBody()) == [])
        #expect(table.drops == counters(unsigned: 1))
        #expect(table.peers.isEmpty)
    }

    @Test func badSignaturesAreCounted() {
        var table = makeTable()
        var flippedSignature = datagram(alice, sequence: 1)
        flippedSignature[flippedSignature.count - 10] ^= 0x01
        #expect(table.receive(flippedSignature) == [])
        // A changed body byte (the transfer port) under the original signature.
        var flippedBody = datagram(alice, sequence: 1)
        flippedBody[55] ^= 0x01
        #expect(table.receive(flippedBody) == [])
        // Mallory signing a datagram that claims to be Alice.
        let impostor = try! body(alice, sequence: 2).signedDatagram(by: mallory)
        #expect(table.receive(impostor) == [])
        #expect(table.drops == counters(badSignature: 3))
        #expect(table.peers.isEmpty)
    }

    @Test func untrustedSendersAreOnlyCounted() throws {
        var table = makeTable()
        #expect(table.receive(datagram(mallory, sequence: 1, name: "mallory")) == [])
        #expect(table.receive(datagram(mallory, sequence: 2, name: "mallory", offer: offer(mallory, sequence: 1))) == [])
        #expect(table.drops == counters(untrusted: 2))
        #expect(table.peers.isEmpty)
        // Trusted later (paired): nothing was kept, so it is listed at its next announcement, not before.
        #expect(table.receive(datagram(mallory, sequence: 3), isTrusted: { _ in true }) == [.appeared(mallory.publicKey)])
        #expect(table.peers[mallory.publicKey]?.announceSequence == 3)
    }

    /// Clear pairing beacons are for the daemon's pairing code; as peers they are malformed.
    @Test func pairingBeaconsAreDroppedAsMalformed() throws {
        var table = makeTable()
        #expect(table.receive(datagram(alice, kind: .pairing, sequence: 1)) == [])
        #expect(table.drops == counters(malformed: 1))
        #expect(table.peers.isEmpty)
        // It did not move the sequence on: a present announcement with the same sequence still gets in.
        #expect(table.receive(datagram(alice, sequence: 1)) == [.appeared(alice.publicKey)])
        // From a listed peer, with a newer sequence and an offer: dropped, the peer unchanged.
        let before = try #require(table.peers[alice.publicKey])
        #expect(table.receive(datagram(alice, kind: .pairing, sequence: 5, port: 1, offer: offer(alice, sequence: 100))) == [])
        #expect(table.drops == counters(malformed: 2))
        let after = try #require(table.peers[alice.publicKey])
        #expect(after.announceSequence == before.announceSequence)
        #expect(after.transferPort == before.transferPort)
        #expect(after.offer == nil)
        // The cheaper checks still come first: an unsigned, a forged and an untrusted beacon.
        _ = table.receive(try body(alice, kind: .pairing, sequence: 6).encodedBody())
        var forged = datagram(alice, kind: .pairing, sequence: 7)
        forged[forged.count - 1] ^= 1
        _ = table.receive(forged)
        _ = table.receive(datagram(mallory, kind: .pairing, sequence: 1))
        #expect(table.drops == counters(malformed: 2, unsigned: 1, badSignature: 1, untrusted: 1))
    }

    @Test func dropsDecidedOutsideTheTableAreCounted() {
        var table = makeTable()
        table.recordDrop(\.unsealed)
        table.recordDrop(\.undecryptable)
        table.recordDrop(\.undecryptable)
        table.recordDrop(\.untrusted)
        table.recordDrop(\.malformed)
        table.recordDrop(\.expired)
        #expect(table.drops == counters(malformed: 1, expired: 1, untrusted: 1, unsealed: 1, undecryptable: 2))
        // They add to what the table counts itself.
        _ = table.receive([])
        #expect(table.drops.malformed == 2)
        #expect(table.peers.isEmpty)
    }

    @Test func staleAnnouncementsAreExpired() {
        var table = makeTable()
        let window = 30_000 + PeerTable.maximumClockSkewMillis
        // timestamp + ttl + skew must be after now.
        #expect(table.receive(datagram(alice, sequence: 1, timestamp: now - window)) == [])
        #expect(table.receive(datagram(alice, sequence: 2, timestamp: 0)) == [])
        #expect(table.drops == counters(expired: 2))
        #expect(table.receive(datagram(alice, sequence: 3, timestamp: now - window + 1)) == [.appeared(alice.publicKey)])
    }

    @Test func olderOrEqualSequencesAreReplays() throws {
        var table = makeTable()
        _ = table.receive(datagram(alice, sequence: 10))
        // Same sequence, different bytes.
        #expect(table.receive(datagram(alice, sequence: 10, port: 1)) == [])
        #expect(table.receive(datagram(alice, sequence: 9, timestamp: now + 1)) == [])
        #expect(table.receive(datagram(alice, sequence: 0)) == [])
        #expect(table.drops == counters(replayed: 3))
        #expect(table.peers[alice.publicKey]?.transferPort == 52345)
        #expect(table.receive(datagram(alice, sequence: 11, port: 1)) == [])
        #expect(table.peers[alice.publicKey]?.transferPort == 1)
    }

    @Test func theSameDatagramFromTwoHostsIsNotAReplay() throws {
        var table = makeTable()
        let bytes = datagram(alice, sequence: 10)
        #expect(table.receive(bytes, from: hostA) == [.appeared(alice.publicKey)])
        #expect(table.receive(bytes, from: hostB, at: now + 2000) == [])
        #expect(table.receive(bytes, from: hostB, at: now + 3000) == [])
        #expect(table.drops == DropCounters())
        let peer = try #require(table.peers[alice.publicKey])
        #expect(peer.hosts == [hostA, hostB])
        // A resent datagram does not keep a departed peer alive.
        #expect(peer.lastSeenMillis == now)
    }

    @Test func pathsAreTrackedPerTransport() throws {
        var table = makeTable()
        let first = datagram(alice, sequence: 1)
        _ = table.receive(first, path: .multicast)
        // The same datagram by unicast: that path counts as seen when the datagram was first accepted.
        _ = table.receive(first, from: hostB, path: .unicast, at: now + 5000)
        var peer = try #require(table.peers[alice.publicKey])
        #expect(peer.lastSeenByPath == [.multicast: now, .unicast: now])
        #expect(peer.livePaths(nowMillis: now + 29_999) == [.multicast, .unicast])
        // Only unicast keeps arriving; multicast falls out after the TTL.
        _ = table.receive(datagram(alice, sequence: 2), path: .unicast, at: now + 20_000)
        peer = try #require(table.peers[alice.publicKey])
        #expect(peer.lastSeenByPath == [.multicast: now, .unicast: now + 20_000])
        #expect(peer.livePaths(nowMillis: now + 30_000) == [.unicast])
        #expect(peer.livePaths(nowMillis: now + 50_000) == [])
    }

    @Test func hostsKeepTheFourMostRecent() throws {
        var table = makeTable()
        for index in 1...6 {
            _ = table.receive(datagram(alice, sequence: UInt64(index)), from: "192.0.2.\(index)")
        }
        _ = table.receive(datagram(alice, sequence: 7), from: "192.0.2.4")
        #expect(table.peers[alice.publicKey]?.hosts == ["192.0.2.4", "192.0.2.6", "192.0.2.5", "192.0.2.3"])
    }

    @Test func pipelineOrderCheapestRefusalFirst() throws {
        // Unsigned and untrusted: counted as unsigned.
        var table = makeTable()
        _ = table.receive(try body(mallory, sequence: 1).encodedBody())
        #expect(table.drops == counters(unsigned: 1))

        // Badly signed and untrusted: counted as a bad signature.
        table = makeTable()
        var forged = datagram(mallory, sequence: 1)
        forged[forged.count - 1] ^= 1
        _ = table.receive(forged)
        #expect(table.drops == counters(badSignature: 1))

        // Untrusted and expired: counted as untrusted.
        table = makeTable()
        _ = table.receive(datagram(mallory, sequence: 1, timestamp: 0))
        #expect(table.drops == counters(untrusted: 1))

        // Expired and replayed: counted as expired.
        table = makeTable()
        _ = table.receive(datagram(alice, sequence: 10))
        _ = table.receive(datagram(alice, sequence: 5, timestamp: 0))
        #expect(table.drops == counters(expired: 1))

        // Bad signature and a replayed sequence: counted as a bad signature.
        table = makeTable()
        _ = table.receive(datagram(alice, sequence: 10))
        var replayedForgery = datagram(alice, sequence: 5)
        replayedForgery[replayedForgery.count - 1] ^= 1
        _ = table.receive(replayedForgery)
        #expect(table.drops == counters(badSignature: 1))
    }

    @Test func goodbyeRemovesThePeer() {
        var table = makeTable()
        _ = table.receive(datagram(alice, sequence: 10))
        #expect(table.receive(datagram(alice, kind: .goodbye, sequence: 11, ttl: 0)) == [.left(alice.publicKey)])
        #expect(table.peers.isEmpty)
        // From a peer we do not list: nothing to report.
        #expect(table.receive(datagram(bob, kind: .goodbye, sequence: 1)) == [])
        #expect(table.drops == DropCounters())
    }

    @Test func replayedGoodbyeDoesNotRemoveThePeer() {
        var table = makeTable()
        _ = table.receive(datagram(alice, sequence: 10))
        #expect(table.receive(datagram(alice, kind: .goodbye, sequence: 9)) == [])
        #expect(table.peers[alice.publicKey] != nil)
        #expect(table.drops == counters(replayed: 1))
    }

    @Test func expireDropsPeersAfterTheirTTL() {
        var table = makeTable()
        _ = table.receive(datagram(alice, sequence: 1, ttl: 30))
        _ = table.receive(datagram(bob, sequence: 1, ttl: 120))
        #expect(table.expire(nowMillis: now + 29_999) == [])
        #expect(table.expire(nowMillis: now + 30_000) == [.left(alice.publicKey)])
        #expect(table.peers.keys.sorted { $0.hex < $1.hex } == [bob.publicKey])
        #expect(table.expire(nowMillis: now + 120_000) == [.left(bob.publicKey)])
        #expect(table.peers.isEmpty)
    }

    @Test func removeReportsOnlyKnownPeers() {
        var table = makeTable()
        _ = table.receive(datagram(alice, sequence: 1))
        #expect(table.remove(bob.publicKey) == [])
        #expect(table.remove(alice.publicKey) == [.left(alice.publicKey)])
        #expect(table.remove(alice.publicKey) == [])
    }

    @Test func noAlteredDatagramIsEverAccepted() {
        var table = makeTable()
        let valid = datagram(alice, sequence: 10, offer: offer(alice, sequence: 100))
        var dropped = 0
        for (index, bytes) in mutations(of: valid, seed: 0x5045_4552, count: 2000).enumerated() where bytes != valid {
            let before = table.drops
            #expect(table.receive(bytes) == [], "mutation #\(index)")
            if table.drops != before { dropped += 1 }
        }
        // Every change breaks the framing or the signature: nothing gets in, and every datagram is counted.
        #expect(table.peers.isEmpty)
        #expect(dropped == table.drops.malformed + table.drops.unsigned + table.drops.badSignature)
        #expect(table.drops.malformed > 0)
        #expect(table.drops.badSignature > 0)
        #expect(table.drops.expired + table.drops.replayed + table.drops.untrusted == 0)
        #expect(table.drops.unsealed + table.drops.undecryptable == 0)
        // The original still gets in afterwards.
        #expect(table.receive(valid) == [.appeared(alice.publicKey), .offerReceived(alice.publicKey)])
    }

    /// Finding 5 of issue 15: replaying a peer's latest datagram from 17,473 spoofed
    /// sources appended every one to its host list. The list stays bounded.
    @Test func replaysFromSpoofedSourcesDoNotGrowTheHostList() throws {
        var table = makeTable()
        let bytes = datagram(alice, sequence: 10)
        _ = table.receive(bytes, from: hostA)
        for index in 0..<5_000 { _ = table.receive(bytes, from: "198.51.\(index / 256).\(index % 256)", at: now + 1) }
        let peer = try #require(table.peers[alice.publicKey])
        #expect(peer.hosts.count == PeerTable.maximumHostsPerPeer)
        #expect(peer.hosts.first == hostA)
        #expect(table.drops.tooMany == 5_000 - (PeerTable.maximumHostsPerPeer - 1))
    }
}

@Suite struct PeerTableOfferTests {
    @Test func offerArrivesIsReplacedAndWithdrawn() throws {
        var table = makeTable()
        let first = offer(alice, sequence: 100)
        #expect(table.receive(datagram(alice, sequence: 1, offer: first)) == [.appeared(alice.publicKey), .offerReceived(alice.publicKey)])
        #expect(table.peers[alice.publicKey]?.offer == first)

        // The same offer in the next announcement changes nothing.
        #expect(table.receive(datagram(alice, sequence: 2, offer: first)) == [])

        let second = offer(alice, sequence: 101, title: "Chapter 2")
        #expect(table.receive(datagram(alice, sequence: 3, offer: second)) == [.offerReceived(alice.publicKey)])
        #expect(table.peers[alice.publicKey]?.offer == second)

        #expect(table.receive(datagram(alice, sequence: 4)) == [.offerWithdrawn(alice.publicKey)])
        #expect(table.peers[alice.publicKey]?.offer == nil)
        // No offer, still none: nothing to report.
        #expect(table.receive(datagram(alice, sequence: 5)) == [])
        #expect(table.drops == DropCounters())
    }

    @Test func olderOfferIsAReplayAndKeepsTheCurrentOne() {
        var table = makeTable()
        let current = offer(alice, sequence: 100)
        _ = table.receive(datagram(alice, sequence: 1, offer: current))
        #expect(table.receive(datagram(alice, sequence: 2, offer: offer(alice, sequence: 99))) == [])
        #expect(table.receive(datagram(alice, sequence: 3, offer: offer(alice, sequence: 100, title: "Other"))) == [])
        #expect(table.drops == counters(replayed: 2))
        #expect(table.peers[alice.publicKey]?.offer == current)
        // The announcement itself was still accepted.
        #expect(table.peers[alice.publicKey]?.announceSequence == 3)
    }

    @Test func expiredOfferIsDroppedAndWithdrawsTheCurrentOne() {
        var table = makeTable()
        _ = table.receive(datagram(alice, sequence: 1, offer: offer(alice, sequence: 100)))
        let stale = offer(alice, sequence: 101, expires: now + 10_000)
        // Expired on the sender's clock (its announcement's timestamp), which is what counts.
        #expect(table.receive(datagram(alice, sequence: 2, timestamp: now + 10_000, offer: stale), at: now + 10_000) == [.offerWithdrawn(alice.publicKey)])
        #expect(table.peers[alice.publicKey]?.offer == nil)
        #expect(table.drops == counters(expired: 1))
    }

    @Test func expiredOfferFromANewPeerIsNotShown() {
        var table = makeTable()
        let stale = offer(alice, sequence: 1, expires: now)
        #expect(table.receive(datagram(alice, sequence: 1, offer: stale)) == [.appeared(alice.publicKey)])
        #expect(table.peers[alice.publicKey]?.offer == nil)
        #expect(table.drops == counters(expired: 1))
    }

    @Test func offerSignedByAnotherKeyIsDropped() {
        var table = makeTable()
        // Mallory's own, validly signed summary, relayed inside Alice's announcement.
        let relayed = offer(mallory, sequence: 100)
        #expect(relayed.verify(with: verifier))
        #expect(table.receive(datagram(alice, sequence: 1, offer: relayed)) == [.appeared(alice.publicKey)])
        // A summary claiming Alice as sender but signed by Mallory.
        let forged = offer(mallory, claimedSender: alice.publicKey, sequence: 101)
        #expect(table.receive(datagram(alice, sequence: 2, offer: forged)) == [])
        #expect(table.drops == counters(badSignature: 2))
        #expect(table.peers[alice.publicKey]?.offer == nil)
    }

    @Test func badOfferKeepsTheCurrentOne() {
        var table = makeTable()
        let current = offer(alice, sequence: 100)
        _ = table.receive(datagram(alice, sequence: 1, offer: current))
        let forged = offer(mallory, claimedSender: alice.publicKey, sequence: 200)
        #expect(table.receive(datagram(alice, sequence: 2, offer: forged)) == [])
        #expect(table.peers[alice.publicKey]?.offer == current)
        #expect(table.drops == counters(badSignature: 1))
    }

    @Test func declineHidesUntilANewerOffer() throws {
        var table = makeTable()
        _ = table.receive(datagram(alice, sequence: 1, offer: offer(alice, sequence: 100)))
        #expect(table.peers[alice.publicKey]?.visibleOffer(nowMillis: now)?.summary.sequence == 100)
        table.decline(alice.publicKey, sequence: 100)
        #expect(table.peers[alice.publicKey]?.declinedSequence == 100)
        #expect(table.peers[alice.publicKey]?.visibleOffer(nowMillis: now) == nil)
        // The declined offer re-announced stays hidden.
        _ = table.receive(datagram(alice, sequence: 2, offer: offer(alice, sequence: 100)))
        #expect(table.peers[alice.publicKey]?.visibleOffer(nowMillis: now) == nil)
        // A newer one shows.
        #expect(table.receive(datagram(alice, sequence: 3, offer: offer(alice, sequence: 101))) == [.offerReceived(alice.publicKey)])
        #expect(table.peers[alice.publicKey]?.visibleOffer(nowMillis: now)?.summary.sequence == 101)
        // Declining an unknown peer is a no-op.
        table.decline(bob.publicKey, sequence: 1)
        #expect(table.peers[bob.publicKey] == nil)
    }

    @Test func visibleOfferDisappearsWhenItExpires() throws {
        var table = makeTable()
        _ = table.receive(datagram(alice, sequence: 1, offer: offer(alice, sequence: 100, expires: now + 1000)))
        let peer = try #require(table.peers[alice.publicKey])
        #expect(peer.visibleOffer(nowMillis: now + 999) != nil)
        #expect(peer.visibleOffer(nowMillis: now + 1000) == nil)
    }
}

@Suite struct PeerTableResolveTests {
    /// Device ids that differ only in their last two characters, so short prefixes are ambiguous.
    static func crowdedTable() -> PeerTable {
        PeerTable(ownKey: own.publicKey, fingerprint: { key in
            DeviceID(fingerprint: [UInt8](repeating: 0, count: 9) + [key.bytes[0]])!
        })
    }

    @Test func resolvesByNameAndByIDPrefix() throws {
        var table = makeTable()
        _ = table.receive(datagram(alice, sequence: 1))
        _ = table.receive(datagram(bob, sequence: 1))
        #expect(try table.resolve("alice").key == alice.publicKey)
        #expect(try table.resolve("bob").key == bob.publicKey)
        let id = alice.deviceID
        #expect(try table.resolve(id.description).key == alice.publicKey)
        #expect(try table.resolve(id.compact.lowercased()).key == alice.publicKey)
        try #require(id.compact.prefix(4) != bob.deviceID.compact.prefix(4))
        #expect(try table.resolve(String(id.compact.prefix(4))).key == alice.publicKey)
        #expect(try table.resolve(String(id.description.prefix(6)).lowercased()).key == alice.publicKey)
    }

    @Test func shortPrefixesAreNotMatched() {
        var table = makeTable()
        _ = table.receive(datagram(alice, sequence: 1))
        let failure = #expect(throws: HandoffError.self) { try table.resolve(String(alice.deviceID.compact.prefix(3))) }
        #expect(failure?.code == .notFound)
    }

    @Test func ambiguousIDPrefix() throws {
        #expect(alice.publicKey.bytes[0] != bob.publicKey.bytes[0])
        var table = Self.crowdedTable()
        _ = table.receive(datagram(alice, sequence: 1))
        _ = table.receive(datagram(bob, sequence: 1))
        let failure = #expect(throws: HandoffError.self) { try table.resolve("0000-0000") }
        #expect(failure?.code == .ambiguous)
        #expect(failure?.message == "'0000-0000' matches 2 peers.")
        let aliceID = try #require(table.peers[alice.publicKey]?.deviceID)
        #expect(try table.resolve(aliceID.description).key == alice.publicKey)
    }

    @Test func ambiguousName() throws {
        var table = makeTable()
        _ = table.receive(datagram(alice, sequence: 1, name: "laptop"))
        _ = table.receive(datagram(bob, sequence: 1, name: "laptop"))
        let failure = #expect(throws: HandoffError.self) { try table.resolve("laptop") }
        #expect(failure?.code == .ambiguous)
        #expect(failure?.message == "More than one peer is named 'laptop'.")
        // The device id still tells them apart.
        #expect(try table.resolve(bob.deviceID.description).key == bob.publicKey)
    }

    @Test func notFound() {
        var table = makeTable()
        _ = table.receive(datagram(alice, sequence: 1))
        for reference in ["nobody", "", "ZZZZ-ZZZZ-ZZZZ-ZZZZ", "Alice"] {
            let failure = #expect(throws: HandoffError.self) { try table.resolve(reference) }
            #expect(failure?.code == .notFound, "\(reference)")
        }
        let empty = makeTable()
        #expect(throws: HandoffError.self) { try empty.resolve("alice") }
    }
}

/// Regressions: inputs that once crashed the receiver or let a replay through.
@Suite struct PeerTableHardeningTests {
    @Test func hugeTimestampIsDroppedNotCrashed() {
        var table = makeTable()
        #expect(table.receive(datagram(alice, sequence: 1, timestamp: UInt64.max - 1000)).isEmpty)
        #expect(table.drops == counters(expired: 1))
        #expect(table.peers.isEmpty)
    }

    @Test func timestampFromTooFarAheadIsDropped() {
        var table = makeTable()
        #expect(table.receive(datagram(alice, sequence: 1, timestamp: now + PeerTable.maximumClockSkewMillis + 1)).isEmpty)
        #expect(table.drops == counters(expired: 1))
    }

    /// Finding 12 of issue 15: clocks 10 minutes apart let nothing through.
    @Test func clocksTenMinutesApartStillHandOff() throws {
        for skew in [Int64(-600_000), 600_000] {
            var table = makeTable()
            let theirNow = UInt64(Int64(now) + skew)
            let current = offer(alice, sequence: 5, expires: theirNow + 60_000)
            let events = table.receive(datagram(alice, sequence: 1, timestamp: theirNow, offer: current))
            #expect(events == [.appeared(alice.publicKey), .offerReceived(alice.publicKey)])
            let peer = try #require(table.peers[alice.publicKey])
            #expect(peer.clockOffsetMillis == skew)
            // The offer expires 60 s after it was made on the sender's clock, whatever ours says.
            #expect(peer.visibleOffer(nowMillis: now + 59_000) != nil)
            #expect(peer.visibleOffer(nowMillis: now + 60_000) == nil)
            // Its age too: 5 s old, never negative (a clock ahead showed 2562047788015h in `list`).
            #expect(peer.age(of: theirNow, nowMillis: now + 5_000) == 5_000)
            #expect(peer.age(of: theirNow + 9_000, nowMillis: now) == 0)
        }
    }

    /// Finding 12: a datagram captured before the receiver restarted re-listed a withdrawn offer.
    @Test func restoredSequencesKeepReplaysOutAfterARestart() {
        var before = makeTable()
        let captured = datagram(alice, sequence: 10, offer: offer(alice, sequence: 3))
        _ = before.receive(captured)
        _ = before.receive(datagram(alice, sequence: 11))
        var after = makeTable()
        after.restoreHighestSequences(before.highestSequences)
        let replayed = after.receive(captured, at: now + 1_000)
        #expect(replayed.isEmpty)
        #expect(after.drops.replayed == 1)
        #expect(after.peers.isEmpty)
        // A newer announcement is accepted as usual.
        let newer = after.receive(datagram(alice, sequence: 12, timestamp: now + 1_000), at: now + 1_000)
        #expect(newer == [.appeared(alice.publicKey)])
    }

    @Test func replayAfterGoodbyeIsDropped() {
        var table = makeTable()
        let captured = datagram(alice, sequence: 10)
        _ = table.receive(captured)
        #expect(table.receive(datagram(alice, kind: .goodbye, sequence: 11), at: now + 1000) == [.left(alice.publicKey)])
        #expect(table.receive(captured, from: hostB, at: now + 5000).isEmpty)
        #expect(table.peers.isEmpty)
        #expect(table.drops == counters(replayed: 1))
    }

    @Test func replayAfterExpiryIsDropped() {
        var table = makeTable()
        let captured = datagram(alice, sequence: 10, ttl: 2)
        _ = table.receive(captured)
        #expect(table.expire(nowMillis: now + 3000) == [.left(alice.publicKey)])
        #expect(table.receive(captured, at: now + 4000).isEmpty)
        #expect(table.drops == counters(replayed: 1))
        // A newer datagram brings it back.
        #expect(table.receive(datagram(alice, sequence: 12, timestamp: now + 4000), at: now + 4000) == [.appeared(alice.publicKey)])
    }

    @Test func removedDeviceStartsAfresh() {
        var table = makeTable()
        _ = table.receive(datagram(alice, sequence: 10))
        #expect(table.remove(alice.publicKey) == [.left(alice.publicKey)])
        #expect(table.receive(datagram(alice, sequence: 5)) == [.appeared(alice.publicKey)])
    }
}

@Suite struct FreshnessWindowTests {
    @Test func extremeTimestampsNeverOverflow() {
        #expect(!PeerTable.isFresh(timestampMillis: .max, ttlMillis: 30_000, nowMillis: 1_700_000_000_000))
        #expect(!PeerTable.isFresh(timestampMillis: 0, ttlMillis: .max, nowMillis: .max))
        #expect(PeerTable.isFresh(timestampMillis: 1_700_000_000_000, ttlMillis: 30_000, nowMillis: 1_700_000_010_000))
        #expect(!PeerTable.isFresh(timestampMillis: 1_700_000_000_000, ttlMillis: 30_000,
                                   nowMillis: 1_700_000_000_000 + 30_000 + PeerTable.maximumClockSkewMillis))
    }
}

@Suite struct OfferRefreshTests {
    @Test func theSameOfferReSignedLaterRefreshesQuietlyAndKeepsADecline() throws {
        var table = makeTable()
        let signer = alice
        var summary = Summary(senderKey: signer.publicKey, senderName: "alice", activityType: "org.example.reader", title: "Chapter 1",
                              payloadSize: 10, payloadDigest: [UInt8](repeating: 7, count: 32), sequence: 100,
                              timestampMillis: now, expiresAtMillis: now + 600_000)
        _ = table.receive(datagram(alice, sequence: 1, offer: try summary.signed(by: signer)))
        table.decline(alice.publicKey, sequence: 100)
        summary.timestampMillis = now + 1000
        summary.expiresAtMillis = now + 1_200_000
        let refreshed = try summary.signed(by: signer)
        #expect(table.receive(datagram(alice, sequence: 2, offer: refreshed), at: now + 1000) == [])
        #expect(table.peers[alice.publicKey]?.offer == refreshed)
        #expect(table.peers[alice.publicKey]?.visibleOffer(nowMillis: now + 1000) == nil) // still declined
        #expect(table.drops == DropCounters())
    }
}
