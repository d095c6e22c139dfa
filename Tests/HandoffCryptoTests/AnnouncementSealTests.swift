import HandoffCore
import HandoffCrypto
import Testing

/// The sealed announcement of Vectors.md: A's goodbye announcement (the v1
/// vector) sealed to B for epoch 1888888 with the nonce 00 01 … 17.
enum SealVector {
    static let epoch: UInt64 = 1_888_888
    static let pairKey = hex("7b2bfa0c758a3a86d37d01e7867045f83125b11c859cdfac5d2d9df571789f30")
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
    static let hint = hex("ce252c5e3792b6bf")
    /// Hints of the same sender for the neighbouring periods, and of B sending to A.
    static let hintPrevious = hex("3125f7177969ad81")
    static let hintNext = hex("b7eb35c8279a2820")
    static let hintAfterNext = hex("44f567c1cf087641")
    static let hintFromB = hex("56a0eb26db62972e")
    static let sealed = hex("""
        484e4446 02 01
        ce252c5e3792b6bf
        000102030405060708090a0b0c0d0e0f1011121314151617
        1782be77f9913beb236b5152bdaab16dc44f562c487abe08b04abd7991d4531f
        eb55009ea263896ae399b3559f6fbc47a6c531fc52dd5dc7ab3a9bc15cc84355
        3116d5bd6b45d055ef97a0aa77d4d0a20561ea117f03512a862d0f75db285e33
        3fe0df1428b76e3da87591883180d41bf56a2499a2c422741e097f75a5a66ad6
        43dc2af4cc5b47bb1e52cbf925134d8fe9c553
        """)
}

private let keyA = DeviceKey(bytes: rfcPublicKey)!
private let keyB = DeviceKey(bytes: rfcPublicKey2)!

/// What a recipient does (Daemon.receiveAnnouncement): the hint table of the previous,
/// current and next period, then the pair key it points to.
private func recipientFinds(_ datagram: [UInt8], atEpoch epoch: UInt64, senders: [DeviceKey: [UInt8]]) -> (DeviceKey, [UInt8])? {
    guard let sealed = try? SealedAnnouncement(decoding: datagram) else { return nil }
    var table: [[UInt8]: DeviceKey] = [:]
    for (sender, pairKey) in senders {
        for candidate in [epoch &- 1, epoch, epoch &+ 1] {
            table[AnnouncementSeal.hint(pairKey: pairKey, sender: sender, epoch: candidate)] = sender
        }
    }
    guard let sender = table[sealed.hint], let inner = AnnouncementSeal.open(sealed, pairKey: senders[sender]!) else { return nil }
    return (sender, inner)
}

private func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard !needle.isEmpty, haystack.count >= needle.count else { return false }
    return (0...(haystack.count - needle.count)).contains { Array(haystack[$0..<($0 + needle.count)]) == needle }
}

@Suite struct AnnouncementSealTests {
    @Test func staticVector() throws {
        #expect(try #require(rfcIdentity().pairKey(with: keyB)) == SealVector.pairKey)
        #expect(AnnouncementSeal.hint(pairKey: SealVector.pairKey, sender: keyA, epoch: SealVector.epoch) == SealVector.hint)
        let sealed = AnnouncementSeal.seal(SealVector.goodbye, pairKey: SealVector.pairKey, sender: keyA, epoch: SealVector.epoch,
                                           nonce: SealVector.nonce)
        #expect(sealed == SealVector.sealed)
        #expect(sealed.count == SealedAnnouncement.headerBytes + SealVector.goodbye.count + SealedAnnouncement.tagBytes)
        let opened = AnnouncementSeal.open(try SealedAnnouncement(decoding: SealVector.sealed), pairKey: SealVector.pairKey)
        #expect(opened == SealVector.goodbye)
    }

    @Test func hintsRotateAndDifferPerDirection() {
        let key = SealVector.pairKey
        #expect(AnnouncementSeal.hint(pairKey: key, sender: keyA, epoch: SealVector.epoch - 1) == SealVector.hintPrevious)
        #expect(AnnouncementSeal.hint(pairKey: key, sender: keyA, epoch: SealVector.epoch + 1) == SealVector.hintNext)
        #expect(AnnouncementSeal.hint(pairKey: key, sender: keyA, epoch: SealVector.epoch + 2) == SealVector.hintAfterNext)
        #expect(AnnouncementSeal.hint(pairKey: key, sender: keyB, epoch: SealVector.epoch) == SealVector.hintFromB)
        #expect(AnnouncementSeal.hint(pairKey: key, sender: keyA, epoch: 0).count == SealedAnnouncement.hintBytes)
        // Another pair key, another hint.
        #expect(AnnouncementSeal.hint(pairKey: Array(key.reversed()), sender: keyA, epoch: SealVector.epoch) != SealVector.hint)
    }

