import CSodium
import HandoffCore

/// The rotating tokens in mDNS service names and Bluetooth beacons:
/// BLAKE2b-80 over the rotation period, keyed from the device's discovery
/// secret (`Identity.discoverySecret()`), which it gives only to devices it
/// pairs with. Holding the public key is not enough to compute them; to anyone
/// without the secret successive tokens look random and unlinked.
///
///     token key = BLAKE2b-256(key = discovery secret, context)
///     token     = BLAKE2b-80(key = token key, period u64 big-endian)
public enum DiscoveryToken {
    static let keyContext = Array("handoff/discovery-token/v2".utf8)
    static let beaconContext = Array("handoff/ble-token/v2".utf8)
    public static let secretBytes = 32

    public static func token(secret: [UInt8], epoch: UInt64) -> String {
        DeviceID(fingerprint: rawToken(secret: secret, epoch: epoch, context: keyContext))!.compact
    }

    /// The 10-byte token in Bluetooth beacons: the same construction under its own context,
    /// so an mDNS name and a beacon of one device cannot be matched to each other.
    public static func beaconToken(secret: [UInt8], epoch: UInt64) -> [UInt8] {
        rawToken(secret: secret, epoch: epoch, context: beaconContext)
    }

    static func rawToken(secret: [UInt8], epoch: UInt64, context: [UInt8]) -> [UInt8] {
        var tokenKey = Blake2b.keyed(context, key: secret)
        defer { Sodium.wipe(&tokenKey) }
        var message = ByteWriter()
        message.write(epoch)
        return Blake2b.keyed(message.bytes, key: tokenKey, outputBytes: DeviceID.fingerprintByteCount)
    }

    /// The periods whose tokens are recognised in period `epoch`. A device moves to a period's
    /// tokens at a random time in that period (spreading the new names over the period), so
    /// until then it shows the previous period's; one period more on each side allows for a
    /// clock that is off.
    public static func recognisedEpochs(around epoch: UInt64) -> [UInt64] {
        [epoch &- 2, epoch &- 1, epoch, epoch &+ 1]
    }

    /// Which device (given with its discovery secret) published `token` in a period recognised in `epoch`.
    public static func match(_ token: String, among devices: some Sequence<(key: DeviceKey, secret: [UInt8])>,
                             epoch: UInt64) -> DeviceKey? {
        for device in devices {
            for candidate in recognisedEpochs(around: epoch) where Self.token(secret: device.secret, epoch: candidate) == token {
                return device.key
            }
        }
        return nil
    }
}
