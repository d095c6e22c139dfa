import HandoffCore
import HandoffCrypto
import Testing

/// The sealed announcement of Docs/PROTOCOL.md: A's goodbye announcement (the v1
/// vector) sealed to B in minute 28333333 (epoch 1888888) with the nonce 00 01 … 17, under the
/// period key of the seal chain seeded from the handshake vector's exporter key
/// at epoch 1888887. Computed independently with Python.
enum SealVector {
    static let epoch: UInt64 = 1_888_888
    static let minute: UInt64 = 28_333_333
    static let chainSeed = hex("21eb478ba311a8f99ae2ea33a855e738dec58dc3cba26c0d83433cd25459fecc")
    static let periodKey = hex("2f01f380358a54d50d8dc4cab55bfb39675bb849e63ff63bff80719f26c1a821")
    static let nextPeriodKey = hex("f7cf7fe20b921a2f4a08eaf56fb74cd74cfd37d00331f20cf296da80aa7e9787")
    static let nonce = Array(UInt8(0)..<UInt8(24))
    static let goodbye = hex("""
        484e4446 01 02
        d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a
        0000018bcfe56802
        0000018bcfe569f4
        cc79 0000
        00
        05 616c706861
        0000
        14f0a19d01943fc3ae2d024657711a8ce2146c26d7348ba3fc7310831453ef55
        0a9ead2083d544ab4235a1b5462c06a7f9850c8cd63eba7c156e3e23e5062007
        """)
    static let hint = hex("39de901237ccf489")
    /// The hint of the next minute, of the first minute of the next period, and of B sending to A.
    static let hintNextMinute = hex("8c274fb88b121921")
    static let hintNextPeriod = hex("7485ed9a431a424b")
    static let hintFromB = hex("052e4d147e17e352")
    static let sealed = hex("""
        484e4446 02 01
        39de901237ccf489
        000102030405060708090a0b0c0d0e0f1011121314151617
        ec9dafacf53840d3b9988b58b66fe622eea9f66de45177c826f55b56898fabda
        3003bcbd94983a6121079de93c7fc164436819506a10904e9155ba9c0200f855
        ab752961588e7de76c976271cbb39bed55796332eec3a354df1e3b463eadddf6
        365f709e9503be18e0bacb5f9fea36ec4942b676ee385243955a6b909d8169e5
        84bff382b0e9ae0618a5b6a6956584f7d3fafd
        """)
}

private let keyA = DeviceKey(bytes: rfcPublicKey)!
private let keyB = DeviceKey(bytes: rfcPublicKey2)!

/// What a recipient does (Daemon.refreshHints, receiveAnnouncement): the hint table of the
/// previous, current and next period from each sender's chain, then the period key it points to.
private func recipientFinds(_ datagram: [UInt8], atEpoch epoch: UInt64, senders: [DeviceKey: SealChain]) -> (DeviceKey, [UInt8])? {
    guard let sealed = try? SealedAnnouncement(decoding: datagram) else { return nil }
    var table: [[UInt8]: (DeviceKey, [UInt8])] = [:]
    for (sender, chain) in senders {
        for candidate in [epoch &- 1, epoch, epoch &+ 1] {
            guard let periodKey = chain.key(at: candidate) else { continue }
            for minute in AnnouncementSeal.minutes(of: candidate) {
                table[AnnouncementSeal.hint(periodKey: periodKey, sender: sender, minute: minute)] = (sender, periodKey)
            }
        }
    }
    guard let (sender, periodKey) = table[sealed.hint],
          let inner = AnnouncementSeal.open(sealed, periodKey: periodKey, sender: sender) else { return nil }
    return (sender, inner)
}

private func chain(_ seed: UInt8, at epoch: UInt64) -> SealChain { SealChain(epoch: epoch, key: [UInt8](repeating: seed, count: 32))! }

private func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard !needle.isEmpty, haystack.count >= needle.count else { return false }
    return (0...(haystack.count - needle.count)).contains { Array(haystack[$0..<($0 + needle.count)]) == needle }
}

@Suite struct SealChainTests {
    @Test func knownAnswers() throws {
        let seeded = SealChain.seed(exporterKey: HandshakeVector.exporter, epoch: SealVector.epoch - 1)
        #expect(seeded.key == SealVector.chainSeed && seeded.epoch == SealVector.epoch - 1)
        #expect(seeded.key(at: SealVector.epoch) == SealVector.periodKey)
        #expect(seeded.key(at: SealVector.epoch + 1) == SealVector.nextPeriodKey)
    }

