import CSystemd
import Glibc

/// A failed sd-bus call: the negative errno sd-bus returned and the call's
/// name, or the D-Bus error the peer replied with.
public struct BusError: Error, CustomStringConvertible, Sendable {
    var call: String
    var errno: Int32 = 0
    var name: String?
    var message: String?

    public var description: String {
        if let name { return "\(call): \(name)\(message.map { ": \($0)" } ?? "")" }
        return "\(call): \(String(cString: strerror(errno)))"
    }
}

/// The values of a message body this agent reads: the notification
/// interface uses strings, unsigned ints and arrays of strings only.
enum BusValue: Equatable {
    case string(String)
    case uint32(UInt32)
    case other
    case array([BusValue])

    var string: String? { if case let .string(value) = self { value } else { nil } }
    var uint32: UInt32? { if case let .uint32(value) = self { value } else { nil } }
    var strings: [String] { if case let .array(values) = self { values.compactMap(\.string) } else { [] } }
}

/// One connection to the user's session bus (sd_bus_open_user: $DBUS_SESSION_BUS_ADDRESS,
/// else $XDG_RUNTIME_DIR/bus). sd-bus is not thread-safe: the connection is
/// created, used and closed on its owner's thread only (the agent's bus thread).
/// A smaller sibling of HandoffBlueZ's BusConnection, with the same shape:
/// one trampoline per C callback type and one destroy callback that releases each context.
final class SessionBus {
    let bus: OpaquePointer

    private init(bus: OpaquePointer) {
        self.bus = bus
    }

    static func openUser() throws(BusError) -> SessionBus {
        var bus: OpaquePointer?
        let result = sd_bus_open_user(&bus)
        guard result >= 0, let bus else { throw BusError(call: "sd_bus_open_user", errno: -result) }
        return SessionBus(bus: bus)
    }

    deinit {
        // Flushes queued messages (a last CloseNotification), closes the socket and frees
        // every slot, whose destroy callbacks release their handlers.
        sd_bus_flush_close_unref(bus)
    }

    var fileDescriptor: Int32 { sd_bus_get_fd(bus) }
    var events: Int16 { Int16(truncatingIfNeeded: sd_bus_get_events(bus)) }

    /// Milliseconds until sd-bus needs to run again (a call timing out); nil for none.
    var timeoutMillis: Int? {
        var usec: UInt64 = 0
        guard sd_bus_get_timeout(bus, &usec) > 0, usec != UInt64.max else { return nil }
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let nowUsec = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
        return usec <= nowUsec ? 0 : Int(min((usec - nowUsec + 999) / 1000, 60_000))
    }

    /// Dispatches one pending message; true if there may be more.
    func process() throws(BusError) -> Bool {
        let result = sd_bus_process(bus, nil)
        guard result >= 0 else { throw BusError(call: "sd_bus_process", errno: -result) }
        return result > 0
    }

    /// A method call, its body written by `body`; to the notification server unless said otherwise.
    func methodCall(_ member: String, destination: String = Notifications.name, path: String = Notifications.path,
                    interface: String = Notifications.interface,
                    _ body: (inout MessageWriter) throws(BusError) -> Void = { _ throws(BusError) in }) throws(BusError) -> OutgoingMessage {
        var message: OpaquePointer?
        let result = sd_bus_message_new_method_call(bus, &message, destination, path, interface, member)
        guard result >= 0, let message else { throw BusError(call: "new call \(member)", errno: -result) }
        let outgoing = OutgoingMessage(message, member: member)
        var writer = MessageWriter(message: message)
        try body(&writer)
        return outgoing
    }

    /// Sends `call`; `reply` runs on the owner thread with the reply's values or the error. Never blocks.
    func callAsync(_ call: OutgoingMessage, timeoutMillis: UInt64 = 5_000,
                   reply: @escaping (Result<[BusValue], BusError>) -> Void) throws(BusError) {
        let name = call.member
        let handler = BusHandler { message in
            reply(Self.decodeReply(message, call: name))
        }
        var slot: OpaquePointer?
        let context = Unmanaged.passRetained(handler).toOpaque()
        let result = sd_bus_call_async(bus, &slot, call.message, sessionMessageTrampoline, context, timeoutMillis * 1000)
        guard result >= 0, let slot else {
            Unmanaged<BusHandler>.fromOpaque(context).release()
            throw BusError(call: name, errno: -result)
        }
        adopt(slot)
    }

