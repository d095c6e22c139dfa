import HandoffCore

/// The pairing notifications (issue 25: pairing without a terminal), and what to ask
/// handoffd next. Pure, like `NotificationBook`: the agent feeds it handoffd's events
/// and the server's replies and signals, and carries out the commands it returns.
///
/// - A device that opened pairing (`pairable`, told only while pairing is open here too):
///   "X can be paired" with Pair, until pairing closes here. At most `maximumPairable` at
///   once (anyone on the link can send pairing beacons).
/// - A dialog's code (`pairingCode`, either side): "Pair with X? Code 123 456" with
///   Pair / Reject, one per dialog, so several requests are shown separately.
/// - Its end: "Paired with X", or why not.
public struct PairingBook: Sendable {
    public enum Command: Equatable, Sendable {
        case notify(key: String, notice: Notice, replaces: UInt32)
        case close(UInt32)
        /// Start pairing with a device that opened pairing (`pair` with its device id).
        case pair(peer: String, name: String)
        case confirm(session: Int64, accept: Bool)
    }

    public static let pairKey = "pair"
    public static let rejectKey = "reject"
    static let maximumPairable = 3
    static let maximumDialogs = 8

    enum Kind: Equatable, Sendable {
        case pairable(peer: String, name: String)
        /// `answered`: Pair or Reject was chosen here; later actions are ignored (exactly once).
        case code(session: Int64, peer: String, name: String, code: String, answered: Bool)
        case outcome
    }

    struct Entry: Sendable {
        var kind: Kind
        var id: UInt32?
        var awaitingReply = true
        /// Closed by us or the server before its id came: close it when the id comes.
        var closeWhenNotified = false
    }

    /// By key: "pairable:PEER", "session:N", "outcome:PEER".
    var entries: [String: Entry] = [:]
    /// Body markup: a device's name is escaped where the server reads markup.
    public var markup = false

    public init() {}

    /// A device opened pairing and can be paired now.
    public mutating func pairable(peer: String, name: String) -> [Command] {
        let key = "pairable:" + peer
        guard entries[key] == nil, entries.values.contains(where: { if case .code(_, peer, _, _, _) = $0.kind { true } else { false } }) == false,
              entries.keys.filter({ $0.hasPrefix("pairable:") }).count < Self.maximumPairable else { return [] }
        entries[key] = Entry(kind: .pairable(peer: peer, name: name))
        return [.notify(key: key, notice: Notice(pairable: name, peer: peer, markup: markup), replaces: 0)]
    }

    /// A dialog's code is known: shown once per dialog, replacing the device's "can be paired".
    public mutating func code(session: Int64, peer: String, name: String, code: String) -> [Command] {
        let key = "session:\(session)"
        guard entries[key] == nil, entries.keys.filter({ $0.hasPrefix("session:") }).count < Self.maximumDialogs else { return [] }
        var commands = remove("pairable:" + peer)
        entries[key] = Entry(kind: .code(session: session, peer: peer, name: name, code: code, answered: false))
        commands.append(.notify(key: key, notice: Notice(pairingCode: code, name: name, peer: peer, markup: markup), replaces: 0))
        return commands
    }

    /// Paired (`paired`): its dialogs' notifications give way to one that says so.
    public mutating func paired(peer: String, name: String) -> [Command] {
        var commands: [Command] = []
        for (key, entry) in entries {
            if case .code(_, peer, _, _, _) = entry.kind { commands += remove(key) }
        }
        commands += remove("pairable:" + peer)
        commands += show(outcome: Notice(paired: name, peer: peer, markup: markup), key: "outcome:" + peer)
        return commands
    }

    /// Pairing closed on this host (`pairingClosed`): no "can be paired" is left to click.
    public mutating func pairingClosed() -> [Command] {
        entries.keys.filter { $0.hasPrefix("pairable:") }.sorted().flatMap { remove($0) }
    }

    /// This host stopped trusting the device (`untrust`, here or from another program).
    public mutating func unpaired(peer: String, name: String) -> [Command] {
        show(outcome: Notice(unpaired: name, peer: peer, markup: markup), key: "outcome:" + peer)
    }

    /// A dialog ended without pairing: its notification says why.
    public mutating func ended(session: Int64, peer: String, name: String, error: HandoffError) -> [Command] {
        guard entries["session:\(session)"] != nil else { return [] }
        return remove("session:\(session)") + show(outcome: Notice(notPaired: name, error: error, markup: markup), key: "outcome:" + peer)
    }

    /// Pairing with `peer` could not start (the `pair` request failed).
    public mutating func pairingFailed(peer: String, name: String, error: HandoffError) -> [Command] {
        remove("pairable:" + peer) + show(outcome: Notice(notPaired: name, error: error, markup: markup), key: "outcome:" + peer)
    }