    /// Moving forward forgets the past: no key of an earlier period can be had from what is kept.
    @Test func advancingErasesEarlierPeriods() throws {
        var kept = SealChain.seed(exporterKey: HandshakeVector.exporter, epoch: SealVector.epoch - 1)
        let moved = kept.advance(to: SealVector.epoch)
        #expect(moved)
        #expect(kept.key == SealVector.periodKey)
        #expect(kept.key(at: SealVector.epoch - 1) == nil)
        #expect(kept.key(at: SealVector.epoch + 1) == SealVector.nextPeriodKey)
        let again = kept.advance(to: SealVector.epoch), backwards = kept.advance(to: SealVector.epoch - 5)
        #expect(!again && !backwards)
        #expect(kept.key == SealVector.periodKey)
    }

    @Test func farFuturesAndBadKeysAreRefused() {
        let start = chain(1, at: 10)
        #expect(start.key(at: 10 + SealChain.maximumSteps + 1) == nil)
        #expect(start.key(at: .max) == nil)
        var moved = start
        let advanced = moved.advance(to: .max)
        #expect(!advanced && moved == start)
        #expect(SealChain(epoch: 1, key: [1, 2, 3]) == nil)
    }
}

@Suite struct AnnouncementSealTests {
    @Test func staticVector() throws {
        #expect(AnnouncementSeal.hint(periodKey: SealVector.periodKey, sender: keyA, minute: SealVector.minute) == SealVector.hint)
        let sealed = AnnouncementSeal.seal(SealVector.goodbye, periodKey: SealVector.periodKey, sender: keyA, minute: SealVector.minute,
                                           nonce: SealVector.nonce)
        #expect(sealed == SealVector.sealed)
        #expect(sealed.count == SealedAnnouncement.headerBytes + SealVector.goodbye.count + SealedAnnouncement.tagBytes)
        let opened = AnnouncementSeal.open(try SealedAnnouncement(decoding: SealVector.sealed), periodKey: SealVector.periodKey, sender: keyA)
        #expect(opened == SealVector.goodbye)
    }

    /// A hint lasts one minute, not a whole period.
    @Test func hintsRotateEveryMinuteAndDifferPerDirection() {
        #expect(AnnouncementSeal.hint(periodKey: SealVector.periodKey, sender: keyA, minute: SealVector.minute + 1) == SealVector.hintNextMinute)
        #expect(AnnouncementSeal.hint(periodKey: SealVector.nextPeriodKey, sender: keyA, minute: (SealVector.epoch + 1) * 15) == SealVector.hintNextPeriod)
        #expect(AnnouncementSeal.hint(periodKey: SealVector.periodKey, sender: keyB, minute: SealVector.minute) == SealVector.hintFromB)
        #expect(AnnouncementSeal.hint(periodKey: SealVector.periodKey, sender: keyA, minute: 0).count == SealedAnnouncement.hintBytes)
        #expect(AnnouncementSeal.minutes(of: SealVector.epoch) == 28_333_320...28_333_334)
        #expect(AnnouncementSeal.minutes(of: SealVector.epoch).contains(SealVector.minute))
        #expect(AnnouncementSeal.minutes(of: .max) == 0...0)
        // The hint is not a prefix of the seal key, nor of the period key: separate derivations.
        #expect(!SealVector.periodKey.starts(with: SealVector.hint))
    }

    /// The key that seals is not the key the hint comes from: the period key opens nothing directly.
    @Test func thePeriodKeyItselfDoesNotOpen() throws {
        let sealed = try SealedAnnouncement(decoding: SealVector.sealed)
        #expect(AEAD.open(sealed.ciphertext, key: SealVector.periodKey, nonce: sealed.nonce, associatedData: sealed.header) == nil)
        // Nor does the period key with the other sender (the direction is part of the key).
        #expect(AnnouncementSeal.open(sealed, periodKey: SealVector.periodKey, sender: keyB) == nil)
    }

