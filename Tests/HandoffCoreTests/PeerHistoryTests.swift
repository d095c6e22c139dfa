import HandoffCore
import HandoffCrypto
import Testing

private let own = try! Identity(seed: [UInt8](repeating: 1, count: 32))
private let alice = try! Identity(seed: [UInt8](repeating: 2, count: 32))
private let now: UInt64 = 1_700_000_000_000

private func offer(sequence: UInt64, expires: UInt64) -> SignedSummary {
    let summary = Summary(senderKey: alice.publicKey, senderName: "alice", activityType: "org.example.reader",
                          title: "Chapter 1", payloadSize: 10, payloadDigest: [UInt8](repeating: 7, count: 32),
                          sequence: sequence, timestampMillis: now, expiresAtMillis: expires)
    return try! summary.signed(by: alice)
}

/// Alice's announcement number `sequence` at `time`, through a peer table: the Peer the daemon would hold.
private func heard(_ table: inout PeerTable, sequence: UInt64, at time: UInt64, offer: SignedSummary?,
                   state: Announcement.SenderState = [], path: DiscoveryPathName = .multicast,
                   from host: String = "192.0.2.1") -> Peer? {
    var announcement = Announcement(kind: .present, senderKey: alice.publicKey, sequence: sequence, timestampMillis: time,
                                    transferPort: 47181, ttlSeconds: 15, name: "alice", summary: offer)
    announcement.state = state
    _ = table.receive(datagram: try! announcement.signedDatagram(by: alice), fromHost: host, path: path,
                      nowMillis: time, verifier: Ed25519(), isTrusted: { $0 == alice.publicKey })
    return table.peers[alice.publicKey]
}

