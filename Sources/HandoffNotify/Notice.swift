import HandoffAPI
import HandoffCore

/// An offer as `list` shows it: only paired devices (the daemon's peer table
/// holds trusted keys only) and, with Bluetooth on, only near ones. The agent
/// shows nothing that `list` does not.
public struct OfferNotice: Equatable, Sendable {
    public var peer: String
    public var name: String
    public var type: String
    public var title: String
    public var sequence: Int64
    /// An app's name, "browser" or "terminal" (no app here declares the type).
    public var deliverTo: String
    /// How long the offer stays valid, by the sender's clock (so clock skew does not matter).
    public var remainingMillis: Int64
    /// The payload's digest (hex), so Continue fetches exactly the offer shown.
    public var digest: String?

    public init(peer: String, name: String, type: String, title: String, sequence: Int64, deliverTo: String, remainingMillis: Int64,
                digest: String? = nil) {
        self.digest = digest
        self.peer = peer
        self.name = name
        self.type = type
        self.title = title
        self.sequence = sequence
        self.deliverTo = deliverTo
        self.remainingMillis = remainingMillis
    }

    /// One entry of `list`; nil when it offers nothing or lacks a field.
    public init?(listEntry entry: PeerEntry) {
        guard let offer = entry.offer, let deliverTo = offer.deliverTo, let age = offer.ageMillis else { return nil }
        self.init(peer: entry.peer, name: entry.name, type: offer.type, title: offer.title, sequence: offer.sequence, deliverTo: deliverTo,
                  remainingMillis: offer.expiresAtMillis &- offer.timestampMillis &- age, digest: offer.digest)
    }

    public static func offers(inList peers: [PeerEntry]) -> [OfferNotice] {
        peers.compactMap(OfferNotice.init(listEntry:))
    }

    /// Nothing here continues it: `handoff-peer accept` would only print it.
    public var continuesInTerminal: Bool { deliverTo == "terminal" }
}

/// What the notification server said it can do (GetCapabilities), and who it is (GetServerInformation).
public struct ServerCapabilities: Equatable, Sendable {
    public var actions: Bool
    public var bodyMarkup: Bool
    /// It lists every action, the default one too, in a menu (dunst, mako): a separate Continue
    /// would be there twice. Others (GNOME Shell, Plasma) show the default action only as a click.
    public var listsDefaultAction: Bool

    public init(actions: Bool, bodyMarkup: Bool, listsDefaultAction: Bool = false) {
        self.actions = actions
        self.bodyMarkup = bodyMarkup
        self.listsDefaultAction = listsDefaultAction
    }

    public init(_ names: [String], serverName: String? = nil) {
        self.init(actions: names.contains("actions"), bodyMarkup: names.contains("body-markup"),
                  listsDefaultAction: serverName.map(Self.serversListingTheDefaultAction.contains) ?? false)
    }

    static let serversListingTheDefaultAction: Set<String> = ["dunst", "mako"]
}

/// The arguments of one org.freedesktop.Notifications.Notify call that
/// depend on the offer: the rest (app name, icon, timeout) is fixed.
public struct Notice: Equatable, Sendable {
    public var summary: String
    public var body: String
    /// Alternating action keys and labels, as Notify takes them.
    public var actions: [String]
    /// How long the server shows it (Notify's expire_timeout): -1, the server's own choice.
    public var expireMillis: Int32 = -1

    public static let appName = "Handoff"
    /// Action keys. "default" is what a click on the notification invokes.
    public static let continueKey = "continue"
    public static let declineKey = "decline"
    public static let defaultKey = "default"

    /// The offer of a paired device near this one: device, title, where it continues, Continue / Not now.
    public init(offer: OfferNotice, capabilities: ServerCapabilities) {
        let name = Self.clean(offer.name)
        let markup = capabilities.bodyMarkup
        let title = Self.text(Self.clean(offer.title), markup: markup)
        let target: String
        switch offer.deliverTo {
        case "browser": target = "Opens as a web page in the browser."
        case "terminal": target = "No app here opens it: run 'handoff-peer accept \(name)' in a terminal."
        default: target = "Continues in \(Self.clean(offer.deliverTo))."
        }
        summary = offer.continuesInTerminal ? "Offered by \(name)" : "Continue from \(name)"
        body = title + "\n" + (markup ? "<i>\(Self.escape(target))</i>" : target)
        // With no "actions", a click is all there is: it continues (when something here can).
        switch (capabilities.actions, offer.continuesInTerminal) {
        case (true, false) where capabilities.listsDefaultAction: actions = [Self.defaultKey, "Continue", Self.declineKey, "Not now"]
        case (true, false): actions = [Self.defaultKey, "Continue", Self.continueKey, "Continue", Self.declineKey, "Not now"]
        case (true, true): actions = [Self.declineKey, "Not now"]
        case (false, false): actions = [Self.defaultKey, "Continue"]
        case (false, true): actions = []
        }
    }

    /// A failed Continue: names the cause (one of the six conditions or another reason) and its fix.
    public init(failure error: HandoffError, from offer: OfferNotice, capabilities: ServerCapabilities) {
        let markup = capabilities.bodyMarkup
        summary = "Not continued from \(Self.clean(offer.name)): \(error.code.rawValue)"
        let message = Self.text(Self.clean(error.message), markup: markup)
        let fix = Self.text(Self.clean(error.fix), markup: markup)
        body = message + (fix.isEmpty ? "" : "\n" + (markup ? "<b>Fix:</b> " : "Fix: ") + fix)
        actions = []
    }

    /// Drops control and format characters a peer could use to garble the text.
    static func clean(_ text: String) -> String { NotificationMarkup.clean(text) }

    private static func text(_ text: String, markup: Bool) -> String {
        markup ? escape(text) : text
    }

    /// The body markup is a small XML subset: a title like "a < b & c" must stay text.
    static func escape(_ text: String) -> String { NotificationMarkup.escape(text) }
}
