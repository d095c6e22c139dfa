import HandoffBlueZ
import HandoffBluetooth
import HandoffAPI
import HandoffCore
import HandoffCrypto
import HandoffTransport

// Bluetooth proximity: beacons of paired devices, recognised by their
// rotating token, feed the proximity tracker. With Bluetooth on, a paired
// device is offered summaries, listed and accepted from only while it is near.
// Which backend runs (bluetoothd over D-Bus, or raw HCI) matters only in DiscoveryPaths.
extension Daemon {
    /// True when bluetoothd is on the system bus (or can be started there): BlueZ is then the default backend.
    public static func bluetoothdAvailable() -> Bool {
        BlueZPresence.isBluetoothdOnSystemBus()
    }

    func heardBeacon(token: [UInt8], rssi: Int, nowMillis: UInt64) {
        enterPeriod(nowMillis: nowMillis)
        let key = keys.beaconTokens[token]
        if key == nil { log.debug("bluetooth: a beacon with a token of no paired device, \(rssi) dBm") }
        if discovery.heardBeacon(of: key, rssi: rssi, nowMillis: nowMillis), let key {
            log.info("\(Ed25519.deviceID(of: key)) is near")
            broadcast(.near(peer: Ed25519.deviceID(of: key).description))
            // It just came near: tell it what we offer now, not at the next interval.
            announce()
        }
    }

    func proximityJSON(_ key: DeviceKey, nowMillis: UInt64) -> JSONValue {
        guard discovery.bluetooth != nil else { return ["enforced": false] }
        guard let reading = discovery.proximity.readings[key] else {
            return ["enforced": true, "near": false, "thresholdDBM": .integer(Int64(discovery.proximity.settings.thresholdDBM))]
        }
        return ["enforced": true, "near": .bool(discovery.proximity.isNear(key, nowMillis: nowMillis)),
                "rssi": .double((reading.smoothedRSSI * 10).rounded() / 10),
                "lastHeardMillisAgo": .integer(Int64(clamping: nowMillis &- reading.lastHeardMillis)),
                "thresholdDBM": .integer(Int64(discovery.proximity.settings.thresholdDBM))]
    }

    func bluetoothStatus() -> JSONValue {
        guard let bluetooth = discovery.bluetooth else {
            return ["enabled": false, "state": "off: bluetoothd is not on the system bus and no --hci was given; proximity is not enforced on this host"]
        }
        let state = bluetooth.currentStatus
        return ["enabled": true, "backend": .string(state.backend), "device": state.adapter.map { .string($0) } ?? .null,
                "available": .bool(state.available), "state": .string(state.text), "address": state.address.map { .string($0) } ?? .null,
                "scanning": state.scanning.map { .string($0) } ?? .null,
                "beaconsHeard": .integer(Int64(state.beaconsHeard)), "unknownBeacons": .integer(Int64(discovery.unknownBeacons)),
                "thresholdDBM": .integer(Int64(discovery.proximity.settings.thresholdDBM)),
                "freshnessMillis": .integer(Int64(discovery.proximity.settings.freshnessMillis))]
    }
}
