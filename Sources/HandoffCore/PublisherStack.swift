/// Which activity is current when several publishers offer one: the browser's
/// tab, the documents publisher, HandoffKit apps, `handoff-peer publish`. One
/// rule (Docs/LOCAL-API.md, "Which activity is current"): the most recent user
/// action wins. A publish or becomeCurrent makes its publisher's activity
/// current; a publisher that resigns or invalidates hands back to the most
/// recent other publisher whose activity is still offered and unexpired, or to
/// none. Each publisher holds one activity; resigning or invalidating touches
/// only the caller's own. Pure: the daemon asks it and publishes what it says.
public struct PublisherStack<Item: Sendable>: Sendable {
    public struct Entry: Sendable {
        public var publisher: String
        public var item: Item
        /// False once resigned: kept for becomeCurrent, never current.
        public var offered: Bool
        /// Bumped by every publish and becomeCurrent: the daemon republishes when the current entry's changes.
        public var generation: UInt64
    }

    /// Bounded state: more publishers than this at once drop the least recent.
    public static var maximumPublishers: Int { 16 }
    public static var maximumNameBytes: Int { 64 }

    /// Least recent first; the current one is the last that is offered.
    public private(set) var entries: [Entry] = []
    private var nextGeneration: UInt64 = 1

    public init() {}

    public var current: Entry? { entries.last(where: \.offered) }

    public func entry(of publisher: String) -> Entry? { entries.first { $0.publisher == publisher } }

    /// Changes `publisher`'s item in place (the daemon writes a new sequence into its payload
    /// without copying it); false when the publisher has no entry.
    @discardableResult
    public mutating func update(_ publisher: String, _ body: (inout Item) -> Void) -> Bool {
        guard let index = entries.firstIndex(where: { $0.publisher == publisher }) else { return false }
        body(&entries[index].item)
        return true
    }

    /// `item` becomes `publisher`'s activity and the current one.
    public mutating func publish(_ item: Item, by publisher: String) {
        entries.removeAll { $0.publisher == publisher }
        entries.append(Entry(publisher: publisher, item: item, offered: true, generation: nextGeneration))
        nextGeneration += 1
        if entries.count > Self.maximumPublishers { entries.removeFirst(entries.count - Self.maximumPublishers) }
    }

    /// The publisher's activity, offered or resigned, becomes current again; nil when it has none.
    public mutating func becomeCurrent(_ publisher: String) -> Item? {
        guard let entry = entry(of: publisher) else { return nil }
        publish(entry.item, by: publisher)
        return entry.item
    }

    /// Stops offering the publisher's activity (kept for becomeCurrent). True when it was offered.
    @discardableResult
    public mutating func resign(_ publisher: String) -> Bool {
        guard let index = entries.firstIndex(where: { $0.publisher == publisher }), entries[index].offered else { return false }
        entries[index].offered = false
        return true
    }

    /// Ends the publisher's activity. True when it had one (offered or resigned).
    @discardableResult
    public mutating func invalidate(_ publisher: String) -> Bool {
        let before = entries.count
        entries.removeAll { $0.publisher == publisher }
        return entries.count != before
    }

    /// Stops offering every publisher's activity (this host offers nothing; each can come back).
    @discardableResult
    public mutating func resignAll() -> Bool {
        let had = entries.contains(where: \.offered)
        for index in entries.indices { entries[index].offered = false }
        return had
    }

    /// Ends every publisher's activity.
    @discardableResult
    public mutating func invalidateAll() -> Bool {
        defer { entries.removeAll() }
        return !entries.isEmpty
    }

    /// Drops the activities `isGone` says have ended (expired), wherever they are; returns them.
    public mutating func removeAll(where isGone: (Item) -> Bool) -> [Entry] {
        let gone = entries.filter { isGone($0.item) }
        entries.removeAll { isGone($0.item) }
        return gone
    }


    /// A publisher name as a request gives it: 1 to 64 bytes of printable ASCII.
    public static func validName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        return !bytes.isEmpty && bytes.count <= maximumNameBytes && bytes.allSatisfy { (0x21...0x7E).contains($0) }
    }
}
