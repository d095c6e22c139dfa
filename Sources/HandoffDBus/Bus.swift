import CSystemd
import Glibc
import HandoffCore

/// A failed sd-bus call: the negative errno sd-bus returned and the call's
/// name, or the D-Bus error a peer replied with (name such as
/// org.bluez.Error.NotReady, and its message). Codes are kept, never parsed from text.
public struct BusError: Error, CustomStringConvertible, Sendable {
    public var call: String
    public var errno: Int32 = 0
    public var name: String?
    public var message: String?

    public init(call: String, errno: Int32 = 0, name: String? = nil, message: String? = nil) {
        self.call = call
        self.errno = errno
        self.name = name
        self.message = message
    }

    public var description: String {
        if let name { return "\(call): \(name)\(message.map { ": \($0)" } ?? "")" }
        return "\(call): \(String(cString: strerror(errno)))"
    }
}

/// One connection to the system bus (bluetoothd) or the user's session bus
/// (the notification server). Not Sendable, as sd-bus is not thread-safe: it
/// is created, used and closed on its owner's thread only.
public final class BusConnection {
    public let bus: OpaquePointer

    private init(bus: OpaquePointer) {
        self.bus = bus
    }

    public static func openSystem() throws(BusError) -> BusConnection {
        var bus: OpaquePointer?
        let result = sd_bus_open_system(&bus)
        guard result >= 0, let bus else { throw BusError(call: "sd_bus_open_system", errno: -result) }
        return BusConnection(bus: bus)
    }

    /// The user's session bus: $DBUS_SESSION_BUS_ADDRESS, else $XDG_RUNTIME_DIR/bus.
    public static func openUser() throws(BusError) -> BusConnection {
        var bus: OpaquePointer?
        let result = sd_bus_open_user(&bus)
        guard result >= 0, let bus else { throw BusError(call: "sd_bus_open_user", errno: -result) }
        return BusConnection(bus: bus)
    }

    deinit {
        // Flushes queued messages, closes the socket and frees every slot, whose
        // destroy callbacks release their retained handlers.
        sd_bus_flush_close_unref(bus)
    }

    public var fileDescriptor: Int32 { sd_bus_get_fd(bus) }
    public var events: Int16 { Int16(truncatingIfNeeded: sd_bus_get_events(bus)) }

    /// Milliseconds until sd-bus needs to run again (a call timing out); nil for none.
    public var timeoutMillis: Int? {
        var usec: UInt64 = 0
        guard sd_bus_get_timeout(bus, &usec) > 0, usec != UInt64.max else { return nil }
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let nowUsec = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
        return usec <= nowUsec ? 0 : Int(min((usec - nowUsec + 999) / 1000, 60_000))
    }

    /// Dispatches one pending message; true if there may be more.
    public func process() throws(BusError) -> Bool {
        let result = sd_bus_process(bus, nil)
        guard result >= 0 else { throw BusError(call: "sd_bus_process", errno: -result) }
        return result > 0
    }

    public func uniqueName() -> String? {
        var name: UnsafePointer<CChar>?
        guard sd_bus_get_unique_name(bus, &name) >= 0, let name else { return nil }
        return String(cString: name)
    }

    // MARK: - Calls

    public func methodCall(_ destination: String, _ path: String, _ interface: String, _ member: String,
                    _ body: (inout MessageWriter) throws(BusError) -> Void = { _ throws(BusError) in }) throws(BusError) -> OutgoingMessage {
        var message: OpaquePointer?
        let result = sd_bus_message_new_method_call(bus, &message, destination, path, interface, member)
        guard result >= 0, let message else { throw BusError(call: "new call \(interface).\(member)", errno: -result) }
        let outgoing = OutgoingMessage(message)
        var writer = MessageWriter(message: message)
        try body(&writer)
        return outgoing
    }