    @Test func sealAndOpenRoundTrip() throws {
        let a = rfcIdentity()
        let periodKey = try #require(chain(7, at: 40).key(at: 42))
        for length in [0, 1, 130, 798] {
            let inner = [UInt8](repeating: UInt8(length & 0xFF), count: length)
            let datagram = AnnouncementSeal.seal(inner, periodKey: periodKey, sender: a.publicKey, minute: 1)
            let sealed = try SealedAnnouncement(decoding: datagram)
            #expect(sealed.encoded == datagram)
            #expect(AnnouncementSeal.open(sealed, periodKey: periodKey, sender: a.publicKey) == inner)
        }
        // A fresh random nonce every time.
        let first = AnnouncementSeal.seal([1, 2, 3], periodKey: periodKey, sender: a.publicKey, minute: 1)
        let second = AnnouncementSeal.seal([1, 2, 3], periodKey: periodKey, sender: a.publicKey, minute: 1)
        #expect(first != second)
        #expect(first.prefix(14) == second.prefix(14))
    }

    /// The largest signed announcement still fits in one datagram once sealed.
    @Test func largestAnnouncementStillFitsSealed() throws {
        let a = rfcIdentity()
        let summary = Summary(senderKey: a.publicKey, senderName: String(repeating: "n", count: Summary.nameBytes),
                              activityType: String(repeating: "t", count: ActivityLimits.typeBytes),
                              title: String(repeating: "x", count: ActivityLimits.titleBytes),
                              payloadSize: .max, payloadDigest: [UInt8](repeating: 0, count: 32),
                              sequence: .max, timestampMillis: .max, expiresAtMillis: .max)
        let announcement = Announcement(kind: .present, senderKey: a.publicKey, sequence: .max, timestampMillis: .max,
                                        transferPort: .max, ttlSeconds: .max, name: String(repeating: "n", count: Summary.nameBytes),
                                        summary: try summary.signed(by: a))
        let inner = try announcement.signedDatagram(by: a)
        let datagram = AnnouncementSeal.seal(inner, periodKey: SealVector.periodKey, sender: a.publicKey, minute: 1)
        #expect(datagram.count <= Announcement.maximumBytes)
        #expect(AnnouncementSeal.open(try SealedAnnouncement(decoding: datagram), periodKey: SealVector.periodKey, sender: a.publicKey) == inner)
    }

