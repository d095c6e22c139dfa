import HandoffCore
import HandoffCrypto

/// The paired devices, on disk as JSON (0600: it holds each pair's secrets).
/// Keys arrive by pairing and leave by `untrust`. A corrupt file is reported
/// and left alone; changes are written atomically before they take effect.
///
/// Version 2 keeps, per device, what pairing exchanged: its agreement key
/// (for the pair key), its discovery secret (for its tokens) and the pair's
/// seal chain (Docs/SECURITY.md, "Keys"). A version-1 file still loads; its
/// devices lack those and must be paired again (`needsRepairing`). Devices
/// removed by `untrust` are remembered (a bounded list) so that a fetch from
/// one of them gets an authenticated "no longer trusted" answer.
public struct TrustStore: Sendable {
    /// What pairing gives a device about its peer.
    public struct PairMaterial: Sendable, Equatable {
        public var agreementKey: [UInt8]
        public var discoverySecret: [UInt8]
        public var sealChain: SealChain

        public init(agreementKey: [UInt8], discoverySecret: [UInt8], sealChain: SealChain) {
            self.agreementKey = agreementKey
            self.discoverySecret = discoverySecret
            self.sealChain = sealChain
        }
    }

    public struct Entry: Sendable, Equatable {
        public var key: DeviceKey
        public var name: String
        public var addedAtMillis: UInt64
        /// nil for a device paired by a version before 3.
        public var material: PairMaterial?

        public var needsRepairing: Bool { material == nil }
    }

    /// A device this host untrusted.
    public struct Revoked: Sendable, Equatable {
        public var key: DeviceKey
        public var name: String
        public var agreementKey: [UInt8]
        public var removedAtMillis: UInt64
    }

    /// The store before a pairing, to put that device back as it was if the pairing is rolled back.
    public struct Snapshot: Sendable {
        fileprivate var entries: [DeviceKey: Entry]
        fileprivate var revoked: [Revoked]
    }

    public static let version = 2
    public static let maximumRevoked = 32

    public private(set) var entries: [DeviceKey: Entry] = [:]
    public private(set) var revoked: [Revoked] = []
    private let directory: StateDirectory

    public static func load(from directory: StateDirectory) throws(HandoffError) -> TrustStore {
        var store = TrustStore(directory: directory)
        guard let bytes = try directory.read(directory.trustPath) else { return store }
        let corrupt = HandoffError(.storage, "The trust store \(directory.trustPath) is corrupt; it was left as it is.",
                                   fix: "Repair the JSON by hand, or move the file away and pair your devices again with 'handoff-peer pair'.")
        guard let text = String(validating: bytes, as: UTF8.self),
              let document = try? JSONValue.parse(text),
              let version = document["version"]?.integerValue, version == 1 || version == 2,
              let peers = document["peers"]?.arrayValue else { throw corrupt }
        func bytes32(_ value: JSONValue?) throws(HandoffError) -> [UInt8]? {
            guard let value else { return nil }
            guard let text = value.stringValue, let bytes = Hex.decode(text), bytes.count == 32 else { throw corrupt }
            return bytes
        }
        for peer in peers {
            guard let hex = peer["key"]?.stringValue, let key = DeviceKey(hex: hex) else { throw corrupt }
            var material: PairMaterial?
            if let agreement = try bytes32(peer["agreementKey"]) {
                guard let secret = try bytes32(peer["discoverySecret"]), let chainKey = try bytes32(peer["sealChain"]?["key"]),
                      let epoch = peer["sealChain"]?["epoch"]?.integerValue, epoch >= 0,
                      let chain = SealChain(epoch: UInt64(epoch), key: chainKey) else { throw corrupt }
                material = PairMaterial(agreementKey: agreement, discoverySecret: secret, sealChain: chain)
            }
            store.entries[key] = Entry(key: key, name: peer["name"]?.stringValue ?? "",
                                       addedAtMillis: UInt64(clamping: peer["addedAtMillis"]?.integerValue ?? 0), material: material)
        }
        for item in document["revoked"]?.arrayValue ?? [] {
            guard let hex = item["key"]?.stringValue, let key = DeviceKey(hex: hex),
                  let agreement = try bytes32(item["agreementKey"]) else { throw corrupt }
            store.revoked.append(Revoked(key: key, name: item["name"]?.stringValue ?? "", agreementKey: agreement,
                                         removedAtMillis: UInt64(clamping: item["removedAtMillis"]?.integerValue ?? 0)))
        }
        store.revoked = Array(store.revoked.suffix(maximumRevoked))
        return store
    }

