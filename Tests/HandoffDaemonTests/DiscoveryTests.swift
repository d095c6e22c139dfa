import HandoffCore
import HandoffCrypto
@testable import HandoffDaemon
import HandoffTransport
import Testing

private let alice = try! Identity(seed: [UInt8](repeating: 2, count: 32)).publicKey
private let bob = try! Identity(seed: [UInt8](repeating: 3, count: 32)).publicKey
private let period = ServiceRecord.rotationSeconds * 1000

private func sighting(_ instance: String, _ host: String) -> ServiceSighting {
    ServiceSighting(instance: instance, host: host, port: 47181, txt: [])
}

@Suite struct DiscoveryTests {
    @Test func sightingsAreBoundedInNumberAndInAddressesEach() {
        var discovery = Discovery(proximity: .init())
        for index in 0..<Discovery.maximumSightings {
            let result1 = discovery.found(sighting("h\(index)", "10.0.0.1"))
            #expect(result1 == .changed)
        }
        // Full: a new instance is refused, a known one still moves.
        let result2 = discovery.found(sighting("stranger", "10.0.0.1"))
        #expect(result2 == .refused)
        for host in 1...6 { _ = discovery.found(sighting("h0", "10.0.1.\(host)")) }
        #expect(discovery.sightings["h0"]?.map(\.host) == ["10.0.1.3", "10.0.1.4", "10.0.1.5", "10.0.1.6"])
        let result3 = discovery.lost(instance: "h0")
        #expect(result3 == .changed)
        let result4 = discovery.lost(instance: "h0")
        #expect(result4 == .unchanged)
        let result5 = discovery.found(sighting("stranger", "10.0.0.1"))
        #expect(result5 == .changed)
    }

    @Test func aBeaconBringsADeviceNearOnceAndUnknownTokensAreCounted() {
        var discovery = Discovery(proximity: .init())
        let result6 = discovery.heardBeacon(of: nil, rssi: -40, nowMillis: 1_000)
        #expect(result6 == false)
        #expect(discovery.unknownBeacons == 1)
        let result7 = discovery.heardBeacon(of: alice, rssi: -50, nowMillis: 1_000)
        #expect(result7)
        let result8 = discovery.heardBeacon(of: alice, rssi: -50, nowMillis: 2_000)
        #expect(result8 == false)
        // Too weak: heard but not near.
        let result9 = discovery.heardBeacon(of: bob, rssi: -90, nowMillis: 2_000)
        #expect(result9 == false)
        // Without Bluetooth every device counts as near (proximity is not enforced).
        #expect(discovery.isNear(bob, nowMillis: 2_000))
    }

    @Test func aDeviceHeardOnlyByUnicastIsAskedByMulticastOncePerPeriod() {
        var discovery = Discovery(proximity: .init())
        discovery.paths = [MulticastDiscovery(configuration: .init())]
        let heardByUnicast = Discovery.Listed(key: alice, appearedMillis: 0, heardByMulticastMillis: nil)
        let heardByMulticast = Discovery.Listed(key: bob, appearedMillis: 0, heardByMulticastMillis: 5_000)
        #expect(discovery.firstMulticastCheck(of: heardByUnicast) == Discovery.multicastCheckAfterMillis)
        // Not yet listed for 10 s.
        #expect(discovery.multicastChecksDue([heardByUnicast, heardByMulticast], nowMillis: 9_999).isEmpty)
        let result10 = discovery.multicastChecksDue([heardByUnicast, heardByMulticast], nowMillis: 10_000)
        #expect(result10 == [alice])
        #expect(discovery.firstMulticastCheck(of: heardByUnicast) == nil)
        #expect(discovery.multicastChecksDue([heardByUnicast], nowMillis: 20_000).isEmpty)
        let result11 = discovery.multicastChecksDue([heardByUnicast], nowMillis: 10_000 + period)
        #expect(result11 == [alice])
        // Gone from the list: forgotten, so listed again it is asked again.
        #expect(discovery.multicastChecksDue([], nowMillis: 10_001 + period).isEmpty)
        #expect(discovery.multicastCheck(of: alice) == nil)
    }

    /// Issue 42: a switch that starts filtering multicast gave no warning in doctor for two periods.
    /// A multicast path that works, without a socket.
    final class WorkingMulticast: DiscoveryPath {
        let name = DiscoveryPathName.multicast
        let abilities: PathAbilities = [.find, .reachEveryone]
        var health: PathHealth { PathHealth(.working, "joined on test0") }
        func start(observer: @escaping @Sendable (DiscoveryObservation) -> Void) throws(HandoffError) {}
        func announce(_ datagrams: [OutgoingAnnouncement]) {}
        func stop() {}
    }