    @Test func recipientFindsTheSenderForNeighbouringPeriodsOnly() throws {
        let a = rfcIdentity()
        let other = try Identity(seed: [UInt8](repeating: 9, count: 32))
        let epoch: UInt64 = 1_000
        // B keeps each pair's chain at the previous period, as the daemon does.
        let origin = chain(1, at: epoch - 3)
        var chainAB = origin
        _ = chainAB.advance(to: epoch - 1)
        let chainOtherB = chain(2, at: epoch - 1)
        let senders = [a.publicKey: chainAB, other.publicKey: chainOtherB]
        let inner = SealVector.goodbye
        for sealedAt in [epoch - 1, epoch, epoch + 1] {
            // A minute outside the sealing period gives a hint nobody tables.
            let misdated = AnnouncementSeal.seal(inner, periodKey: try #require(chainAB.key(at: sealedAt)), sender: a.publicKey,
                                                 minute: (sealedAt + 5) * 15)
            #expect(recipientFinds(misdated, atEpoch: epoch, senders: senders) == nil)
            let datagram = AnnouncementSeal.seal(inner, periodKey: try #require(chainAB.key(at: sealedAt)), sender: a.publicKey,
                                                 minute: sealedAt * 15 + 7)
            let found = try #require(recipientFinds(datagram, atEpoch: epoch, senders: senders), "sealed at \(sealedAt)")
            #expect(found.0 == a.publicKey)
            #expect(found.1 == inner)
        }
        for sealedAt in [epoch + 2, epoch + 100] {
            let datagram = AnnouncementSeal.seal(inner, periodKey: try #require(chainAB.key(at: sealedAt)), sender: a.publicKey,
                                                 minute: sealedAt * 15 + 7)
            #expect(recipientFinds(datagram, atEpoch: epoch, senders: senders) == nil, "sealed at \(sealedAt)")
        }
        // Sealed in a period before the kept one: the key is gone, at both ends.
        let stale = AnnouncementSeal.seal(inner, periodKey: try #require(origin.key(at: epoch - 2)), sender: a.publicKey,
                                          minute: (epoch - 2) * 15)
        #expect(recipientFinds(stale, atEpoch: epoch, senders: senders) == nil)
        // The other sender's announcements land on the other sender.
        let fromOther = AnnouncementSeal.seal(inner, periodKey: try #require(chainOtherB.key(at: epoch)), sender: other.publicKey,
                                              minute: epoch * 15 + 14)
        #expect(recipientFinds(fromOther, atEpoch: epoch, senders: senders)?.0 == other.publicKey)
        // A recipient without A's chain finds nothing.
        #expect(recipientFinds(AnnouncementSeal.seal(inner, periodKey: try #require(chainAB.key(at: epoch)), sender: a.publicKey, minute: epoch * 15),
                               atEpoch: epoch, senders: [other.publicKey: chainOtherB]) == nil)
    }

    @Test func anotherKeyCannotOpen() throws {
        let sealed = try SealedAnnouncement(decoding: SealVector.sealed)
        #expect(AnnouncementSeal.open(sealed, periodKey: SealVector.nextPeriodKey, sender: keyA) == nil)
        #expect(AnnouncementSeal.open(sealed, periodKey: [UInt8](repeating: 0, count: 32), sender: keyA) == nil)
    }

    /// Every byte matters: the magic, version and kind are checked by the decoder, and
    /// the hint and nonce are associated data of the AEAD.
    @Test func flippingAnyByteFails() throws {
        for index in SealVector.sealed.indices {
            for mask: UInt8 in [0x01, 0x80] {
                var bytes = SealVector.sealed
                bytes[index] ^= mask
                if index < 6 {
                    #expect(throws: WireError.self, "byte \(index)") { try SealedAnnouncement(decoding: bytes) }
                } else {
                    let altered = try SealedAnnouncement(decoding: bytes)
                    #expect(AnnouncementSeal.open(altered, periodKey: SealVector.periodKey, sender: keyA) == nil, "byte \(index) mask \(mask)")
                }
            }
        }
        // A header swapped in from another datagram, with the ciphertext of this one.
        var spliced = try SealedAnnouncement(decoding: SealVector.sealed)
        spliced.hint = SealVector.hintNextMinute
        #expect(AnnouncementSeal.open(spliced, periodKey: SealVector.periodKey, sender: keyA) == nil)
        #expect(AnnouncementSeal.open(try SealedAnnouncement(decoding: SealVector.sealed), periodKey: SealVector.periodKey, sender: keyA)
                == SealVector.goodbye)
    }

    @Test func sealedBytesRevealNeitherKeyNorNameNorTitle() throws {
        let a = rfcIdentity(), b = rfcIdentity2()
        let name = "alpha-laptop"
        let title = "Moby Dick, Chapter 1"
        let summary = Summary(senderKey: a.publicKey, senderName: name, activityType: "org.example.reader.document",
                              title: title, payloadSize: 10, payloadDigest: [UInt8](repeating: 7, count: 32),
                              sequence: 5, timestampMillis: 1_700_000_000_000, expiresAtMillis: 1_700_000_600_000)
        let announcement = Announcement(kind: .present, senderKey: a.publicKey, sequence: 6, timestampMillis: 1_700_000_000_000,
                                        transferPort: 47181, ttlSeconds: 15, name: name, summary: try summary.signed(by: a))
        let inner = try announcement.signedDatagram(by: a)
        // The clear form carries all three.
        for secret in [a.publicKey.bytes, Array(name.utf8), Array(title.utf8)] { #expect(contains(inner, secret)) }
        let kept = SealChain.seed(exporterKey: HandshakeVector.exporter, epoch: 0)
        for epoch: UInt64 in [1, 1_000] {
            let periodKey = try #require(kept.key(at: epoch))
            let datagram = AnnouncementSeal.seal(inner, periodKey: periodKey, sender: a.publicKey, minute: 1)
            for secret in [a.publicKey.bytes, Array(name.utf8), Array(title.utf8), Array("org.example".utf8),
                           a.agreementKey, b.publicKey.bytes, b.agreementKey] {
                #expect(!contains(datagram, secret), "epoch \(epoch): \(Hex.encode(secret))")
            }
            #expect(AnnouncementSeal.open(try SealedAnnouncement(decoding: datagram), periodKey: periodKey, sender: a.publicKey) == inner)
        }
    }
}
