import HandoffCore

/// What the panel item shows: one menu entry per paired device's offer, in the
/// order of their device names. Pure: the agent feeds it the offers `list`
/// shows, the menu's clicks and the accepts' outcomes, and carries out the
/// commands it returns. The item is on the panel only while something is
/// offered (and the panel is not switched off); a click continues an offer
/// once, however often the host repeats it, and an offer continued (here or
/// from its notification) leaves the menu, as its notification does.
public struct PanelMenu: Sendable {
    public enum Command: Equatable, Sendable {
        /// Put the item on the panel (take its bus name, register with the watcher).
        case show
        /// Take it off (release the name: the watcher drops the item).
        case hide
        /// The menu changed: tell hosts its new revision (LayoutUpdated).
        case layoutChanged(revision: UInt32)
        case accept(OfferNotice)
    }

    /// One menu row as dbusmenu describes it.
    public struct Row: Equatable, Sendable {
        public var id: Int32
        public var label: String
        public var enabled: Bool
        public var separator = false
    }

    struct Entry: Equatable, Sendable {
        /// The row's id: new for every offer, so a click on a menu drawn before a newer offer
        /// arrived never continues the newer one unseen.
        var id: Int32
        var offer: OfferNotice
        var continuing = false
        /// Why the last Continue failed, until the next one.
        var failure: String?
    }

    /// The header and separator rows' ids; offers' rows take even ids from 4, their failure lines the odd one after.
    static let headerID: Int32 = 1
    static let separatorID: Int32 = 3
    static let firstEntryID: Int32 = 4
    /// Menus are for people: a host shows a screenful, and titles are long.
    static let maximumEntries = 12
    static let maximumTitle = 60
    /// Paired devices are few; this only bounds a pathological run.
    static let maximumRemembered = 256

    var entries: [Entry] = []
    /// Each listed device's offer sequence, from the last listing.
    var listed: [String: Int64] = [:]
    /// The offer sequence last continued per device: not listed again.
    var continued: [String: Int64] = [:]
    var nextID: Int32 = Self.firstEntryID
    public private(set) var revision: UInt32 = 1
    public private(set) var shown = false
    public var enabled: Bool

    public init(enabled: Bool = true) {
        self.enabled = enabled
    }

    /// What `list` shows now.
    public mutating func update(offers: [OfferNotice]) -> [Command] {
        let wanted = offers.filter { continued[$0.peer] != $0.sequence }.sorted { ($0.name, $0.peer) < ($1.name, $1.peer) }
            .prefix(Self.maximumEntries)
        listed = Dictionary(wanted.map { ($0.peer, $0.sequence) }, uniquingKeysWith: { first, _ in first })
        var next: [Entry] = []
        for offer in wanted {
            if var current = entries.first(where: { $0.offer.peer == offer.peer }), current.offer.sequence == offer.sequence {
                current.offer = offer // its time left changes
                next.append(current)
            } else {
                next.append(Entry(id: takeID(), offer: offer))
            }
        }
        // An accept still running keeps its row (greyed): its outcome comes later.
        for entry in entries where entry.continuing && !next.contains(where: { $0.offer.peer == entry.offer.peer }) {
            next.append(entry)
        }
        return replace(with: next)
    }

    /// dbusmenu's Event "clicked" on row `id`.
    public mutating func clicked(id: Int32) -> [Command] {
        guard let index = entries.firstIndex(where: { $0.id == id }), !entries[index].continuing,
              !entries[index].offer.continuesInTerminal else { return [] }
        var next = entries
        next[index].continuing = true
        next[index].failure = nil
        let offer = next[index].offer
        return replace(with: next) + [.accept(offer)]
    }

    /// The notification's Continue started an accept of `offer`: its row waits for the outcome too.
    public mutating func acceptStarted(_ offer: OfferNotice) -> [Command] {
        guard let index = entries.firstIndex(where: { $0.offer.peer == offer.peer && $0.offer.sequence == offer.sequence }),
              !entries[index].continuing else { return [] }
        var next = entries
        next[index].continuing = true
        next[index].failure = nil
        return replace(with: next)
    }

    /// The accept of `peer`'s offer ended: continued, its row goes; a failure is shown below it.
    public mutating func acceptFinished(peer: String, error: HandoffError?) -> [Command] {
        guard let index = entries.firstIndex(where: { $0.offer.peer == peer && $0.continuing }) else { return [] }
        var next = entries
        if error == nil {
            if continued[peer] == nil, continued.count >= Self.maximumRemembered { continued.removeAll() }
            continued[peer] = next[index].offer.sequence
        }
        guard error != nil, listed[peer] == next[index].offer.sequence else {
            next.remove(at: index) // continued, or withdrawn or replaced while it ran
            return replace(with: next)
        }
        next[index].continuing = false
        next[index].failure = error.map { Self.shortened("Not continued: \($0.code.rawValue). \(Notice.clean($0.message))", to: 90) }
        return replace(with: next)
    }

    /// Switched on or off (the setting): on with offers shows the item, off hides it.
    public mutating func setEnabled(_ on: Bool) -> [Command] {
        enabled = on
        return replace(with: entries)
    }

    /// The rows under the root, as hosts draw them.
    public var rows: [Row] {
        guard !entries.isEmpty else { return [] }
        var rows = [Row(id: Self.headerID, label: "Continue here from a nearby laptop", enabled: false)]
        rows.append(Row(id: Self.separatorID, label: "", enabled: true, separator: true))
        for entry in entries {
            rows.append(Row(id: entry.id, label: Self.label(entry), enabled: !entry.continuing && !entry.offer.continuesInTerminal))
            if let failure = entry.failure {
                rows.append(Row(id: entry.id + 1, label: Self.mnemonicSafe(failure), enabled: false))
            }
        }
        return rows
    }

    /// The item's tooltip under its title "Handoff": how many offers, from whom.
    public var summary: String {
        switch entries.count {
        case 0: "Nothing offered nearby"
        case 1: "\(Notice.clean(entries[0].offer.name)) offers something to continue"
        default: "\(entries.count) nearby laptops offer something to continue"
        }
    }

    static func label(_ entry: Entry) -> String {
        let title = shortened(Notice.clean(entry.offer.title), to: maximumTitle)
        let name = Notice.clean(entry.offer.name)
        let target: String
        switch entry.offer.deliverTo {
        case "browser": target = "in the browser"
        case "terminal": target = "no app here opens it"
        default: target = "in \(Notice.clean(entry.offer.deliverTo))"
        }
        let text = entry.continuing ? "Continuing \u{201C}\(title)\u{201D} from \(name)\u{2026}"
                                    : "\u{201C}\(title)\u{201D} from \(name) (\(target))"
        return mnemonicSafe(text)
    }

    /// dbusmenu labels take "_" as the mnemonic marker: a title's own underscores are doubled.
    static func mnemonicSafe(_ text: String) -> String {
        text.replacing("_", with: "__")
    }

    static func shortened(_ text: String, to limit: Int) -> String {
        text.count <= limit ? text : String(text.prefix(limit - 1)) + "\u{2026}"
    }

    private mutating func takeID() -> Int32 {
        defer { nextID = nextID >= Int32.max - 4 ? Self.firstEntryID : nextID + 2 }
        return nextID
    }

    private mutating func replace(with next: [Entry]) -> [Command] {
        var commands: [Command] = []
        let visible = enabled && !next.isEmpty
        if next != entries {
            entries = next
            revision &+= 1
            commands.append(.layoutChanged(revision: revision))
        }
        if visible != shown {
            shown = visible
            commands.append(visible ? .show : .hide)
        }
        return commands
    }
}
