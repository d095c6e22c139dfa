import FoundationEssentials
import Glibc
import HandoffCore
import HandoffTransport
import HandoffRuntime

/// A few seconds of advertising and scanning on one controller, for checking
/// real hardware (`handoff-ble-check`): proves the controller takes our
/// commands and hears the air, then switches off what it switched on.
public enum BluetoothProbe {
    public struct Heard: Sendable {
        public var address: String
        public var rssi: Int
        public var reports: Int
        public var handoffBeacon: Bool
        public var extended: Bool
    }

    public struct Result: Sendable {
        public var device: String
        public var advertisedAddress: String
        public var advertisedToken: [UInt8]
        public var heard: [Heard]
    }

    public static func run(device: String, seconds: Double, companyID: UInt16 = Beacon.defaultCompanyID,
                           token: [UInt8]) throws(HandoffError) -> Result {
        let transport = try HCITransports.open(device)
        let driver = BluetoothController(transport: transport)
        defer { driver.close() }
        let heard = Locked<[String: Heard]>([:])
        driver.startReading(onReport: { report in
            let isBeacon = Beacon(advertisingData: report.data, companyID: companyID) != nil
            heard.withLock { table in
                var entry = table[report.address.description]
                    ?? Heard(address: report.address.description, rssi: Int(report.rssi), reports: 0, handoffBeacon: isBeacon, extended: report.extended)
                entry.reports += 1
                entry.rssi = Int(report.rssi)
                entry.handoffBeacon = entry.handoffBeacon || isBeacon
                table[report.address.description] = entry
            }
        }, onLost: { _ in })
        let beacon = Beacon(companyID: companyID, token: token)
        let address = BluetoothAddress.nonResolvablePrivate(from: token)
        let data: [UInt8]
        do { data = try beacon.advertisingData() } catch {
            throw HandoffError(.internal, "The test beacon does not fit: \(error).", fix: "Report this as a bug.")
        }
        let settings = BluetoothDiscovery.Configuration(device: device)
        try driver.execute(.setEventMask(BluetoothDiscovery.eventMask))
        try driver.execute(.leSetEventMask(BluetoothDiscovery.leEventMask))
        try driver.executeIgnoringStatus(.leSetScanEnable(false, filterDuplicates: false))
        try driver.executeIgnoringStatus(.leSetAdvertisingEnable(false))
        try driver.execute(.leSetRandomAddress(address))
        try driver.execute(.leSetAdvertisingParameters(AdvertisingParameters(type: settings.advertisingType)))
        try driver.execute(.leSetAdvertisingData(data))
        try driver.execute(.leSetAdvertisingEnable(true))
        try driver.execute(.leSetScanParameters(ScanParameters()))
        try driver.execute(.leSetScanEnable(true, filterDuplicates: false))
        Threads.sleep(seconds: seconds)
        try? driver.executeIgnoringStatus(.leSetAdvertisingEnable(false))
        try? driver.executeIgnoringStatus(.leSetScanEnable(false, filterDuplicates: false))
        return Result(device: device, advertisedAddress: address.description, advertisedToken: token,
                      heard: heard.withLock { Array($0.values) }.sorted { $0.rssi > $1.rssi })
    }
}
