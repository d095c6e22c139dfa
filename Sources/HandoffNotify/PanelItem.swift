import CSystemd
import Glibc
import HandoffDBus
import HandoffTransport
import HandoffRuntime

/// The panel item on the session bus: org.kde.StatusNotifierItem at
/// /StatusNotifierItem with its com.canonical.dbusmenu menu at /MenuBar,
/// registered with the panel's org.kde.StatusNotifierWatcher (KDE, Xfce,
/// Cinnamon, Budgie, GNOME with the AppIndicator extension). It draws what the
/// agent's `PanelMenu` holds and hands clicks back. While shown it holds the
/// name org.kde.StatusNotifierItem-PID-N; releasing the name is how a watcher
/// learns the item is gone. Where no watcher runs, nothing is registered and
/// nothing else changes. Used on the agent's bus thread only.
final class PanelItem {
    static let itemPath = "/StatusNotifierItem"
    static let itemInterface = "org.kde.StatusNotifierItem"
    static let menuPath = "/MenuBar"
    static let menuInterface = "com.canonical.dbusmenu"
    static let watcherName = "org.kde.StatusNotifierWatcher"
    static let watcherPath = "/StatusNotifierWatcher"

    private let bus: BusConnection
    private let log: (String) -> Void
    private let menu: () -> PanelMenu
    private let clicked: (Int32) -> Void
    /// The name held while shown; nil while hidden or while it is being asked for.
    private var serviceName: String?
    /// Counts name requests, so a reply that arrives after a later show or hide is ignored.
    private var generation = 0
    private var wanted = false
    private var watcherOwner: String?
    /// When to ask the watcher again: a watcher that has just taken its name may not have
    /// exported its object yet (Debian's status-notifier-watcher answers UnknownObject then).
    private(set) var retryAtMillis: UInt64?
    private var retriesLeft = 0
    static let retryMillis: UInt64 = 500
    static let retries = 10

    init(bus: BusConnection, log: @escaping (String) -> Void, menu: @escaping () -> PanelMenu,
         clicked: @escaping (Int32) -> Void) throws(BusError) {
        self.bus = bus
        self.log = log
        self.menu = menu
        self.clicked = clicked
        try exportItem()
        try exportMenu()
        try bus.addMatch("type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='\(Self.watcherName)'") {
            [unowned self] _, _, _, values in
            guard values.count == 3, let owner = values[2].string else { return }
            watcherChanged(owner.isEmpty ? nil : owner)
        }
        let ask = try bus.methodCall("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetNameOwner") {
            (body: inout MessageWriter) throws(BusError) in try body.string(Self.watcherName)
        }
        try bus.callAsync(ask, timeoutMillis: 5_000) { [unowned self] result in
            if case let .success(values) = result, let owner = values.first?.string, watcherOwner == nil { watcherChanged(owner) }
        }
    }