    /// Sends `call`; `reply` runs on this connection's owner (thread or loop) with the
    /// reply's values or the error. Never blocks.
    public func callAsync(_ call: OutgoingMessage, timeoutMillis: UInt64 = 10_000,
                   reply: @escaping (Result<[BusValue], BusError>) -> Void) throws(BusError) {
        let name = call.describe()
        let handler = BusCallbacks(onMessage: { message in
            reply(Self.decodeReply(message, call: name))
            return 0
        })
        var slot: OpaquePointer?
        let context = Unmanaged.passRetained(handler).toOpaque()
        let result = sd_bus_call_async(bus, &slot, call.message, messageTrampoline, context, timeoutMillis * 1000)
        guard result >= 0, let slot else {
            Unmanaged<BusCallbacks>.fromOpaque(context).release()
            throw BusError(call: name, errno: -result)
        }
        adopt(slot)
    }

    /// Sends `call` and waits for its reply: only for the short checks made
    /// before the loop runs (is bluetoothd there?) and for clean-up on stop.
    public func callBlocking(_ call: OutgoingMessage, timeoutMillis: UInt64) throws(BusError) -> [BusValue] {
        var error = sd_bus_error()
        var reply: OpaquePointer?
        let result = sd_bus_call(bus, call.message, timeoutMillis * 1000, &error, &reply)
        defer {
            sd_bus_error_free(&error)
            if let reply { sd_bus_message_unref(reply) }
        }
        guard result >= 0, let reply else {
            throw BusError(call: call.describe(), errno: -result,
                           name: error.name.map { String(cString: $0) }, message: error.message.map { String(cString: $0) })
        }
        return try MessageReader.values(of: reply)
    }

    public static func decodeReply(_ message: OpaquePointer, call: String) -> Result<[BusValue], BusError> {
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

    // MARK: - Signals

    /// Calls `handler` with each signal matching `rule` (D-Bus match rule syntax), for the connection's life.
    public func addMatch(_ rule: String, handler: @escaping (_ path: String, _ member: String, _ sender: String, _ values: [BusValue]) -> Void) throws(BusError) {
        let callbacks = BusCallbacks(onMessage: { message in
            let path = sd_bus_message_get_path(message).map { String(cString: $0) } ?? ""
            let member = sd_bus_message_get_member(message).map { String(cString: $0) } ?? ""
            let sender = sd_bus_message_get_sender(message).map { String(cString: $0) } ?? ""
            // A signal that does not parse is dropped: the bus is not trusted to be well-formed.
            guard let values = try? MessageReader.values(of: message) else { return 0 }
            handler(path, member, sender, values)
            return 0
        })
        var slot: OpaquePointer?
        let context = Unmanaged.passRetained(callbacks).toOpaque()
        let result = sd_bus_add_match(bus, &slot, rule, messageTrampoline, context)
        guard result >= 0, let slot else {
            Unmanaged<BusCallbacks>.fromOpaque(context).release()
            throw BusError(call: "sd_bus_add_match \(rule)", errno: -result)
        }
        adopt(slot)
    }

    // MARK: - Exported objects

    /// Exports `callbacks` at `path` as `interface` described by `vtable`, for the connection's life.
    public func export(path: String, interface: String, vtable: UnsafePointer<sd_bus_vtable>, callbacks: BusCallbacks) throws(BusError) {
        var slot: OpaquePointer?
        let context = Unmanaged.passRetained(callbacks).toOpaque()
        let result = sd_bus_add_object_vtable(bus, &slot, path, interface, vtable, context)
        guard result >= 0, let slot else {
            Unmanaged<BusCallbacks>.fromOpaque(context).release()
            throw BusError(call: "sd_bus_add_object_vtable \(path)", errno: -result)
        }
        adopt(slot)
    }

    /// Answers `call` (a method call to an exported object) with values written by `body`.
    public func reply(to call: OpaquePointer, _ body: (inout MessageWriter) throws(BusError) -> Void = { _ throws(BusError) in }) throws(BusError) {
        var message: OpaquePointer?
        let result = sd_bus_message_new_method_return(call, &message)
        guard result >= 0, let message else { throw BusError(call: "new method return", errno: -result) }
        defer { sd_bus_message_unref(message) }
        var writer = MessageWriter(message: message)
        try body(&writer)
        let sent = sd_bus_send(bus, message, nil)
        guard sent >= 0 else { throw BusError(call: "send method return", errno: -sent) }
    }

    /// Answers `call` with the D-Bus error `name` (such as org.freedesktop.DBus.Error.InvalidArgs).
    public func replyError(to call: OpaquePointer, name: String, message: String) {
        _ = handoff_bus_reply_error(call, name, message)
    }

    /// Emits a signal from an exported object.
    public func emitSignal(path: String, interface: String, member: String,
                           _ body: (inout MessageWriter) throws(BusError) -> Void = { _ throws(BusError) in }) throws(BusError) {
        var message: OpaquePointer?
        let result = sd_bus_message_new_signal(bus, &message, path, interface, member)
        guard result >= 0, let message else { throw BusError(call: "new signal \(interface).\(member)", errno: -result) }
        defer { sd_bus_message_unref(message) }
        var writer = MessageWriter(message: message)
        try body(&writer)
        let sent = sd_bus_send(bus, message, nil)
        guard sent >= 0 else { throw BusError(call: "send \(interface).\(member)", errno: -sent) }
    }

    /// Answers GetManagedObjects at `path` with the objects exported below it (BlueZ reads monitors this way).
    public func addObjectManager(path: String) throws(BusError) {
        var slot: OpaquePointer?
        let result = sd_bus_add_object_manager(bus, &slot, path)
        guard result >= 0, let slot else { throw BusError(call: "sd_bus_add_object_manager \(path)", errno: -result) }
        sd_bus_slot_set_floating(slot, 1)
        sd_bus_slot_unref(slot)
    }

    /// The slot belongs to the bus from now on; its destroy callback releases the handler
    /// when the call is answered, or when the connection is closed.
    private func adopt(_ slot: OpaquePointer) {
        sd_bus_slot_set_destroy_callback(slot, destroyTrampoline)
        sd_bus_slot_set_floating(slot, 1)
        sd_bus_slot_unref(slot)
    }
}

/// A method call being built; unreferenced once sent or dropped.
public final class OutgoingMessage {
    public let message: OpaquePointer

