import HandoffCore
import HandoffCrypto

/// The public keys of paired devices, on disk as JSON. Keys arrive by pairing
/// and leave by `untrust`. A corrupt file is reported and left alone; changes
/// are written atomically before they take effect.
public struct TrustStore: Sendable {
    public struct Entry: Sendable, Equatable {
        public var key: DeviceKey
        public var name: String
        public var addedAtMillis: UInt64
    }

    public private(set) var entries: [DeviceKey: Entry] = [:]
    private let directory: StateDirectory

    public static func load(from directory: StateDirectory) throws(HandoffError) -> TrustStore {
        var store = TrustStore(directory: directory)
        guard let bytes = try directory.read(directory.trustPath) else { return store }
        let corrupt = HandoffError(.storage, "The trust store \(directory.trustPath) is corrupt; it was left as it is.",
                                   fix: "Repair the JSON by hand, or move the file away and pair your devices again with 'handoff-peer pair'.")
        guard let text = String(validating: bytes, as: UTF8.self),
              let document = try? JSONValue.parse(text),
              document["version"]?.integerValue == 1,
              let peers = document["peers"]?.arrayValue else { throw corrupt }
        for peer in peers {
            guard let hex = peer["key"]?.stringValue, let key = DeviceKey(hex: hex) else { throw corrupt }
            store.entries[key] = Entry(key: key, name: peer["name"]?.stringValue ?? "",
                                       addedAtMillis: UInt64(clamping: peer["addedAtMillis"]?.integerValue ?? 0))
        }
        return store
    }

    private init(directory: StateDirectory) {
        self.directory = directory
    }

    public func contains(_ key: DeviceKey) -> Bool { entries[key] != nil }

    /// Adds a key and saves; the in-memory store changes only if the write succeeds.
    public mutating func add(_ key: DeviceKey, name: String, nowMillis: UInt64) throws(HandoffError) {
        var updated = entries
        updated[key] = Entry(key: key, name: name, addedAtMillis: entries[key]?.addedAtMillis ?? nowMillis)
        try save(updated)
        entries = updated
    }

    public mutating func remove(_ key: DeviceKey) throws(HandoffError) {
        var updated = entries
        updated.removeValue(forKey: key)
        try save(updated)
        entries = updated
    }

    private func save(_ entries: [DeviceKey: Entry]) throws(HandoffError) {
        let peers: [JSONValue] = entries.values.sorted { $0.key.hex < $1.key.hex }.map {
            .object(["key": .string($0.key.hex), "name": .string($0.name),
                     "deviceId": .string(Ed25519.deviceID(of: $0.key).description),
                     "addedAtMillis": .integer(Int64(clamping: $0.addedAtMillis))])
        }
        let document = JSONValue.object(["version": .integer(1), "peers": .array(peers)])
        try directory.writeAtomically(Array((document.prettyPrinted() + "\n").utf8), to: directory.trustPath)
    }
}
