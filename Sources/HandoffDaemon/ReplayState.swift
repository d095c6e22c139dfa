import HandoffCore

/// Replay protection that survives restarts (Docs/SECURITY.md, "Replay and
/// clocks"). Two numbers matter across a restart:
///
/// - every sequence this host has sent lies below `reservedSequence`, so after a
///   restart (even with a clock that stepped back) its announcements and
///   offers still count as newer at its peers;
/// - the highest announce sequence accepted from each paired device, so a
///   datagram captured before a restart cannot bring back a withdrawn offer.
///
/// Sequences follow the millisecond clock where they can; the reservation is
/// taken an hour ahead, so the file is written about once an hour, not per
/// announcement.
struct ReplayState: Equatable {
    var reservedSequence: UInt64 = 0
    var highest: [DeviceKey: UInt64] = [:]

    static let reservationBlock: UInt64 = 3_600_000

    static func load(from directory: StateDirectory) throws(HandoffError) -> ReplayState {
        guard let bytes = try directory.read(directory.replayStatePath) else { return ReplayState() }
        guard let text = String(validating: bytes, as: UTF8.self), let document = try? JSONValue.parse(text),
              document["version"]?.integerValue == 1, let reserved = document["reservedSequence"]?.integerValue, reserved >= 0,
              let entries = document["highest"]?.objectValue else {
            throw corrupt(directory)
        }
        var state = ReplayState(reservedSequence: UInt64(reserved))
        for (hex, value) in entries {
            guard let key = DeviceKey(hex: hex), let sequence = value.integerValue, sequence >= 0 else { throw corrupt(directory) }
            state.highest[key] = UInt64(sequence)
        }
        return state
    }

    private static func corrupt(_ directory: StateDirectory) -> HandoffError {
        HandoffError(.storage, "The replay state \(directory.replayStatePath) is corrupt; it was left as it is.",
                     fix: "Move it away and start handoffd again: peers then accept this host's next announcements as before, and a replayed old datagram can be accepted once per paired device.")
    }

    func save(to directory: StateDirectory) throws(HandoffError) {
        var entries: [String: JSONValue] = [:]
        for (key, sequence) in highest { entries[key.hex] = .integer(Int64(clamping: sequence)) }
        let document: JSONValue = ["version": 1, "reservedSequence": .integer(Int64(clamping: reservedSequence)),
                                   "highest": .object(entries)]
        try directory.writeAtomically(Array((document.prettyPrinted() + "\n").utf8), to: directory.replayStatePath)
    }

    /// The first sequence to use after a start: above everything sent before, and
    /// not below the clock (so sequences keep tracking time where they can).
    mutating func startSequence(wallClockMillis now: UInt64) -> UInt64 {
        let start = max(reservedSequence, now)
        reservedSequence = start &+ Self.reservationBlock
        return start
    }

    /// Whether `sequence` is about to pass the reservation (then it moves up and must be saved).
    mutating func reserve(through sequence: UInt64) -> Bool {
        guard sequence >= reservedSequence else { return false }
        reservedSequence = sequence &+ Self.reservationBlock
        return true
    }
}

extension StateDirectory {
    var replayStatePath: String { path + "/replay.json" }
}