    public init(_ message: OpaquePointer) {
        self.message = message
    }

    deinit { sd_bus_message_unref(message) }

    public func describe() -> String {
        let interface = sd_bus_message_get_interface(message).map { String(cString: $0) } ?? "?"
        let member = sd_bus_message_get_member(message).map { String(cString: $0) } ?? "?"
        return "\(interface).\(member)"
    }
}

/// What a C callback reaches: the closures of one signal match, call reply or
/// exported object. Retained while its slot lives; the slot's destroy
/// callback releases it (the one place it is released).
public final class BusCallbacks {
    public let onMessage: ((OpaquePointer) -> Int32)?
    public let onProperty: ((_ property: String, _ reply: OpaquePointer) -> Int32)?

    public init(onMessage: ((OpaquePointer) -> Int32)? = nil, onProperty: ((String, OpaquePointer) -> Int32)? = nil) {
        self.onMessage = onMessage
        self.onProperty = onProperty
    }
}

// MARK: - C trampolines: recover the handler, copy C data into Swift values, never throw.

private func callbacks(_ userdata: UnsafeMutableRawPointer?) -> BusCallbacks? {
    userdata.map { Unmanaged<BusCallbacks>.fromOpaque($0).takeUnretainedValue() }
}

public let messageTrampoline: sd_bus_message_handler_t = { message, userdata, _ in
    guard let message, let handler = callbacks(userdata)?.onMessage else { return 0 }
    return handler(message)
}

public let propertyTrampoline: sd_bus_property_get_t = { _, _, _, property, reply, userdata, _ in
    guard let property, let reply, let handler = callbacks(userdata)?.onProperty else { return -EINVAL }
    return handler(String(cString: property), reply)
}

private let destroyTrampoline: sd_bus_destroy_t = { userdata in
    guard let userdata else { return }
    Unmanaged<BusCallbacks>.fromOpaque(userdata).release()
}

// MARK: - Message bodies

/// Appends values to a message. Each call names the D-Bus type it writes.
public struct MessageWriter {
    public let message: OpaquePointer

