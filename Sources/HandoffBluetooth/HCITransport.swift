import CBluetooth
import Glibc
import HandoffCore
import HandoffTransport
import HandoffRuntime

/// Moves H4 packets (type byte, then the HCI packet) to and from a controller.
/// Two implementations: a kernel device through libbluetooth's raw HCI socket
/// (real laptops) and H4 over a Unix stream socket (the lab's emulated controllers).
public protocol HCITransport: Sendable {
    var name: String { get }
    func send(_ packet: [UInt8]) throws(HandoffError)
    /// Blocks until bytes arrive; they may hold part of a packet or several.
    func receive() throws(HandoffError) -> [UInt8]
    func close()
}

public enum HCITransports {
    /// `hciN` or `unix:PATH`.
    public static func open(_ device: String) throws(HandoffError) -> any HCITransport {
        if device.hasPrefix("unix:") { return try UnixH4Transport(path: String(device.dropFirst(5))) }
        return try RawHCITransport(device: device)
    }
}

/// H4 over a Unix stream socket, as Bumble's `unix-server:` transport serves it.
final class UnixH4Transport: HCITransport {
    let name: String
    private let connection: StreamConnection

    init(path: String) throws(HandoffError) {
        name = "unix:\(path)"
        do {
            connection = try StreamConnection.connect(unixPath: path)
        } catch {
            throw HandoffError(.bluetooth, "Cannot reach the Bluetooth controller at \(path): \(error).",
                               fix: "Start the controller emulator (Scripts/lab up starts one per host) or give another --hci.")
        }
    }

    func send(_ packet: [UInt8]) throws(HandoffError) {
        do { try connection.write(packet) } catch { throw Self.lost(error, name) }
    }

    func receive() throws(HandoffError) -> [UInt8] {
        do { return try connection.readAvailable() } catch { throw Self.lost(error, name) }
    }

    func close() { connection.close() }

    static func lost(_ error: SystemError, _ name: String) -> HandoffError {
        HandoffError(.bluetooth, "The Bluetooth controller at \(name) went away (\(error)).",
                     fix: "Check that the controller is still there; handoffd reconnects when it returns.")
    }
}

/// A kernel HCI device through a raw HCI socket. Needs CAP_NET_RAW and
/// CAP_NET_ADMIN (or root); shares the controller with bluetoothd.
final class RawHCITransport: HCITransport {
    let name: String
    private let fd: Int32

    init(device: String) throws(HandoffError) {
        name = device
        let id = handoff_hci_device_id(device)
        guard id >= 0 else {
            throw HandoffError(.bluetooth, "There is no Bluetooth controller named \(device).",
                               fix: "List controllers with 'hciconfig' or 'btmgmt info'; pass --hci hci0 (or the right one), or --hci none on a machine without Bluetooth.")
        }
        let opened = handoff_hci_open_raw(id)
        guard opened >= 0 else {
            let reason = String(cString: strerror(-opened))
            throw HandoffError(.bluetooth, "Cannot open \(device): \(reason).",
                               fix: -opened == EPERM || -opened == EACCES
                                   ? "Raw HCI needs CAP_NET_RAW and CAP_NET_ADMIN: run as root, or leave out --hci to use bluetoothd, which needs no privilege (Docs/HARDWARE.md)."
                                   : "Check that \(device) is powered ('bluetoothctl power on').")
        }
        fd = opened
    }

    func send(_ packet: [UInt8]) throws(HandoffError) {
        let written = packet.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == packet.count else {
            throw HandoffError(.bluetooth, "Writing to \(name) failed: \(String(cString: strerror(errno))).",
                               fix: "Check that the controller is powered.")
        }
    }

    func receive() throws(HandoffError) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: 1100)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count > 0 { return Array(buffer[0..<count]) }
            if count < 0 && errno == EINTR { continue }
            throw HandoffError(.bluetooth, "Reading from \(name) failed: \(count == 0 ? "closed" : String(cString: strerror(errno))).",
                               fix: "Check that the controller is still there and powered.")
        }
    }

    func close() { Glibc.close(fd) }
}
