import HandoffCore
import HandoffDBus

/// org.freedesktop.Notifications, the Desktop Notifications Specification 1.2.
enum Notifications {
    static let name = "org.freedesktop.Notifications"
    static let path = "/org/freedesktop/Notifications"
    static let interface = "org.freedesktop.Notifications"
}

extension BusConnection {
    /// A method call to the notification server, its body written by `body`.
    func notificationsCall(_ member: String,
                           _ body: (inout MessageWriter) throws(BusError) -> Void = { _ throws(BusError) in }) throws(BusError) -> OutgoingMessage {
        try methodCall(Notifications.name, Notifications.path, Notifications.interface, member, body)
    }
}

extension BusValue {
    var uint32: UInt32? { if case let .uint32(value) = unwrapped { value } else { nil } }
}