    public init(message: OpaquePointer) {
        self.message = message
    }

    private func check(_ result: Int32, _ what: String) throws(BusError) {
        guard result >= 0 else { throw BusError(call: "append \(what)", errno: -result) }
    }

    public mutating func string(_ text: String, type: Character = "s") throws(BusError) {
        let code = CChar(type.asciiValue!)
        try check(text.withCString { sd_bus_message_append_basic(message, code, $0) }, String(type))
    }

    public mutating func objectPath(_ path: String) throws(BusError) { try string(path, type: "o") }

    public mutating func byte(_ value: UInt8) throws(BusError) {
        var value = value
        try check(sd_bus_message_append_basic(message, CChar(UInt8(ascii: "y")), &value), "y")
    }

    public mutating func uint16(_ value: UInt16) throws(BusError) {
        var value = value
        try check(sd_bus_message_append_basic(message, CChar(UInt8(ascii: "q")), &value), "q")
    }

    public mutating func int16(_ value: Int16) throws(BusError) {
        var value = value
        try check(sd_bus_message_append_basic(message, CChar(UInt8(ascii: "n")), &value), "n")
    }

    public mutating func uint32(_ value: UInt32) throws(BusError) {
        var value = value
        try check(sd_bus_message_append_basic(message, CChar(UInt8(ascii: "u")), &value), "u")
    }

    public mutating func int32(_ value: Int32) throws(BusError) {
        var value = value
        try check(sd_bus_message_append_basic(message, CChar(UInt8(ascii: "i")), &value), "i")
    }

    public mutating func bool(_ value: Bool) throws(BusError) {
        var value: Int32 = value ? 1 : 0 // D-Bus booleans are 32 bits wide
        try check(sd_bus_message_append_basic(message, CChar(UInt8(ascii: "b")), &value), "b")
    }

    public mutating func bytes(_ bytes: [UInt8]) throws(BusError) {
        try check(bytes.withUnsafeBytes { sd_bus_message_append_array(message, CChar(UInt8(ascii: "y")), $0.baseAddress, $0.count) }, "ay")
    }

    /// Writes a container ("a", "e", "v" or "r") holding `contents`, filled by `body`.
    public mutating func container(_ type: Character, _ contents: String, _ body: (inout MessageWriter) throws(BusError) -> Void) throws(BusError) {
        try check(sd_bus_message_open_container(message, CChar(type.asciiValue!), contents), "open \(type)\(contents)")
        try body(&self)
        try check(sd_bus_message_close_container(message), "close \(type)\(contents)")
    }

    /// An array of strings (as).
    public mutating func strings(_ values: [String]) throws(BusError) {
        try container("a", "s") { (array: inout MessageWriter) throws(BusError) in
            for value in values { try array.string(value) }
        }
    }

    /// An a{sv} dictionary entry: key and a variant of `signature` filled by `body`.
    public mutating func option(_ key: String, _ signature: String, _ body: (inout MessageWriter) throws(BusError) -> Void) throws(BusError) {
        try container("e", "sv") { (entry: inout MessageWriter) throws(BusError) in
            try entry.string(key)
            try entry.container("v", signature, body)
        }
    }
}

/// Reads a whole message body into values, within a budget: bluetoothd
/// relays what strangers' radios send, and any client on the session bus can
/// send a signal, so depth and count are bounded.
public struct MessageReader {
    public let message: OpaquePointer
    public static let maximumDepth = 16
    public static let maximumValues = 20_000
    private var budget = MessageReader.maximumValues

    public init(message: OpaquePointer) {
        self.message = message
    }

