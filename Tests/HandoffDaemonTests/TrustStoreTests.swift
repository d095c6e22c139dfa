import Foundation
import HandoffCore
import HandoffCrypto
@testable import HandoffDaemon
import Testing

private let alice = try! Identity(seed: [UInt8](repeating: 2, count: 32)).publicKey
private let bob = try! Identity(seed: [UInt8](repeating: 3, count: 32)).publicKey

/// What pairing would have given, with recognisable bytes.
private func material(_ fill: UInt8, epoch: UInt64 = 100) -> TrustStore.PairMaterial {
    .init(agreementKey: [UInt8](repeating: fill, count: 32), discoverySecret: [UInt8](repeating: fill &+ 1, count: 32),
          sealChain: SealChain(epoch: epoch, key: [UInt8](repeating: fill &+ 2, count: 32))!)
}

extension TrustStore {
    fileprivate mutating func add(_ key: DeviceKey, name: String, nowMillis: UInt64) throws(HandoffError) {
        try add(key, name: name, material: material(key.bytes[0]), nowMillis: nowMillis)
    }
}

@Suite struct TrustStoreTests {
    @Test func emptyWithoutAFile() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let store = try TrustStore.load(from: StateDirectory(path: temp.path))
        #expect(store.entries.isEmpty)
        #expect(!store.contains(alice))
        #expect(temp.contents().isEmpty)
    }

    @Test func addAndRemovePersistAcrossLoads() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let directory = StateDirectory(path: temp.path)
        var store = try TrustStore.load(from: directory)
        try store.add(alice, name: "alice", nowMillis: 1000)
        try store.add(bob, name: "bob", nowMillis: 2000)
        #expect(store.contains(alice))
        #expect(permissions(directory.trustPath) == 0o600)

        var reloaded = try TrustStore.load(from: directory)
        #expect(reloaded.entries == store.entries)
        #expect(reloaded.entries[alice]?.name == "alice")
        #expect(reloaded.entries[alice]?.addedAtMillis == 1000)
        #expect(reloaded.entries[bob]?.addedAtMillis == 2000)

        try reloaded.remove(alice)
        #expect(!reloaded.contains(alice))
        let again = try TrustStore.load(from: directory)
        #expect(!again.contains(alice))
        #expect(again.contains(bob))
        #expect(temp.contents() == ["trusted-peers"])
    }

    @Test func reAddingRenamesButKeepsTheOriginalDate() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let directory = StateDirectory(path: temp.path)
        var store = try TrustStore.load(from: directory)
        try store.add(alice, name: "old", nowMillis: 1000)
        try store.add(alice, name: "new", nowMillis: 5000)
        let reloaded = try TrustStore.load(from: directory)
        #expect(reloaded.entries[alice] == TrustStore.Entry(key: alice, name: "new", addedAtMillis: 1000, material: material(alice.bytes[0])))
        #expect(reloaded.entries.count == 1)
    }

    @Test func removingAnUnknownKeyIsHarmless() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        var store = try TrustStore.load(from: StateDirectory(path: temp.path))
        try store.add(alice, name: "alice", nowMillis: 1)
        try store.remove(bob)
        #expect(store.contains(alice))
    }

    @Test func fileIsVersionedSortedJSONWithDeviceIDs() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let directory = StateDirectory(path: temp.path)
        var store = try TrustStore.load(from: directory)
        try store.add(bob, name: "bob", nowMillis: 2)
        try store.add(alice, name: "alice", nowMillis: 1)
        let bytes = try #require(fileBytes(directory.trustPath))
        let document = try JSONValue.parse(String(decoding: bytes, as: UTF8.self))
        #expect(document["version"] == 2)
        let peers = try #require(document["peers"]?.arrayValue)
        let keys = peers.compactMap { $0["key"]?.stringValue }
        #expect(keys == [alice.hex, bob.hex].sorted())
        let aliceEntry = try #require(peers.first { $0["key"]?.stringValue == alice.hex })
        #expect(aliceEntry["deviceId"]?.stringValue == Ed25519.deviceID(of: alice).description)
        #expect(aliceEntry["name"] == "alice")
        #expect(aliceEntry["addedAtMillis"] == 1)
        let fill = alice.bytes[0]
        #expect(aliceEntry["agreementKey"]?.stringValue == Hex.encode([UInt8](repeating: fill, count: 32)))
        #expect(aliceEntry["discoverySecret"]?.stringValue == Hex.encode([UInt8](repeating: fill &+ 1, count: 32)))
        #expect(aliceEntry["sealChain"]?["epoch"] == 100)
        #expect(aliceEntry["sealChain"]?["key"]?.stringValue == Hex.encode([UInt8](repeating: fill &+ 2, count: 32)))
        #expect(document["revoked"]?.arrayValue == [])
        #expect(bytes.last == 0x0A)
    }

    @Test func minimalHandWrittenFileLoads() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let directory = StateDirectory(path: temp.path)
        writeFile(directory.trustPath, Array(#"{"version":1,"peers":[{"key":"\#(alice.hex.uppercased())"}]}"#.utf8))
        let store = try TrustStore.load(from: directory)
        #expect(store.entries[alice] == TrustStore.Entry(key: alice, name: "", addedAtMillis: 0, material: nil))
        // A device paired by an older version is kept, and says it must be paired again.
        #expect(store.entries[alice]?.needsRepairing == true)
    }

    /// A version-1 file (before pairing exchanged keys) loads; saving writes version 2 and keeps the old entry as it was.
    @Test func version1FileLoadsAndUpgradesOnSave() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let directory = StateDirectory(path: temp.path)
        writeFile(directory.trustPath, Array(#"{"version":1,"peers":[{"key":"\#(alice.hex)","name":"alice","addedAtMillis":5}]}"#.utf8))
        var store = try TrustStore.load(from: directory)
        try store.add(bob, name: "bob", nowMillis: 6)
        let reloaded = try TrustStore.load(from: directory)
        #expect(reloaded.entries[alice] == TrustStore.Entry(key: alice, name: "alice", addedAtMillis: 5, material: nil))
        #expect(reloaded.entries[bob]?.needsRepairing == false)
    }

    /// Untrusting remembers the device (bounded), so it can be told so; pairing again forgets that.
    @Test func removedDevicesAreRememberedAsRevoked() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let directory = StateDirectory(path: temp.path)
        var store = try TrustStore.load(from: directory)
        try store.add(alice, name: "alice", nowMillis: 1)
        try store.remove(alice, nowMillis: 7)
        #expect(store.revoked == [TrustStore.Revoked(key: alice, name: "alice", agreementKey: material(alice.bytes[0]).agreementKey, removedAtMillis: 7)])
        #expect(try TrustStore.load(from: directory).revoked == store.revoked)
        try store.add(alice, name: "alice", nowMillis: 8)
        #expect(store.revoked.isEmpty)
        for seed in 0..<(TrustStore.maximumRevoked + 5) {
            let key = try Identity(seed: [UInt8](repeating: UInt8(100 + seed), count: 32)).publicKey
            try store.add(key, name: "n\(seed)", nowMillis: 1)
            try store.remove(key, nowMillis: UInt64(seed))
        }
        #expect(store.revoked.count == TrustStore.maximumRevoked)
        #expect(store.revoked.first?.removedAtMillis == 5)
    }

    /// Seal chains move forward on disk: the earlier period keys are gone from the file.
    @Test func sealChainsAdvanceAndThePastIsErased() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let directory = StateDirectory(path: temp.path)
        var store = try TrustStore.load(from: directory)
        try store.add(alice, name: "alice", nowMillis: 1)
        let before = try #require(store.entries[alice]?.material?.sealChain)
        let moved = try store.advanceSealChains(to: 103)
        let movedAgain = try store.advanceSealChains(to: 103)
        #expect(moved && !movedAgain)
        let after = try #require(try TrustStore.load(from: directory).entries[alice]?.material?.sealChain)
        #expect(after.epoch == 103 && after.key == before.key(at: 103))
        let text = String(decoding: try #require(fileBytes(directory.trustPath)), as: UTF8.self)
        #expect(!text.contains(Hex.encode(before.key)))
    }

    @Test func snapshotRestoresWhatWasThere() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let directory = StateDirectory(path: temp.path)
        var store = try TrustStore.load(from: directory)
        try store.add(alice, name: "alice", nowMillis: 1)
        try store.remove(alice, nowMillis: 3)
        let before = store.snapshot
        // Pairing with bob and re-pairing alice, then both rolled back.
        try store.add(bob, name: "bob", nowMillis: 4)
        try store.add(alice, name: "alice again", nowMillis: 5)
        try store.restore(bob, from: before)
        try store.restore(alice, from: before)
        #expect(!store.contains(bob) && !store.contains(alice))
        #expect(store.revoked.map(\.key) == [alice])
        let reloaded = try TrustStore.load(from: directory)
        #expect(reloaded.entries.isEmpty && reloaded.revoked == store.revoked)
        // Only the key rolled back changes: a device added since stays.
        let snapshot = store.snapshot
        try store.add(bob, name: "bob", nowMillis: 6)
        let carol = try Identity(seed: [UInt8](repeating: 4, count: 32)).publicKey
        try store.add(carol, name: "carol", nowMillis: 7)
        try store.restore(bob, from: snapshot)
        #expect(store.contains(carol) && !store.contains(bob))
    }

    @Test(arguments: [
        "",
        "not json",
        "{",
        "[]",
        #"{"peers":[]}"#,
        #"{"version":3,"peers":[]}"#,
        #"{"version":2,"peers":[{"key":"d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a","agreementKey":"00"}]}"#,
        #"{"version":2,"peers":[{"key":"d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a","agreementKey":"\#(String(repeating: "00", count: 32))"}]}"#,
        #"{"version":2,"peers":[],"revoked":[{"key":"d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"}]}"#,
        #"{"version":"1","peers":[]}"#,
        #"{"version":1}"#,
        #"{"version":1,"peers":{}}"#,
        #"{"version":1,"peers":[{"name":"no key"}]}"#,
        #"{"version":1,"peers":[{"key":"d75a"}]}"#,
        #"{"version":1,"peers":[{"key":42}]}"#,
        #"{"version":1,"peers":[{"key":"zz5a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"}]}"#,
    ])
    func corruptFileThrowsStorageAndIsLeftUnchanged(_ text: String) throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let directory = StateDirectory(path: temp.path)
        let bytes = Array(text.utf8)
        writeFile(directory.trustPath, bytes)
        let failure = #expect(throws: HandoffError.self) { try TrustStore.load(from: directory) }
        #expect(failure?.code == .storage)
        #expect(failure?.message.contains("left as it is") == true)
        #expect(fileBytes(directory.trustPath) == bytes)
        #expect(temp.contents() == ["trusted-peers"])
    }

    @Test func invalidUTF8IsCorrupt() {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let directory = StateDirectory(path: temp.path)
        let bytes: [UInt8] = [0x7B, 0xFF, 0x7D]
        writeFile(directory.trustPath, bytes)
        #expect(throws: HandoffError.self) { try TrustStore.load(from: directory) }
        #expect(fileBytes(directory.trustPath) == bytes)
    }

    @Test func failedSaveLeavesTheStoreUnchanged() throws {
        let temp = TemporaryDirectory()
        defer { temp.remove() }
        let directory = StateDirectory(path: temp.path + "/state")
        try directory.prepare()
        var store = try TrustStore.load(from: directory)
        try store.add(alice, name: "alice", nowMillis: 1)
        // The directory disappears (works as root too, unlike chmod).
        try FileManager.default.removeItem(atPath: directory.path)
        let failure = #expect(throws: HandoffError.self) { try store.add(bob, name: "bob", nowMillis: 2) }
        #expect(failure?.code == .storage)
        #expect(!store.contains(bob))
        #expect(throws: HandoffError.self) { try store.remove(alice) }
        #expect(store.contains(alice))
    }
}