    /// Puts the item on the panel: takes a fresh name, then registers it.
    func show() {
        guard !wanted else { return }
        wanted = true
        generation += 1
        let issued = generation
        let name = "org.kde.StatusNotifierItem-\(getpid())-\(issued)"
        busCall("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "RequestName", { (body: inout MessageWriter) throws(BusError) in
            try body.string(name)
            try body.uint32(4) // DBUS_NAME_FLAG_DO_NOT_QUEUE
        }) { [unowned self] result in
            guard case let .success(values) = result, values.first?.integer == 1 else {
                log("panel item: cannot take the name \(name): \(result)")
                return
            }
            guard issued == generation, wanted else { return release(name) }
            serviceName = name
            register()
        }
    }

    /// Takes the item off the panel: the watcher drops it when its name goes.
    func hide() {
        guard wanted else { return }
        wanted = false
        retryAtMillis = nil
        generation += 1
        if let name = serviceName { release(name) }
        serviceName = nil
    }

    /// The menu changed: hosts showing it fetch the new layout; the tooltip names the count.
    func changed(revision: UInt32) {
        emit(Self.menuPath, Self.menuInterface, "LayoutUpdated") { (body: inout MessageWriter) throws(BusError) in
            try body.uint32(revision)
            try body.int32(0)
        }
        emit(Self.itemPath, Self.itemInterface, "NewToolTip")
    }

    /// The agent's loop calls this when `retryAtMillis` has come.
    func tick(nowMillis: UInt64) {
        guard let at = retryAtMillis, nowMillis >= at else { return }
        retryAtMillis = nil
        register(retrying: true)
    }

    private func watcherChanged(_ owner: String?) {
        let previous = watcherOwner
        watcherOwner = owner
        retryAtMillis = nil
        // A panel that starts (or restarts) after the item knows nothing of it yet.
        if let owner, owner != previous, serviceName != nil { register() }
    }

    private func register(retrying: Bool = false) {
        guard let owner = watcherOwner, let name = serviceName else { return }
        if !retrying { retriesLeft = Self.retries }
        busCall(Self.watcherName, Self.watcherPath, Self.watcherName, "RegisterStatusNotifierItem", { (body: inout MessageWriter) throws(BusError) in
            try body.string(name)
        }) { [unowned self] result in
            guard case let .failure(error) = result else { return }
            // Not there yet (its object, or the name itself between owners): ask again shortly.
            let notYet: Set<String> = ["org.freedesktop.DBus.Error.UnknownObject", "org.freedesktop.DBus.Error.UnknownMethod",
                                       "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner"]
            if let code = error.name, notYet.contains(code), retriesLeft > 0, owner == watcherOwner, name == serviceName {
                retriesLeft -= 1
                retryAtMillis = monotonicMillis() + Self.retryMillis
                return
            }
            log("panel item: the panel refused it: \(error)")
        }
    }


    private func release(_ name: String) {
        busCall("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "ReleaseName", { (body: inout MessageWriter) throws(BusError) in
            try body.string(name)
        }) { _ in }
    }

    private func busCall(_ destination: String, _ path: String, _ interface: String, _ member: String,
                         _ body: (inout MessageWriter) throws(BusError) -> Void, reply: @escaping (Result<[BusValue], BusError>) -> Void) {
        do throws(BusError) {
            try bus.callAsync(try bus.methodCall(destination, path, interface, member, body), timeoutMillis: 5_000, reply: reply)
        } catch {
            log("panel item: \(error)")
        }
    }

    private func emit(_ path: String, _ interface: String, _ member: String,
                      _ body: (inout MessageWriter) throws(BusError) -> Void = { _ throws(BusError) in }) {
        do throws(BusError) {
            try bus.emitSignal(path: path, interface: interface, member: member, body)
        } catch {
            log("panel item: \(error)")
        }
    }

    // MARK: - org.kde.StatusNotifierItem

    private func exportItem() throws(BusError) {
        let callbacks = BusCallbacks(onMessage: { message in
            // ContextMenu, Activate, SecondaryActivate, Scroll: ItemIsMenu is true, so hosts show the menu.
            handoff_bus_reply_empty(message)
        }, onProperty: { [unowned self] property, reply in
            var writer = MessageWriter(message: reply)
            do throws(BusError) {
                try Self.writeItemProperty(property, menu: menu(), to: &writer)
            } catch {
                return -(error.errno == 0 ? EINVAL : error.errno)
            }
            return 1
        })
        try bus.export(path: Self.itemPath, interface: Self.itemInterface,
                       vtable: handoff_status_notifier_item_vtable(messageTrampoline, propertyTrampoline), callbacks: callbacks)
    }

    static func writeItemProperty(_ property: String, menu: PanelMenu, to writer: inout MessageWriter) throws(BusError) {
        switch property {
        case "Category": try writer.string("ApplicationStatus")
        case "Id": try writer.string("handoff")
        case "Title": try writer.string("Handoff")
        case "Status": try writer.string(menu.shown ? "Active" : "Passive")
        case "WindowId": try writer.int32(0)
        case "IconThemePath", "IconName", "OverlayIconName", "AttentionIconName", "AttentionMovieName": try writer.string("")
        case "IconPixmap": try writePixmaps(PanelIcon.pixmaps, to: &writer)
        case "OverlayIconPixmap", "AttentionIconPixmap": try writePixmaps([], to: &writer)
        case "ToolTip":
            try writer.container("r", "sa(iiay)ss") { (tip: inout MessageWriter) throws(BusError) in
                try tip.string("")
                try writePixmaps([], to: &tip)
                try tip.string("Handoff")
                try tip.string(menu.summary)
            }
        case "ItemIsMenu": try writer.bool(true)
        case "Menu": try writer.objectPath(menuPath)
        default: throw BusError(call: "property \(property)", errno: ENOENT)
        }
    }

    private static func writePixmaps(_ pixmaps: [PanelIcon.Pixmap], to writer: inout MessageWriter) throws(BusError) {
        try writer.container("a", "(iiay)") { (list: inout MessageWriter) throws(BusError) in
            for pixmap in pixmaps {
                try list.container("r", "iiay") { (entry: inout MessageWriter) throws(BusError) in
                    try entry.int32(pixmap.width)
                    try entry.int32(pixmap.height)
                    try entry.bytes(pixmap.argb)
                }
            }
        }
    }

    // MARK: - com.canonical.dbusmenu

    private func exportMenu() throws(BusError) {
        let callbacks = BusCallbacks(onMessage: { [unowned self] message in
            let member = sd_bus_message_get_member(message).map { String(cString: $0) } ?? ""
            do throws(BusError) {
                let arguments = try MessageReader.values(of: message)
                try answerMenu(member, arguments, call: message)
            } catch {
                bus.replyError(to: message, name: "org.freedesktop.DBus.Error.InvalidArgs", message: "\(error)")
            }
            return 1
        }, onProperty: { property, reply in
            var writer = MessageWriter(message: reply)
            do throws(BusError) {
                switch property {
                case "Version": try writer.uint32(3)
                case "TextDirection": try writer.string("ltr")
                case "Status": try writer.string("normal")
                case "IconThemePath": try writer.strings([])
                default: return -ENOENT
                }
            } catch {
                return -(error.errno == 0 ? EINVAL : error.errno)
            }
            return 1
        })
        try bus.export(path: Self.menuPath, interface: Self.menuInterface,
                       vtable: handoff_dbusmenu_vtable(messageTrampoline, propertyTrampoline), callbacks: callbacks)
    }

    private func answerMenu(_ member: String, _ arguments: [BusValue], call: OpaquePointer) throws(BusError) {
        let layout = MenuLayout(menu())
        switch member {
        case "GetLayout":
            guard arguments.count == 3, let parent = arguments[0].integer, let depth = arguments[1].integer else { throw invalid(member) }
            guard let node = layout.node(Int32(truncatingIfNeeded: parent)) else { return unknownItem(call, parent) }
            let names = Set(arguments[2].strings)
            try bus.reply(to: call) { (body: inout MessageWriter) throws(BusError) in
                try body.uint32(layout.revision)
                try Self.writeNode(node, children: depth == 0 ? [] : layout.children(of: node.id), names: names, to: &body)
            }
        case "GetGroupProperties":
            guard arguments.count == 2 else { throw invalid(member) }
            let ids = arguments[0].integers
            let names = Set(arguments[1].strings)
            try bus.reply(to: call) { (body: inout MessageWriter) throws(BusError) in
                try body.container("a", "(ia{sv})") { (list: inout MessageWriter) throws(BusError) in
                    for id in ids.isEmpty ? layout.allIDs : ids {
                        guard let node = layout.node(id) else { continue }
                        try list.container("r", "ia{sv}") { (entry: inout MessageWriter) throws(BusError) in
                            try entry.int32(node.id)
                            try Self.writeProperties(node, names: names, to: &entry)
                        }
                    }
                }
            }
        case "GetProperty":
            guard arguments.count == 2, let id = arguments[0].integer, let name = arguments[1].string else { throw invalid(member) }
            guard let node = layout.node(Int32(truncatingIfNeeded: id)), let value = node.properties.first(where: { $0.name == name }) else {
                return unknownItem(call, id)
            }
            try bus.reply(to: call) { (body: inout MessageWriter) throws(BusError) in try Self.writeVariant(value.value, to: &body) }
        case "Event":
            guard arguments.count == 4, let id = arguments[0].integer, let event = arguments[1].string else { throw invalid(member) }
            guard layout.node(Int32(truncatingIfNeeded: id)) != nil else { return unknownItem(call, id) }
            try bus.reply(to: call)
            if event == "clicked" { clicked(Int32(truncatingIfNeeded: id)) }
        case "EventGroup":
            guard arguments.count == 1, case let .array(events) = arguments[0].unwrapped else { throw invalid(member) }
            var unknown: [Int32] = []
            var clicks: [Int32] = []
            for case let .structure(fields) in events.prefix(64) where fields.count == 4 {
                guard let id = fields[0].integer.map({ Int32(truncatingIfNeeded: $0) }) else { continue }
                if layout.node(id) == nil { unknown.append(id) } else if fields[1].string == "clicked" { clicks.append(id) }
            }
            try bus.reply(to: call) { (body: inout MessageWriter) throws(BusError) in try body.int32s(unknown) }
            clicks.forEach(clicked)
        case "AboutToShow":
            try bus.reply(to: call) { (body: inout MessageWriter) throws(BusError) in try body.bool(false) }
        case "AboutToShowGroup":
            try bus.reply(to: call) { (body: inout MessageWriter) throws(BusError) in
                try body.int32s([])
                try body.int32s([])
            }
        default:
            throw invalid(member)
        }
    }

    private func invalid(_ member: String) -> BusError { BusError(call: "\(Self.menuInterface).\(member)", errno: EINVAL) }

    private func unknownItem(_ call: OpaquePointer, _ id: Int) {
        bus.replyError(to: call, name: "org.freedesktop.DBus.Error.InvalidArgs", message: "There is no menu item \(id).")
    }

    private static func writeNode(_ node: MenuLayout.Node, children: [MenuLayout.Node], names: Set<String>, to writer: inout MessageWriter) throws(BusError) {
        try writer.container("r", "ia{sv}av") { (entry: inout MessageWriter) throws(BusError) in
            try entry.int32(node.id)
            try writeProperties(node, names: names, to: &entry)
            try entry.container("a", "v") { (list: inout MessageWriter) throws(BusError) in
                for child in children {
                    try list.container("v", "(ia{sv}av)") { (variant: inout MessageWriter) throws(BusError) in
                        try writeNode(child, children: [], names: names, to: &variant)
                    }
                }
            }
        }
    }

    private static func writeProperties(_ node: MenuLayout.Node, names: Set<String>, to writer: inout MessageWriter) throws(BusError) {
        try writer.container("a", "{sv}") { (map: inout MessageWriter) throws(BusError) in
            for property in node.properties where names.isEmpty || names.contains(property.name) {
                try map.container("e", "sv") { (entry: inout MessageWriter) throws(BusError) in
                    try entry.string(property.name)
                    try writeVariant(property.value, to: &entry)
                }
            }
        }
    }

    private static func writeVariant(_ value: MenuLayout.Value, to writer: inout MessageWriter) throws(BusError) {
        switch value {
        case let .text(text): try writer.container("v", "s") { (inner: inout MessageWriter) throws(BusError) in try inner.string(text) }
        case let .flag(flag): try writer.container("v", "b") { (inner: inout MessageWriter) throws(BusError) in try inner.bool(flag) }
        }
    }
}