    public mutating func notified(key: String, id: UInt32) -> [Command] {
        guard var entry = entries[key] else { return [.close(id)] }
        if entry.closeWhenNotified {
            entries[key] = nil
            return [.close(id)]
        }
        entry.id = id
        entry.awaitingReply = false
        entries[key] = entry
        return []
    }

    public mutating func notifyFailed(key: String) {
        entries[key] = nil
    }

    /// Whether `id` is one of these notifications.
    public func owns(id: UInt32) -> Bool { entries.values.contains { $0.id == id } }

    /// ActionInvoked: Pair on a pairable device starts pairing; Pair or Reject on a code answers once.
    public mutating func actionInvoked(id: UInt32, key action: String) -> [Command] {
        guard let (key, entry) = entries.first(where: { $0.value.id == id }) else { return [] }
        switch entry.kind {
        case let .pairable(peer, name):
            guard action == Self.pairKey else { return [] }
            // Its code notification replaces this one when the dialog has one.
            return remove(key) + [.pair(peer: peer, name: name)]
        case let .code(session, peer, name, code, answered):
            guard !answered, action == Self.pairKey || action == Self.rejectKey else { return [] }
            entries[key]?.kind = .code(session: session, peer: peer, name: name, code: code, answered: true)
            return [.confirm(session: session, accept: action == Self.pairKey)]
        case .outcome:
            return []
        }
    }

    /// NotificationClosed: dismissed or expired. A dismissed code is not an answer: the dialog
    /// still waits (the terminal may answer it) and times out on its own.
    public mutating func closed(id: UInt32) {
        guard let (key, entry) = entries.first(where: { $0.value.id == id }) else { return }
        if case .code(_, _, _, _, true) = entry.kind { return }  // answered: its outcome replaces it
        entries[key] = nil
    }

    /// Every notification on screen, to close when the agent stops.
    public var shownIDs: [UInt32] { entries.values.compactMap(\.id) }

    private mutating func remove(_ key: String) -> [Command] {
        guard let entry = entries[key] else { return [] }
        if let id = entry.id {
            entries[key] = nil
            return [.close(id)]
        }
        entries[key]?.closeWhenNotified = true
        return []
    }

    private mutating func show(outcome notice: Notice, key: String) -> [Command] {
        let replaces = entries[key]?.id ?? 0
        entries[key] = Entry(kind: .outcome)
        return [.notify(key: key, notice: notice, replaces: replaces)]
    }
}

extension Notice {
    /// A device's name (not authenticated: anyone can claim one) as the body shows it.
    private static func bodyText(_ text: String, markup: Bool) -> String {
        markup ? escape(clean(text)) : clean(text)
    }

    /// "X can be paired": a device near this one opened pairing.
    public init(pairable name: String, peer: String, markup: Bool) {
        summary = "\(Self.clean(name)) can be paired"
        body = Self.bodyText("\(name) (\(peer)) opened pairing. Choose Pair to compare codes with it.", markup: markup)
        actions = [PairingBook.pairKey, "Pair…"]
        expireMillis = 60_000  // a pairing window lasts minutes; a stale offer to pair should not stay
    }

    /// The code of one pairing dialog, to compare with the other laptop's screen.
    public init(pairingCode code: String, name: String, peer: String, markup: Bool) {
        let shown = String(code.prefix(3)) + " " + String(code.dropFirst(3))
        summary = "Pair with \(Self.clean(name))? Code \(shown)"
        body = Self.bodyText("Pair only if \(name) (\(peer)) shows the same code: \(shown).", markup: markup)
        actions = [PairingBook.pairKey, "Pair", PairingBook.rejectKey, "Reject"]
    }

    public init(paired name: String, peer: String, markup: Bool) {
        summary = "Paired with \(Self.clean(name))"
        body = Self.bodyText("\(name) (\(peer)) and this laptop can now continue each other's activities.", markup: markup)
        actions = []
        expireMillis = 5_000
    }

    public init(unpaired name: String, peer: String, markup: Bool) {
        summary = "No longer paired with \(Self.clean(name))"
        body = Self.bodyText("This laptop no longer trusts \(name) (\(peer)): neither can continue the other's activities until you pair again.", markup: markup)
        actions = []
        expireMillis = 5_000
    }

    public init(notPaired name: String, error: HandoffError, markup: Bool) {
        summary = "Not paired with \(Self.clean(name))"
        body = Self.bodyText(error.message + (error.fix.isEmpty ? "" : "\n" + error.fix), markup: markup)
        actions = []
        expireMillis = 10_000
    }
}
