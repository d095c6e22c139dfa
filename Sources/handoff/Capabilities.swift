import FoundationEssentials
import Glibc

/// The Linux capabilities raw HCI needs, and whether this process holds them.
/// The default Bluetooth backend (bluetoothd over D-Bus) needs none.
public enum Capabilities {
    /// Bit numbers from linux/capability.h.
    public static let rawHCI: [(name: String, bit: Int)] = [("CAP_NET_RAW", 13), ("CAP_NET_ADMIN", 12)]

    /// The effective set from the text of /proc/PID/status (its "CapEff:" line, hexadecimal).
    public static func effective(status: String) -> UInt64? {
        for line in status.split(separator: "\n") where line.hasPrefix("CapEff:") {
            return UInt64(line.dropFirst("CapEff:".count).trimmingSpaces(), radix: 16)
        }
        return nil
    }

    /// The names of the raw HCI capabilities missing from `effective`.
    public static func missingForRawHCI(effective: UInt64) -> [String] {
        rawHCI.filter { effective & (1 << UInt64($0.bit)) == 0 }.map(\.name)
    }

    /// This process's missing raw HCI capabilities; nil if /proc cannot be read (then the open itself will say).
    public static func missingForRawHCI() -> [String]? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let effective = effective(status: status) else { return nil }
        return missingForRawHCI(effective: effective)
    }
}
