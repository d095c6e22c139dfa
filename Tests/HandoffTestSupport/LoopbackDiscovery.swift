import HandoffCore
import HandoffTransport
import HandoffRuntime

/// Discovery for several daemons in one process: every datagram one member sends reaches
/// every other member, as from 127.0.0.1 by multicast, where their transfer ports listen.
/// A member decides by the seal's hint whether a copy is for it, as on a real link.
/// `taps` see every datagram too (a test captures one to replay it later).
public final class LoopbackHub: Sendable {
    private let members = Locked<[ObjectIdentifier: LoopbackPath]>([:])
    private let taps = Locked<[@Sendable ([UInt8]) -> Void]>([])

    public init() {}

    /// A path for one daemon (DaemonConfiguration.extraDiscoveryPaths).
    public func path() -> LoopbackPath {
        LoopbackPath(hub: self)
    }

    public func tap(_ observe: @escaping @Sendable ([UInt8]) -> Void) {
        taps.withLock { $0.append(observe) }
    }

    /// A datagram as if it arrived from the link: every started member gets it.
    public func inject(_ bytes: [UInt8]) {
        for member in members.withLock({ Array($0.values) }) { member.receive(bytes) }
    }

    func join(_ path: LoopbackPath) { members.withLock { $0[ObjectIdentifier(path)] = path } }
    func leave(_ path: LoopbackPath) { members.withLock { $0[ObjectIdentifier(path)] = nil } }

    func send(_ bytes: [UInt8], from sender: LoopbackPath) {
        for tap in taps.withLock({ $0 }) { tap(bytes) }
        for member in members.withLock({ Array($0.values) }) where member !== sender { member.receive(bytes) }
    }
}

public final class LoopbackPath: DiscoveryPath {
    public let name = DiscoveryPathName.multicast
    private let hub: LoopbackHub
    private let observer = Locked<(@Sendable (DiscoveryObservation) -> Void)?>(nil)

    init(hub: LoopbackHub) {
        self.hub = hub
    }

    /// Finds, and nothing more: the in-process daemons run no multicast check and no unicast.
    public let abilities: PathAbilities = [.find]

    public var health: PathHealth {
        observer.withLock { $0 == nil } ? PathHealth(.failed(.stopped), "stopped") : PathHealth(.working, "loopback")
    }

    public func start(observer: @escaping @Sendable (DiscoveryObservation) -> Void) throws(HandoffError) {
        self.observer.withLock { $0 = observer }
        hub.join(self)
    }

    public func announce(_ datagrams: [OutgoingAnnouncement]) {
        for datagram in datagrams { hub.send(datagram.bytes, from: self) }
    }

    public func stop() {
        hub.leave(self)
        observer.withLock { $0 = nil }
    }

    func receive(_ bytes: [UInt8]) {
        observer.withLock { $0 }?(.announcement(bytes: bytes, fromHost: "127.0.0.1", path: .multicast))
    }
}