    /// Sends `call` and waits for the reply: only before the loop runs and when the server changed.
    func callBlocking(_ call: OutgoingMessage, timeoutMillis: UInt64) throws(BusError) -> [BusValue] {
        var error = sd_bus_error()
        var reply: OpaquePointer?
        let result = sd_bus_call(bus, call.message, timeoutMillis * 1000, &error, &reply)
        defer {
            sd_bus_error_free(&error)
            if let reply { sd_bus_message_unref(reply) }
        }
        guard result >= 0, let reply else {
            throw BusError(call: call.member, errno: -result,
                           name: error.name.map { String(cString: $0) }, message: error.message.map { String(cString: $0) })
        }
        return try MessageReader.values(of: reply)
    }

    static func decodeReply(_ message: OpaquePointer, call: String) -> Result<[BusValue], BusError> {
        if sd_bus_message_is_method_error(message, nil) > 0 {
            let error = sd_bus_message_get_error(message)
            return .failure(BusError(call: call, errno: sd_bus_message_get_errno(message),
                                     name: error?.pointee.name.map { String(cString: $0) },
                                     message: error?.pointee.message.map { String(cString: $0) }))
        }
        do throws(BusError) {
            return .success(try MessageReader.values(of: message))
        } catch {
            return .failure(error)
        }
    }

    /// Calls `handler` with the sender and values of each signal matching `rule`, for the connection's life.
    func addMatch(_ rule: String, handler: @escaping (_ member: String, _ sender: String, _ values: [BusValue]) -> Void) throws(BusError) {
        let callbacks = BusHandler { message in
            let member = sd_bus_message_get_member(message).map { String(cString: $0) } ?? ""
            let sender = sd_bus_message_get_sender(message).map { String(cString: $0) } ?? ""
            // A signal that does not parse is dropped: any client on the bus can send signals.
            guard let values = try? MessageReader.values(of: message) else { return }
            handler(member, sender, values)
        }
        var slot: OpaquePointer?
        let context = Unmanaged.passRetained(callbacks).toOpaque()
        let result = sd_bus_add_match(bus, &slot, rule, sessionMessageTrampoline, context)
        guard result >= 0, let slot else {
            Unmanaged<BusHandler>.fromOpaque(context).release()
            throw BusError(call: "sd_bus_add_match \(rule)", errno: -result)
        }
        adopt(slot)
    }

    /// The slot belongs to the bus from now on; its destroy callback releases the handler
    /// when the call is answered, or when the connection is closed.
    private func adopt(_ slot: OpaquePointer) {
        sd_bus_slot_set_destroy_callback(slot, sessionDestroyTrampoline)
        sd_bus_slot_set_floating(slot, 1)
        sd_bus_slot_unref(slot)
    }
}

/// org.freedesktop.Notifications, the Desktop Notifications Specification 1.2.
enum Notifications {
    static let name = "org.freedesktop.Notifications"
    static let path = "/org/freedesktop/Notifications"
    static let interface = "org.freedesktop.Notifications"
}

/// A method call being built; unreferenced once sent or dropped.
final class OutgoingMessage {
    let message: OpaquePointer
    let member: String

    init(_ message: OpaquePointer, member: String) {
        self.message = message
        self.member = member
    }

    deinit { sd_bus_message_unref(message) }
}

/// What a C callback reaches: the closure of one reply or signal match. Retained
/// while its slot lives; the slot's destroy callback releases it (the one place).
final class BusHandler {
    let onMessage: (OpaquePointer) -> Void

    init(onMessage: @escaping (OpaquePointer) -> Void) {
        self.onMessage = onMessage
    }
}

// MARK: - C trampolines: recover the handler, never throw.

private let sessionMessageTrampoline: sd_bus_message_handler_t = { message, userdata, _ in
    guard let message, let userdata else { return 0 }
    Unmanaged<BusHandler>.fromOpaque(userdata).takeUnretainedValue().onMessage(message)
    return 0
}

private let sessionDestroyTrampoline: sd_bus_destroy_t = { userdata in
    guard let userdata else { return }
    Unmanaged<BusHandler>.fromOpaque(userdata).release()
}

