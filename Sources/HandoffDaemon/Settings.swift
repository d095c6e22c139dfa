import HandoffCore

/// Settings a person changes with `handoff-peer` and expects to survive a
/// restart: for now whether Handoff is switched on. Stored as JSON next to
/// the identity, written atomically; a corrupt file is reported, not replaced.
public struct Settings: Sendable, Equatable {
    public var enabled = true

    static func load(from directory: StateDirectory) throws(HandoffError) -> Settings {
        guard let bytes = try directory.read(directory.settingsPath) else { return Settings() }
        guard let text = String(validating: bytes, as: UTF8.self), let document = try? JSONValue.parse(text),
              document["version"]?.integerValue == 1, let enabled = document["enabled"]?.boolValue else {
            throw HandoffError(.storage, "The settings file \(directory.settingsPath) is corrupt; it was left as it is.",
                               fix: "Repair it (it holds {\"version\": 1, \"enabled\": true}) or move it away to start with the defaults.")
        }
        return Settings(enabled: enabled)
    }

    func save(to directory: StateDirectory) throws(HandoffError) {
        let document: JSONValue = ["version": 1, "enabled": .bool(enabled)]
        try directory.writeAtomically(Array((document.prettyPrinted() + "\n").utf8), to: directory.settingsPath)
    }
}

extension StateDirectory {
    public var settingsPath: String { path + "/settings.json" }
}
