/// Who is physically near, from Bluetooth beacons: per device a smoothed RSSI
/// and the time of the last beacon. A device is near only while its beacon is
/// fresh (heard within `freshnessMillis`) and strong enough (smoothed RSSI at
/// or above `thresholdDBM`).
public struct ProximityTracker: Sendable {
    public struct Settings: Sendable, Equatable {
        public var thresholdDBM: Int = -70
        public var freshnessMillis: UInt64 = 10_000
        /// Weight of a new reading in the exponential moving average.
        public var smoothing: Double = 0.3

        public init() {}
    }

    public struct Reading: Sendable, Equatable {
        public var smoothedRSSI: Double
        public var lastRSSI: Int
        public var lastHeardMillis: UInt64
        public var beacons: Int
    }

    public var settings: Settings
    public private(set) var readings: [DeviceKey: Reading] = [:]

    public init(settings: Settings = Settings()) {
        self.settings = settings
    }

    /// A beacon from `key` at `rssi` dBm. RSSI 127 means the controller could
    /// not measure it: the beacon still counts as heard, the average is kept.
    public mutating func heard(_ key: DeviceKey, rssi: Int, nowMillis: UInt64) {
        guard var reading = readings[key], reading.lastHeardMillis + settings.freshnessMillis > nowMillis else {
            // First beacon, or first after going stale: start the average afresh.
            readings[key] = Reading(smoothedRSSI: Double(rssi == 127 ? settings.thresholdDBM : rssi), lastRSSI: rssi,
                                    lastHeardMillis: nowMillis, beacons: 1)
            return
        }
        if rssi != 127 {
            reading.smoothedRSSI += settings.smoothing * (Double(rssi) - reading.smoothedRSSI)
        }
        reading.lastRSSI = rssi
        reading.lastHeardMillis = nowMillis
        reading.beacons += 1
        readings[key] = reading
    }

    public func isNear(_ key: DeviceKey, nowMillis: UInt64) -> Bool {
        guard let reading = readings[key] else { return false }
        return reading.lastHeardMillis + settings.freshnessMillis > nowMillis
            && reading.smoothedRSSI >= Double(settings.thresholdDBM)
    }

    public mutating func forget(_ key: DeviceKey) {
        readings.removeValue(forKey: key)
    }
}
