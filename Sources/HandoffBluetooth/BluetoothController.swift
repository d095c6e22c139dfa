import FoundationEssentials
import Glibc
import HandoffCore
import HandoffTransport
import HandoffRuntime
import Synchronization

/// Drives one LE controller: sends a command, waits for its Command Complete
/// or Command Status, and hands advertising reports to a callback. Commands
/// are serialised by a lock (one in flight, as the HCI flow control of a
/// single command credit allows); a reader thread owns the receive side.
final class BluetoothController: Sendable {
    let transport: any HCITransport
    private let commandLock = Locked(())
    private let pending = Locked<Pending?>(nil)
    private let closed = Atomic<Bool>(false)

    struct Pending {
        let opcode: UInt16
        let done: Signals
        var event: HCIEvent?
    }

    static let commandTimeoutMillis = 2_000

    init(transport: any HCITransport) {
        self.transport = transport
    }

    /// Starts the reader; `onReport` runs on the reader thread, `onLost` once if the controller goes away.
    func startReading(onReport: @escaping @Sendable (AdvertisingReport) -> Void, onLost: @escaping @Sendable (HandoffError) -> Void) {
        Threads.start("hci reader") { [self] in
            var deframer = H4Deframer()
            do throws(HandoffError) {
                while !closed.load(ordering: .acquiring) {
                    let bytes = try transport.receive()
                    do throws(WireError) {
                        try deframer.append(bytes)
                        while let (type, packet) = try deframer.next() {
                            guard type == HCIEvent.packetType, let event = try? HCIEvent(packet: packet) else { continue }
                            handle(event, onReport: onReport)
                        }
                    } catch {
                        throw HandoffError(.bluetooth, "The controller sent bytes that are not HCI packets (\(error)).",
                                           fix: "Check the --hci device; handoffd reconnects.")
                    }
                }
            } catch {
                if !closed.load(ordering: .acquiring) { onLost(error) }
            }
            failPending()
        }
    }

    private func handle(_ event: HCIEvent, onReport: @Sendable (AdvertisingReport) -> Void) {
        switch event {
        case let .commandComplete(opcode, _), let .commandStatus(_, opcode):
            pending.withLock { pending in
                guard var waiting = pending, waiting.opcode == opcode else { return }
                waiting.event = event
                pending = waiting
                waiting.done.signal()
            }
        case let .advertisingReports(reports):
            reports.forEach(onReport)
        case .other:
            break
        }
    }

    private func failPending() {
        _ = pending.withLock { $0?.done.signal() }
    }

    /// HCI status 0x0C, Command Disallowed (Core Vol 1, Part F).
    static let commandDisallowed: UInt8 = 0x0C

    /// Sends `command` and returns its completion; a non-zero status is an error carrying the HCI status code.
    @discardableResult
    func execute(_ command: HCICommand) throws(HandoffError) -> HCIEvent {
        let (event, status) = try completion(of: command)
        if status != 0 { throw Self.refusal(command, status) }
        return event
    }

    static func refusal(_ command: HCICommand, _ status: UInt8) -> HandoffError {
        HandoffError(.bluetooth, "The controller refused \(command.name): HCI status 0x\(String(status, radix: 16)) (\(describe(status))).",
                     fix: status == commandDisallowed ? "Another program may be advertising or scanning; handoffd disables and retries."
                                                      : "Check the controller (btmon shows the exchange).")
    }

    /// Sends `command` and returns the controller's status as a number (0: done), for the
    /// callers that decide by it; only a controller that does not answer is an error.
    @discardableResult
    func status(of command: HCICommand) throws(HandoffError) -> UInt8 {
        try completion(of: command).status
    }

    private func completion(of command: HCICommand) throws(HandoffError) -> (event: HCIEvent, status: UInt8) {
        try commandLock.withLock { _ throws(HandoffError) -> (event: HCIEvent, status: UInt8) in
            let done = Signals(value: 0)
            pending.withLock { $0 = Pending(opcode: command.opcode, done: done) }
            defer { pending.withLock { $0 = nil } }
            let packet: [UInt8]
            do {
                packet = try command.encoded()
            } catch {
                throw HandoffError(.internal, "Cannot encode \(command.name): \(error).", fix: "Report this as a bug.")
            }
            try transport.send(packet)
            guard done.wait(millis: Self.commandTimeoutMillis),
                  let event = pending.withLock({ $0?.event }) else {
                throw HandoffError(.bluetooth, "The controller did not answer \(command.name).",
                                   fix: "Check that the controller is powered and not held by another program.")
            }
            return (event, event.status ?? 0)
        }
    }

    /// Sends `command`, ignoring only Command Disallowed (0x0C): switching off what is
    /// already off, or on what another program already switched on.
    func executeIgnoringStatus(_ command: HCICommand) throws(HandoffError) {
        let status = try status(of: command)
        guard status == 0 || status == Self.commandDisallowed else { throw Self.refusal(command, status) }
    }

    func close() {
        if !closed.exchange(true, ordering: .acquiringAndReleasing) { transport.close() }
    }

    static func describe(_ status: UInt8) -> String {
        switch status {
        case 0x01: "unknown HCI command"
        case 0x0C: "command disallowed"
        case 0x11: "unsupported feature or parameter"
        case 0x12: "invalid parameters"
        default: "see Core Vol 1, Part F"
        }
    }
}