/// The dbusmenu tree of a `PanelMenu`: the root (id 0) and its rows, each with
/// only the properties that differ from dbusmenu's defaults.
struct MenuLayout {
    enum Value: Equatable {
        case text(String)
        case flag(Bool)
    }

    struct Node: Equatable {
        var id: Int32
        var properties: [(name: String, value: Value)]

        static func == (lhs: Node, rhs: Node) -> Bool {
            lhs.id == rhs.id && lhs.properties.map(\.name) == rhs.properties.map(\.name) && lhs.properties.map(\.value) == rhs.properties.map(\.value)
        }
    }

    let revision: UInt32
    let root: Node
    let rows: [Node]

    init(_ menu: PanelMenu) {
        revision = menu.revision
        root = Node(id: 0, properties: [("children-display", .text("submenu"))])
        rows = menu.rows.map { row in
            if row.separator { return Node(id: row.id, properties: [("type", .text("separator"))]) }
            var properties: [(name: String, value: Value)] = [("label", .text(row.label))]
            if !row.enabled { properties.append(("enabled", .flag(false))) }
            return Node(id: row.id, properties: properties)
        }
    }

    func node(_ id: Int32) -> Node? { id == 0 ? root : rows.first { $0.id == id } }

    func children(of id: Int32) -> [Node] { id == 0 ? rows : [] }

    var allIDs: [Int32] { [0] + rows.map(\.id) }
}

extension MessageWriter {
    /// An array of int32 (ai).
    mutating func int32s(_ values: [Int32]) throws(BusError) {
        try container("a", "i") { (array: inout MessageWriter) throws(BusError) in
            for value in values { try array.int32(value) }
        }
    }
}

extension BusValue {
    /// An array's integers (ai); empty for anything else.
    var integers: [Int32] {
        if case let .array(values) = unwrapped { values.compactMap { $0.integer.map { Int32(truncatingIfNeeded: $0) } } } else { [] }
    }
}