// MARK: - Message bodies

/// Appends values to a message. Each call names the D-Bus type it writes.
struct MessageWriter {
    let message: OpaquePointer

    private func check(_ result: Int32, _ what: String) throws(BusError) {
        guard result >= 0 else { throw BusError(call: "append \(what)", errno: -result) }
    }

    mutating func string(_ text: String) throws(BusError) {
        try check(text.withCString { sd_bus_message_append_basic(message, CChar(UInt8(ascii: "s")), $0) }, "s")
    }

    mutating func uint32(_ value: UInt32) throws(BusError) {
        var value = value
        try check(sd_bus_message_append_basic(message, CChar(UInt8(ascii: "u")), &value), "u")
    }

    mutating func int32(_ value: Int32) throws(BusError) {
        var value = value
        try check(sd_bus_message_append_basic(message, CChar(UInt8(ascii: "i")), &value), "i")
    }

    mutating func byte(_ value: UInt8) throws(BusError) {
        var value = value
        try check(sd_bus_message_append_basic(message, CChar(UInt8(ascii: "y")), &value), "y")
    }

    /// Writes a container ("a", "e", "v" or "r") holding `contents`, filled by `body`.
    mutating func container(_ type: Character, _ contents: String, _ body: (inout MessageWriter) throws(BusError) -> Void) throws(BusError) {
        try check(sd_bus_message_open_container(message, CChar(type.asciiValue!), contents), "open \(type)\(contents)")
        try body(&self)
        try check(sd_bus_message_close_container(message), "close \(type)\(contents)")
    }

    mutating func strings(_ values: [String]) throws(BusError) {
        try container("a", "s") { (array: inout MessageWriter) throws(BusError) in
            for value in values { try array.string(value) }
        }
    }
}

/// Reads a message body into values, within a budget (any client on the
/// session bus can send a signal), skipping what this agent does not read.
struct MessageReader {
    let message: OpaquePointer
    static let maximumDepth = 8
    static let maximumValues = 4_096
    private var budget = MessageReader.maximumValues

    static func values(of message: OpaquePointer) throws(BusError) -> [BusValue] {
        var reader = MessageReader(message: message)
        var values: [BusValue] = []
        while let value = try reader.next(depth: 0) { values.append(value) }
        return values
    }

    private init(message: OpaquePointer) {
        self.message = message
    }

    private func fail(_ what: String, _ result: Int32) -> BusError {
        BusError(call: "read \(what)", errno: result < 0 ? -result : EBADMSG)
    }

    /// The next value in the current container; nil at its end.
    private mutating func next(depth: Int) throws(BusError) -> BusValue? {
        var type: CChar = 0
        var contents: UnsafePointer<CChar>?
        let peeked = sd_bus_message_peek_type(message, &type, &contents)
        guard peeked >= 0 else { throw fail("type", peeked) }
        if peeked == 0 { return nil }
        budget -= 1
        guard budget >= 0, depth <= Self.maximumDepth else { throw BusError(call: "read", errno: E2BIG) }
        switch UInt8(bitPattern: type) {
        case UInt8(ascii: "u"):
            var value: UInt32 = 0
            let result = sd_bus_message_read_basic(message, type, &value)
            guard result > 0 else { throw fail("u", result) }
            return .uint32(value)
        case UInt8(ascii: "s"), UInt8(ascii: "o"):
            var pointer: UnsafePointer<CChar>?
            let result = sd_bus_message_read_basic(message, type, &pointer)
            guard result > 0 else { throw fail("s", result) }
            return .string(pointer.map { String(cString: $0) } ?? "")
        case UInt8(ascii: "a") where contents.map({ strcmp($0, "s") == 0 }) ?? false:
            let entered = sd_bus_message_enter_container(message, type, contents)
            guard entered > 0 else { throw fail("as", entered) }
            var values: [BusValue] = []
            while let value = try next(depth: depth + 1) { values.append(value) }
            let exited = sd_bus_message_exit_container(message)
            guard exited >= 0 else { throw fail("as end", exited) }
            return .array(values)
        default:
            let result = sd_bus_message_skip(message, nil)
            guard result >= 0 else { throw fail("skip", result) }
            return .other
        }
    }
}