    @Test func doctorAsksADeviceQuietOnMulticastAtOnceAndNotTwiceIn30Seconds() {
        var discovery = Discovery(proximity: .init())
        discovery.paths = [WorkingMulticast()]
        let now: UInt64 = 1_000_000
        let quiet = Discovery.Listed(key: alice, appearedMillis: 0, heardByMulticastMillis: now - 31_000)
        let heard = Discovery.Listed(key: bob, appearedMillis: 0, heardByMulticastMillis: now - 5_000)
        let asked = [discovery.doctorChecksMulticast(heard, nowMillis: now), discovery.doctorChecksMulticast(quiet, nowMillis: now)]
        #expect(asked == [false, true])
        #expect(discovery.multicastCheck(of: alice) == now)
        let again = [discovery.doctorChecksMulticast(quiet, nowMillis: now + 29_999), discovery.doctorChecksMulticast(quiet, nowMillis: now + 30_000)]
        #expect(again == [false, true])
        // doctor's own check is awaited 2 s, in every doctor run until the daemon's next check.
        #expect(discovery.multicastAnswerWait(of: alice) == Discovery.doctorAnswerWaitMillis)
        #expect(discovery.multicastAnswerWait(of: bob) == 10_000)
        var without = Discovery(proximity: .init())
        let withoutAsked = without.doctorChecksMulticast(quiet, nowMillis: now)
        #expect(withoutAsked == false)
        // A multicast path with no socket cannot carry the check: doctor does not wait for it.
        var broken = Discovery(proximity: .init())
        broken.paths = [MulticastDiscovery(configuration: .init())]
        let brokenAsked = broken.doctorChecksMulticast(quiet, nowMillis: now)
        #expect(brokenAsked == false)
    }

    @Test func withoutTheMulticastPathNothingIsChecked() {
        var discovery = Discovery(proximity: .init())
        let listed = Discovery.Listed(key: alice, appearedMillis: 0, heardByMulticastMillis: nil)
        #expect(discovery.multicastChecksDue([listed], nowMillis: 60_000).isEmpty)
        #expect(discovery.firstMulticastCheck(of: listed) == nil)
    }
}

/// Issue 42, 1: the paths come from one registry and are asked by ability and typed health.
@Suite struct DiscoveryPathRegistryTests {
    private func made(_ change: (inout DaemonConfiguration) -> Void) -> [any DiscoveryPath] {
        var configuration = DaemonConfiguration(stateDirectory: "/nonexistent", socketPath: "/nonexistent/api.sock", name: "test")
        configuration.bluez = false
        change(&configuration)
        let context = DiscoveryPaths.Context(configuration: configuration, transferPort: 47181, log: Log(level: .error))
        return DiscoveryPaths.registered.compactMap { $0.make(context) }
    }

    @Test func theConfigurationChoosesThePaths() {
        #expect(made { _ in }.map(\.name) == [.multicast, .unicast, .mdns])
        #expect(made { $0.discovery = [.multicast] }.map(\.name) == [.multicast])
        #expect(made { $0.discovery = [.mdns]; $0.hci = "unix:/nonexistent.hci" }.map(\.name) == [.unicast, .mdns, .bluetooth])
        // Each registration makes the path it is named for.
        for registration in DiscoveryPaths.registered {
            let path = made { $0.discovery = [.multicast, .mdns]; $0.hci = "unix:/nonexistent.hci" }.first { $0.name == registration.name }
            #expect(path != nil, "\(registration.name)")
        }
    }

    @Test func eachPathSaysWhatItCanDo() {
        let paths = made { $0.hci = "unix:/nonexistent.hci" }
        let abilities = Dictionary(uniqueKeysWithValues: paths.map { ($0.name, $0.abilities) })
        #expect(abilities[.multicast] == [.find, .reachEveryone])
        #expect(abilities[.unicast] == [.find, .sendStraight])
        #expect(abilities[.mdns] == [.find])
        #expect(abilities[.bluetooth] == [.tellNear])
        var discovery = Discovery(proximity: .init())
        discovery.paths = paths
        #expect(discovery.reachesEveryone && discovery.sendsStraight && discovery.bluetooth != nil && discovery.mdns != nil)
        discovery.paths = paths.filter { $0.name == .mdns }
        #expect(!discovery.reachesEveryone && !discovery.sendsStraight && discovery.bluetooth == nil)
    }

    /// Before any start, no path claims to work, and the fault is a value, not a sentence.
    @Test func healthIsTypedBeforeAndAfterStart() throws {
        let paths = made { _ in }
        let health = Dictionary(uniqueKeysWithValues: paths.map { ($0.name, $0.health) })
        #expect(health[.multicast]?.state == .failed(.noSocket))
        #expect(health[.unicast]?.state == .failed(.noSocket))
        #expect(health[.mdns]?.state == .failed(.serviceMissing))
        #expect(paths.allSatisfy { !$0.health.isUsable })
        let unicast = UnicastAnnouncer(port: 0)
        try unicast.start { _ in }
        #expect(unicast.health.state == .working && unicast.health.isUsable)
        unicast.stop()
        #expect(unicast.health.state == .failed(.noSocket))
    }
}