    public static func values(of message: OpaquePointer) throws(BusError) -> [BusValue] {
        var reader = MessageReader(message: message)
        return try reader.readAll()
    }

    public mutating func readAll() throws(BusError) -> [BusValue] {
        var values: [BusValue] = []
        while let value = try next(depth: 0) { values.append(value) }
        return values
    }

    private func fail(_ what: String, _ result: Int32) -> BusError {
        BusError(call: "read \(what)", errno: result < 0 ? -result : EBADMSG)
    }

    private mutating func basic<T: BitwiseCopyable>(_ type: CChar, _ initial: T) throws(BusError) -> T {
        var value = initial
        let result = withUnsafeMutablePointer(to: &value) { sd_bus_message_read_basic(message, type, $0) }
        guard result > 0 else { throw fail(String(UnicodeScalar(UInt8(bitPattern: type))), result) }
        return value
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
        case UInt8(ascii: "y"): return .byte(try basic(type, UInt8(0)))
        case UInt8(ascii: "b"): return .bool(try basic(type, Int32(0)) != 0)
        case UInt8(ascii: "n"): return .int16(try basic(type, Int16(0)))
        case UInt8(ascii: "q"): return .uint16(try basic(type, UInt16(0)))
        case UInt8(ascii: "i"): return .int32(try basic(type, Int32(0)))
        case UInt8(ascii: "u"): return .uint32(try basic(type, UInt32(0)))
        case UInt8(ascii: "x"): return .int64(try basic(type, Int64(0)))
        case UInt8(ascii: "t"): return .uint64(try basic(type, UInt64(0)))
        case UInt8(ascii: "d"): return .double(try basic(type, Double(0)))
        case UInt8(ascii: "h"): return .int32(try basic(type, Int32(-1))) // a descriptor we never use; sd-bus keeps ownership
        case UInt8(ascii: "s"), UInt8(ascii: "o"), UInt8(ascii: "g"):
            let pointer: UnsafePointer<CChar>? = try basic(type, nil)
            return .string(pointer.map { String(cString: $0) } ?? "")
        case UInt8(ascii: "a"):
            guard let contents else { throw fail("array", -EBADMSG) }
            if strcmp(contents, "y") == 0 {
                var pointer: UnsafeRawPointer?
                var size = 0
                let result = sd_bus_message_read_array(message, CChar(UInt8(ascii: "y")), &pointer, &size) // the element type
                guard result >= 0 else { throw fail("ay", result) }
                return .bytes(size > 0 && pointer != nil ? Array(UnsafeRawBufferPointer(start: pointer, count: size)) : [])
            }
            return .array(try container(type, contents, depth: depth))
        case UInt8(ascii: "v"):
            guard let contents else { throw fail("variant", -EBADMSG) }
            let inner = try container(type, contents, depth: depth)
            guard inner.count == 1 else { throw fail("variant", -EBADMSG) }
            return .variant(inner[0])
        case UInt8(ascii: "r"):
            guard let contents else { throw fail("struct", -EBADMSG) }
            return .structure(try container(type, contents, depth: depth))
        case UInt8(ascii: "e"):
            guard let contents else { throw fail("entry", -EBADMSG) }
            let pair = try container(type, contents, depth: depth)
            guard pair.count == 2 else { throw fail("entry", -EBADMSG) }
            return .entry(pair[0], pair[1])
        default:
            let result = sd_bus_message_skip(message, nil)
            guard result >= 0 else { throw fail("skip", result) }
            return .structure([])
        }
    }

    private mutating func container(_ type: CChar, _ contents: UnsafePointer<CChar>, depth: Int) throws(BusError) -> [BusValue] {
        let entered = sd_bus_message_enter_container(message, type, contents)
        guard entered > 0 else { throw fail("container", entered) }
        var values: [BusValue] = []
        while let value = try next(depth: depth + 1) { values.append(value) }
        let exited = sd_bus_message_exit_container(message)
        guard exited >= 0 else { throw fail("container end", exited) }
        return values
    }
}