@Suite struct PeerHistoryTests {
    /// Back after an absence and heard over IPv6 first, the peer's IPv4 address is still known:
    /// the probe of a peer that vanished again asks every address it had.
    @Test func aReturnHeardOverOneFamilyKeepsTheOtherAddresses() throws {
        var history = PeerHistory()
        var before = PeerTable(ownKey: own.publicKey, fingerprint: { Ed25519.deviceID(of: $0) })
        _ = heard(&before, sequence: 1, at: now, offer: nil, from: "169.254.10.1")
        history.heard(try #require(heard(&before, sequence: 2, at: now + 100, offer: nil, from: "fe80::1%eth0")), nowMillis: now + 100)
        #expect(history.entries[alice.publicKey]?.hosts == ["fe80::1%eth0", "169.254.10.1"])

        var after = PeerTable(ownKey: own.publicKey, fingerprint: { Ed25519.deviceID(of: $0) })
        history.heard(try #require(heard(&after, sequence: 3, at: now + 60_000, offer: nil, from: "fe80::1%eth0")), nowMillis: now + 60_000)
        #expect(history.entries[alice.publicKey]?.hosts == ["fe80::1%eth0", "169.254.10.1"])

        // Bounded like the peer table: the oldest addresses go first.
        for (index, host) in ["10.0.0.1", "10.0.0.2", "10.0.0.3"].enumerated() {
            var table = PeerTable(ownKey: own.publicKey, fingerprint: { Ed25519.deviceID(of: $0) })
            history.heard(try #require(heard(&table, sequence: 4 + UInt64(index), at: now + 120_000 + UInt64(index), offer: nil, from: host)),
                          nowMillis: now + 120_000 + UInt64(index))
        }
        #expect(history.entries[alice.publicKey]?.hosts == ["10.0.0.3", "10.0.0.2", "10.0.0.1", "fe80::1%eth0"])
    }

    @Test func anOfferWithdrawnBeforeItsExpiryWasResignedOrInvalidated() throws {
        var table = PeerTable(ownKey: own.publicKey, fingerprint: { Ed25519.deviceID(of: $0) })
        var history = PeerHistory()
        history.heard(try #require(heard(&table, sequence: 1, at: now, offer: offer(sequence: 5, expires: now + 600_000))), nowMillis: now)
        let peer = try #require(heard(&table, sequence: 2, at: now + 1000, offer: nil))
        history.heard(peer, nowMillis: now + 1000)
        #expect(history.offerState(of: alice.publicKey, peer: peer, hasWebpage: false, nowMillis: now + 2000)
            == .withdrawn(type: "org.example.reader", atMillis: now + 1000, how: .unknown))
        // Still withdrawn (not "expired") once its expiry has passed, and after the peer left.
        #expect(history.offerState(of: alice.publicKey, peer: nil, hasWebpage: false, nowMillis: now + 900_000)
            == .withdrawn(type: "org.example.reader", atMillis: now + 1000, how: .unknown))
    }

    /// The sender says which: resigned (it may come back) or invalidated (ended).
    @Test(arguments: [(Announcement.SenderState.offerResigned, ConditionEvidence.Withdrawal.resigned),
                      (.offerInvalidated, .invalidated)])
    func theSenderSaysHowItWithdrewItsOffer(_ state: Announcement.SenderState, _ how: ConditionEvidence.Withdrawal) throws {
        var table = PeerTable(ownKey: own.publicKey, fingerprint: { Ed25519.deviceID(of: $0) })
        var history = PeerHistory()
        history.heard(try #require(heard(&table, sequence: 1, at: now, offer: offer(sequence: 5, expires: now + 600_000))), nowMillis: now)
        let peer = try #require(heard(&table, sequence: 2, at: now + 1000, offer: nil, state: state))
        history.heard(peer, nowMillis: now + 1000)
        #expect(history.offerState(of: alice.publicKey, peer: peer, hasWebpage: false, nowMillis: now + 2000)
            == .withdrawn(type: "org.example.reader", atMillis: now + 1000, how: how))
    }

    @Test func anOfferGoneAtItsExpiryExpired() throws {
        var table = PeerTable(ownKey: own.publicKey, fingerprint: { Ed25519.deviceID(of: $0) })
        var history = PeerHistory()
        history.heard(try #require(heard(&table, sequence: 1, at: now, offer: offer(sequence: 5, expires: now + 2000))), nowMillis: now)
        let peer = try #require(heard(&table, sequence: 2, at: now + 2500, offer: nil))
        history.heard(peer, nowMillis: now + 2500)
        #expect(history.offerState(of: alice.publicKey, peer: peer, hasWebpage: false, nowMillis: now + 3000)
            == .expired(type: "org.example.reader", atMillis: now + 2000))
    }

    @Test func aDeclinedOfferIsToldWithItsTime() throws {
        var table = PeerTable(ownKey: own.publicKey, fingerprint: { Ed25519.deviceID(of: $0) })
        var history = PeerHistory()
        history.heard(try #require(heard(&table, sequence: 1, at: now, offer: offer(sequence: 5, expires: now + 600_000))), nowMillis: now)
        table.decline(alice.publicKey, sequence: 5)
        history.declined(alice.publicKey, sequence: 5, nowMillis: now + 100)
        #expect(history.offerState(of: alice.publicKey, peer: table.peers[alice.publicKey], hasWebpage: false, nowMillis: now + 200)
            == .declinedHere(type: "org.example.reader", atMillis: now + 100))
    }

    @Test func theLastWordsOutliveThePeer() throws {
        var table = PeerTable(ownKey: own.publicKey, fingerprint: { Ed25519.deviceID(of: $0) })
        var history = PeerHistory()
        history.heard(try #require(heard(&table, sequence: 1, at: now, offer: nil, state: [.disabled])), nowMillis: now)
        history.saidGoodbye(alice.publicKey, nowMillis: now + 5000)
        let entry = try #require(history.entries[alice.publicKey])
        #expect(entry.state == [.disabled])
        #expect(entry.goodbyeMillis == now + 5000)
        #expect(entry.announcementsByPath == [.multicast: now])
        #expect(entry.hosts == ["192.0.2.1"])
        #expect(history.offerState(of: alice.publicKey, peer: nil, hasWebpage: false, nowMillis: now) == .none)
    }

    @Test func thePathsAPeerWasHeardByOutliveItsAbsencesButNotItsGoodbye() throws {
        var table = PeerTable(ownKey: own.publicKey, fingerprint: { Ed25519.deviceID(of: $0) })
        var history = PeerHistory()
        history.heard(try #require(heard(&table, sequence: 1, at: now, offer: nil)), nowMillis: now)
        // It expires, then comes back by unicast: its first contact by multicast is still known.
        _ = table.expire(nowMillis: now + 60_000)
        history.heard(try #require(heard(&table, sequence: 2, at: now + 60_000, offer: nil, path: .unicast)), nowMillis: now + 60_000)
        #expect(history.entries[alice.publicKey]?.announcementsByPath == [.multicast: now, .unicast: now + 60_000])
        // After a goodbye, what it is heard by starts afresh.
        history.saidGoodbye(alice.publicKey, nowMillis: now + 61_000)
        _ = table.expire(nowMillis: now + 200_000)
        history.heard(try #require(heard(&table, sequence: 3, at: now + 200_000, offer: nil, path: .unicast)), nowMillis: now + 200_000)
        #expect(history.entries[alice.publicKey]?.announcementsByPath == [.unicast: now + 200_000])
    }

    @Test func unpairedDevicesAreRememberedAndBounded() {
        var history = PeerHistory()
        for index in 0..<20 {
            history.unpairedHere(alice.publicKey, name: "device-\(index)", nowMillis: now + UInt64(index))
        }
        #expect(history.unpaired.count == PeerHistory.maximumUnpaired)
        #expect(history.unpairedMillis(name: "device-0") == nil)
        #expect(history.unpairedMillis(name: "device-19") == now + 19)
        #expect(history.entries[alice.publicKey] == nil)
    }
}
