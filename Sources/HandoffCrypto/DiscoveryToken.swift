import CSodium
import HandoffCore

/// The rotating token in mDNS service names (and later BLE beacons):
/// BLAKE2b-80 keyed with a key derived from the device's public key, over the
/// rotation period number. Anyone holding the public key (a trusting device)
/// can compute it; to anyone else successive tokens look random and unlinked.
public enum DiscoveryToken {
    static let keyContext = Array("handoff/discovery-token/v1".utf8)
    static let beaconContext = Array("handoff/ble-token/v1".utf8)

    public static func token(for key: DeviceKey, epoch: UInt64) -> String {
        DeviceID(fingerprint: rawToken(for: key, epoch: epoch, context: keyContext))!.compact
    }

    /// The 10-byte token in Bluetooth beacons: the same construction under its own context,
    /// so an mDNS name and a beacon of one device cannot be matched to each other.
    public static func beaconToken(for key: DeviceKey, epoch: UInt64) -> [UInt8] {
        rawToken(for: key, epoch: epoch, context: beaconContext)
    }

    static func rawToken(for key: DeviceKey, epoch: UInt64, context: [UInt8]) -> [UInt8] {
        let tokenKey = Blake2b.digest(context + key.bytes)
        var message = ByteWriter()
        message.write(epoch)
        var out = [UInt8](repeating: 0, count: DeviceID.fingerprintByteCount)
        Sodium.ensureReady()
        _ = crypto_generichash(&out, out.count, message.bytes, UInt64(message.bytes.count), tokenKey, tokenKey.count)
        return out
    }

    /// Which of `keys` published `token` in the previous, current or next period.
    public static func match(_ token: String, among keys: some Sequence<DeviceKey>, epoch: UInt64) -> DeviceKey? {
        for key in keys {
            for candidate in [epoch &- 1, epoch, epoch &+ 1] where Self.token(for: key, epoch: candidate) == token {
                return key
            }
        }
        return nil
    }
}