    private init(directory: StateDirectory) {
        self.directory = directory
    }

    public func contains(_ key: DeviceKey) -> Bool { entries[key] != nil }

    public var snapshot: Snapshot { Snapshot(entries: entries, revoked: revoked) }

    /// Adds a key and saves; the in-memory store changes only if the write succeeds.
    public mutating func add(_ key: DeviceKey, name: String, material: PairMaterial, nowMillis: UInt64) throws(HandoffError) {
        var updated = entries
        updated[key] = Entry(key: key, name: name, addedAtMillis: entries[key]?.addedAtMillis ?? nowMillis, material: material)
        let remaining = revoked.filter { $0.key != key }
        try save(updated, remaining)
        entries = updated
        revoked = remaining
    }

    /// Removes a key and remembers it as revoked (if pairing gave us its agreement key).
    public mutating func remove(_ key: DeviceKey, nowMillis: UInt64 = 0) throws(HandoffError) {
        var updated = entries
        guard let entry = updated.removeValue(forKey: key) else { return }
        var remaining = revoked.filter { $0.key != key }
        if let material = entry.material {
            remaining.append(Revoked(key: key, name: entry.name, agreementKey: material.agreementKey, removedAtMillis: nowMillis))
            remaining = Array(remaining.suffix(Self.maximumRevoked))
        }
        try save(updated, remaining)
        entries = updated
        revoked = remaining
    }

    /// Puts `key` back as `snapshot` had it (a pairing the other side did not
    /// store), leaving every other device as it is now.
    public mutating func restore(_ key: DeviceKey, from snapshot: Snapshot) throws(HandoffError) {
        var updated = entries
        updated[key] = snapshot.entries[key]
        var remaining = revoked.filter { $0.key != key }
        if let old = snapshot.revoked.first(where: { $0.key == key }) {
            remaining.append(old)
            remaining = Array(remaining.suffix(Self.maximumRevoked))
        }
        try save(updated, remaining)
        entries = updated
        revoked = remaining
    }

    /// Moves every seal chain forward to `epoch`, erasing the earlier keys on disk.
    /// Returns false, changing nothing, when nothing moved or the write failed.
    public mutating func advanceSealChains(to epoch: UInt64) throws(HandoffError) -> Bool {
        var updated = entries
        var moved = false
        for (key, entry) in entries {
            guard var material = entry.material, material.sealChain.advance(to: epoch) else { continue }
            updated[key]?.material = material
            moved = true
        }
        guard moved else { return false }
        try save(updated, revoked)
        entries = updated
        return true
    }

    private func save(_ entries: [DeviceKey: Entry], _ revoked: [Revoked]) throws(HandoffError) {
        let peers: [JSONValue] = entries.values.sorted { $0.key.hex < $1.key.hex }.map {
            var fields: [String: JSONValue] = ["key": .string($0.key.hex), "name": .string($0.name),
                                               "deviceId": .string(Ed25519.deviceID(of: $0.key).description),
                                               "addedAtMillis": .integer(Int64(clamping: $0.addedAtMillis))]
            if let material = $0.material {
                fields["agreementKey"] = .string(Hex.encode(material.agreementKey))
                fields["discoverySecret"] = .string(Hex.encode(material.discoverySecret))
                fields["sealChain"] = ["epoch": .integer(Int64(clamping: material.sealChain.epoch)),
                                       "key": .string(Hex.encode(material.sealChain.key))]
            }
            return .object(fields)
        }
        let gone: [JSONValue] = revoked.map {
            ["key": .string($0.key.hex), "name": .string($0.name), "agreementKey": .string(Hex.encode($0.agreementKey)),
             "removedAtMillis": .integer(Int64(clamping: $0.removedAtMillis))]
        }
        let document = JSONValue.object(["version": .integer(Int64(Self.version)), "peers": .array(peers), "revoked": .array(gone)])
        try directory.writeAtomically(Array((document.prettyPrinted() + "\n").utf8), to: directory.trustPath)
    }
}
