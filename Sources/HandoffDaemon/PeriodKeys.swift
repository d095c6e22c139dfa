import HandoffCore
import HandoffCrypto
import HandoffMDNS
import HandoffTransport

/// What this host derives from its paired devices for one rotation period: the hints their
/// sealed announcements arrive under (for the previous, current and next period, so a clock a
/// little off still matches), their Bluetooth beacon tokens and mDNS tokens (from two periods
/// back: a device moves to a period's tokens at a random time in it), which mDNS
/// sightings are theirs, and the handshake secrets. One epoch for all of it: before, six caches
/// each kept their own and could disagree for a moment at a period turn (issue 23).
///
/// Pure: the caller says what time it is (`change(at:)`) and hands in the paired set.
struct PeriodKeys {
    typealias Hint = (key: DeviceKey, periodKey: [UInt8])

    /// What one paired device contributes: its key, discovery secret and seal chain (already
    /// moved to the period before the current one).
    struct Device {
        var key: DeviceKey
        var discoverySecret: [UInt8]
        var sealChain: SealChain
    }

    /// The period the tables are for; nil before the first `rebuild`.
    private(set) var epoch: UInt64?
    private(set) var hints: [[UInt8]: Hint] = [:]
    private(set) var beaconTokens: [[UInt8]: DeviceKey] = [:]
    private(set) var serviceTokens: [String: DeviceKey] = [:]
    /// The mDNS sightings that are paired devices; nil until asked after a change.
    private var recognised: [(key: DeviceKey, sighting: ServiceSighting)]?
    /// Per paired or remembered device; depends on the paired set only, nil until asked after it changed.
    var handshakeSecrets: [DeviceKey: PairSecrets]?

    enum Change: Equatable {
        case unchanged
        /// Nothing was built yet (the daemon just started).
        case first
        /// The period turned (or the clock moved to another one) from the period given.
        case turned(from: UInt64)
    }

    func change(at epoch: UInt64) -> Change {
        guard let current = self.epoch else { return .first }
        return current == epoch ? .unchanged : .turned(from: current)
    }

    /// Builds every table for `epoch` from the paired set: at a period turn and when the set changes.
    mutating func rebuild(epoch: UInt64, devices: [Device]) {
        self.epoch = epoch
        var hints: [[UInt8]: Hint] = [:]
        var beaconTokens: [[UInt8]: DeviceKey] = [:]
        var serviceTokens: [String: DeviceKey] = [:]
        for device in devices {
            for candidate in DiscoveryToken.recognisedEpochs(around: epoch) {
                beaconTokens[DiscoveryToken.beaconToken(secret: device.discoverySecret, epoch: candidate)] = device.key
                serviceTokens[DiscoveryToken.token(secret: device.discoverySecret, epoch: candidate)] = device.key
            }
            for candidate in [epoch &- 1, epoch, epoch &+ 1] {
                guard let periodKey = device.sealChain.key(at: candidate) else { continue }
                // Every minute of the three periods: 45 hints per paired device, built once a period.
                for minute in AnnouncementSeal.minutes(of: candidate) {
                    hints[AnnouncementSeal.hint(periodKey: periodKey, sender: device.key, minute: minute)] = (device.key, periodKey)
                }
            }
        }
        self.hints = hints
        self.beaconTokens = beaconTokens
        self.serviceTokens = serviceTokens
        recognised = nil
    }

    /// The paired set changed: secrets are derived again when next asked.
    mutating func pairedSetChanged() {
        handshakeSecrets = nil
        recognised = nil
    }

    /// mDNS sightings came or went.
    mutating func sightingsChanged() {
        recognised = nil
    }

    /// Which paired device published each sighting, by its token; matched once per change
    /// of sightings, paired set or period.
    mutating func recognise(_ sightings: some Collection<[ServiceSighting]>) -> [(key: DeviceKey, sighting: ServiceSighting)] {
        if let recognised { return recognised }
        var found: [(key: DeviceKey, sighting: ServiceSighting)] = []
        for list in sightings {
            for sighting in list {
                guard let record = try? ServiceRecord(txt: sighting.txt), record.capabilities.contains("udp"),
                      let key = serviceTokens[record.token] else { continue }
                found.append((key, sighting))
            }
        }
        recognised = found
        return found
    }
}