    @Test func sealAndOpenRoundTrip() throws {
        let a = rfcIdentity(), b = rfcIdentity2()
        let fromA = try #require(a.pairKey(with: b.publicKey))
        let atB = try #require(b.pairKey(with: a.publicKey))
        for length in [0, 1, 130, 798] {
            let inner = [UInt8](repeating: UInt8(length & 0xFF), count: length)
            let datagram = AnnouncementSeal.seal(inner, pairKey: fromA, sender: a.publicKey, epoch: 42)
            let sealed = try SealedAnnouncement(decoding: datagram)
            #expect(sealed.encoded == datagram)
            #expect(AnnouncementSeal.open(sealed, pairKey: atB) == inner)
        }
        // A fresh random nonce every time.
        let first = AnnouncementSeal.seal([1, 2, 3], pairKey: fromA, sender: a.publicKey, epoch: 42)
        let second = AnnouncementSeal.seal([1, 2, 3], pairKey: fromA, sender: a.publicKey, epoch: 42)
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
        let datagram = AnnouncementSeal.seal(inner, pairKey: SealVector.pairKey, sender: a.publicKey, epoch: 1)
        #expect(datagram.count <= Announcement.maximumBytes)
        #expect(AnnouncementSeal.open(try SealedAnnouncement(decoding: datagram), pairKey: SealVector.pairKey) == inner)
    }

    @Test func recipientFindsTheSenderForNeighbouringPeriodsOnly() throws {
        let a = rfcIdentity(), b = rfcIdentity2()
        let other = try Identity(seed: [UInt8](repeating: 9, count: 32))
        let pairAB = try #require(a.pairKey(with: b.publicKey))
        let pairOtherB = try #require(other.pairKey(with: b.publicKey))
        let senders = [a.publicKey: pairAB, other.publicKey: pairOtherB]
        let inner = SealVector.goodbye
        let epoch: UInt64 = 1_000
        for sealedAt in [epoch - 1, epoch, epoch + 1] {
            let datagram = AnnouncementSeal.seal(inner, pairKey: pairAB, sender: a.publicKey, epoch: sealedAt)
            let found = try #require(recipientFinds(datagram, atEpoch: epoch, senders: senders), "sealed at \(sealedAt)")
            #expect(found.0 == a.publicKey)
            #expect(found.1 == inner)
        }
        for sealedAt in [epoch - 2, epoch + 2, 0, .max] {
            let datagram = AnnouncementSeal.seal(inner, pairKey: pairAB, sender: a.publicKey, epoch: sealedAt)
            #expect(recipientFinds(datagram, atEpoch: epoch, senders: senders) == nil, "sealed at \(sealedAt)")
        }
        // The other sender's announcements land on the other sender.
        let fromOther = AnnouncementSeal.seal(inner, pairKey: pairOtherB, sender: other.publicKey, epoch: epoch)
        #expect(recipientFinds(fromOther, atEpoch: epoch, senders: senders)?.0 == other.publicKey)
        // A recipient that is not paired with A finds nothing.
        #expect(recipientFinds(AnnouncementSeal.seal(inner, pairKey: pairAB, sender: a.publicKey, epoch: epoch),
                               atEpoch: epoch, senders: [other.publicKey: pairOtherB]) == nil)
    }

    @Test func anotherPairKeyCannotOpen() throws {
        let a = rfcIdentity()
        let other = try Identity(seed: [UInt8](repeating: 9, count: 32))
        let wrong = try #require(a.pairKey(with: other.publicKey))
        let sealed = try SealedAnnouncement(decoding: SealVector.sealed)
        #expect(AnnouncementSeal.open(sealed, pairKey: wrong) == nil)
        #expect(AnnouncementSeal.open(sealed, pairKey: [UInt8](repeating: 0, count: 32)) == nil)
        #expect(AnnouncementSeal.open(sealed, pairKey: Array(SealVector.pairKey.dropLast())) == nil)
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
                    #expect(AnnouncementSeal.open(altered, pairKey: SealVector.pairKey) == nil, "byte \(index) mask \(mask)")
                }
            }
        }
        // A header swapped in from another datagram, with the ciphertext of this one.
        var spliced = try SealedAnnouncement(decoding: SealVector.sealed)
        spliced.hint = SealVector.hintNext
        #expect(AnnouncementSeal.open(spliced, pairKey: SealVector.pairKey) == nil)
        #expect(AnnouncementSeal.open(try SealedAnnouncement(decoding: SealVector.sealed), pairKey: SealVector.pairKey) == SealVector.goodbye)
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
        let pairKey = try #require(a.pairKey(with: b.publicKey))
        for epoch: UInt64 in [1, 1_888_888] {
            let datagram = AnnouncementSeal.seal(inner, pairKey: pairKey, sender: a.publicKey, epoch: epoch)
            for secret in [a.publicKey.bytes, Array(name.utf8), Array(title.utf8), Array("org.example".utf8),
                           try #require(X25519.publicKey(of: a.publicKey)), b.publicKey.bytes] {
                #expect(!contains(datagram, secret), "epoch \(epoch): \(Hex.encode(secret))")
            }
            #expect(AnnouncementSeal.open(try SealedAnnouncement(decoding: datagram), pairKey: pairKey) == inner)
        }
    }
}
