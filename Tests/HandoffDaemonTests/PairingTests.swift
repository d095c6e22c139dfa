import Foundation
import HandoffCore
import HandoffCrypto
@testable import HandoffDaemon
@testable import HandoffTransport
import HandoffRuntime
import Testing

// Pairing between two real daemons over a socket pair: the dialog, the keys it
// exchanges, and that it is kept on both sides or on neither (issue 15, finding 10).

/// What holds pairing open in these tests: the local connection that asked, in handoffd.
final class PairingOpener: Sendable {
    var id: ObjectIdentifier { ObjectIdentifier(self) }
}

/// Both daemons, b pairing with a (a waits, as `handoff-peer pair` does), up to the code on both screens.
private struct PairingRun {
    let a: TestDaemon, b: TestDaemon
    let offerA: PairingState.Offer, offerB: PairingState.Offer
    let served: Started<Void>

    static func start(expecting expected: ((DeviceKey) -> DeviceKey)? = nil) async throws -> (PairingRun?, Result<PairingState.Offer, HandoffError>) {
        let a = try TestDaemon(name: "alpha"), b = try TestDaemon(name: "beta")
        let opener = PairingOpener()
        let listening = Task { await a.daemon.listenForPairing(seconds: 30, holder: opener.id) }
        while await !a.daemon.isPairingOpen() { try await Task.sleep(for: .milliseconds(5)) }
        let (clientConnection, serverConnection) = try connectedPair("pairing initiator", "pairing responder")
        let served = a.serve(serverConnection)
        let aKey = await a.daemon.identity.publicKey
        let bIdentity = await b.daemon.identity
        let initiated = await b.daemon.pair(named: "alpha", expecting: expected.map { $0(aKey) } ?? aKey) { () throws(HandoffError) in
            try SecureChannel.connect(clientConnection, identity: bIdentity, purpose: .pair, secrets: nil)
        }
        guard case let .success(offerB) = initiated else {
            clientConnection.close()
            listening.cancel()
            return (nil, initiated)
        }
        let offerA = try await listening.value.get()
        return (PairingRun(a: a, b: b, offerA: offerA, offerB: offerB, served: served), initiated)
    }

    func confirmBoth() async -> (a: Result<PairingState.Offer, HandoffError>, b: Result<PairingState.Offer, HandoffError>) {
        async let confirmedA = a.daemon.confirmPairing(session: offerA.session, accept: true)
        async let confirmedB = b.daemon.confirmPairing(session: offerB.session, accept: true)
        let outcome = await (confirmedA, confirmedB)
        await served.value
        return outcome
    }

    func remove() {
        a.remove()
        b.remove()
    }
}

@Suite struct PairingTests {
    @Test func bothSidesStoreWhatTheOtherSent() async throws {
        let (started, _) = try await PairingRun.start()
        let run = try #require(started)
        defer { run.remove() }
        #expect(run.offerA.code == run.offerB.code)
        let aIdentity = await run.a.daemon.identity, bIdentity = await run.b.daemon.identity
        // Each screen shows the other's key (its device id).
        #expect(run.offerA.key == bIdentity.publicKey && run.offerB.key == aIdentity.publicKey)
        // While b pairs with a, a third device from b's address is refused, before a says who it is.
        let (third, responder) = try connectedPair("third", "pairing responder")
        let servedThird = run.a.serve(responder)
        let stranger = try Identity(seed: [UInt8](repeating: 0x45, count: 32))
        let refused = await onOwnThread {
            Result { () throws(HandoffError) in try SecureChannel.connect(third, identity: stranger, purpose: .pair, secrets: nil, peerName: "alpha") }
        }
        third.close()
        await servedThird.value
        guard case let .failure(busy) = refused else {
            Issue.record("a second device got a pairing handshake")
            return
        }
        #expect(busy.message == "alpha refused: too many devices are pairing here right now.")
        let (confirmedA, confirmedB) = await run.confirmBoth()
        #expect(try confirmedA.get().name == "beta")
        #expect(try confirmedB.get().name == "alpha")
        let atA = try #require(await run.a.daemon.trust.entries[bIdentity.publicKey]?.material)
        let atB = try #require(await run.b.daemon.trust.entries[aIdentity.publicKey]?.material)
        #expect(atA.agreementKey == bIdentity.agreementKey && atB.agreementKey == aIdentity.agreementKey)
        #expect(atA.discoverySecret == bIdentity.discoverySecret() && atB.discoverySecret == aIdentity.discoverySecret())
        // One seal chain, the same at both ends, starting before the current period.
        #expect(atA.sealChain == atB.sealChain)
        #expect(atA.sealChain.epoch < ServiceRecord.epoch(wallClockMillis: wallClockMillis()))
        // The handshake secrets agree, so the next fetch will find its pair.
        let secretsAtA = await run.a.daemon.pairSecrets(for: bIdentity.publicKey)
        let secretsAtB = await run.b.daemon.pairSecrets(for: aIdentity.publicKey)
        #expect(secretsAtA != nil && secretsAtA == secretsAtB)
        // Each recognises the other's tokens now.
        let token = DiscoveryToken.token(secret: bIdentity.discoverySecret(), epoch: 5)
        #expect(DiscoveryToken.match(token, among: await run.a.daemon.trustedDiscoverySecrets(), epoch: 5) == bIdentity.publicKey)
    }

    /// Round two, 2: a stranger that asks first no longer takes the only session and closes
    /// pairing. It is shown with its own code and key; declined, the window stays open, and the
    /// device that asked meanwhile is shown next and pairs.
    @Test func aStrangerWhoAsksFirstIsDeclinedAndTheRealDevicePairsInTheSameWindow() async throws {
        let a = try TestDaemon(name: "alpha"), stranger = try TestDaemon(name: "mallory"), b = try TestDaemon(name: "beta")
        defer { a.remove(); stranger.remove(); b.remove() }
        let aKey = await a.daemon.identity.publicKey
        let opener = PairingOpener()
        let listening = Task { await a.daemon.listenForPairing(seconds: 30, holder: opener.id) }
        while await !a.daemon.isPairingOpen() { try await Task.sleep(for: .milliseconds(5)) }

        func ask(_ who: TestDaemon, from address: String) async throws -> (Result<PairingState.Offer, HandoffError>, Started<Void>) {
            let (client, server) = try connectedPair("alpha", address)
            let served = a.serve(server)
            let identity = await who.daemon.identity
            let offer = await who.daemon.pair(named: "alpha", expecting: aKey) { () throws(HandoffError) in
                try SecureChannel.connect(client, identity: identity, purpose: .pair, secrets: nil)
            }
            return (offer, served)
        }
        let (strangerOffer, strangerServed) = try await ask(stranger, from: "169.254.9.9")
        let shownFirst = try await listening.value.get()
        #expect(shownFirst.key == (await stranger.daemon.identity.publicKey))
        #expect(shownFirst.name == "mallory")
        // The real device asks while the stranger's code is on the screen: it waits its turn.
        let (bOffer, bServed) = try await ask(b, from: "169.254.2.2")
        let offerB = try bOffer.get()

        let strangerSession = try strangerOffer.get().session
        async let declined = a.daemon.confirmPairing(session: shownFirst.session, accept: false)
        async let strangerSide = stranger.daemon.confirmPairing(session: strangerSession, accept: true)
        let (here, there) = await (declined, strangerSide)
        await strangerServed.value
        #expect(throws: HandoffError.self) { try here.get() }
        #expect(throws: HandoffError.self) { try there.get() }
        #expect(await a.daemon.isPairingOpen())

        let shownNext = try await a.daemon.listenForPairing(seconds: 30, holder: opener.id).get()
        #expect(shownNext.key == (await b.daemon.identity.publicKey))
        #expect(shownNext.code == offerB.code)
        async let pairedHere = a.daemon.confirmPairing(session: shownNext.session, accept: true)
        async let pairedThere = b.daemon.confirmPairing(session: offerB.session, accept: true)
        let (okHere, okThere) = await (pairedHere, pairedThere)
        await bServed.value
        #expect(try okHere.get().name == "beta")
        #expect(try okThere.get().name == "alpha")
        #expect(Set(await a.daemon.trust.entries.keys) == [await b.daemon.identity.publicKey])
        // Paired with the device the user wanted: pairing closes for everyone else.
        #expect(await !a.daemon.isPairingOpen())
    }

    /// Round three, 4: each declined (or mismatched) candidate costs the window; at the third it
    /// closes, and the command that opened it cannot open it again: a script guessing codes
    /// against `pair --code` gets three tries per run, not thousands an hour.
    @Test func aFewDeclinedCandidatesClosePairing() async throws {
        let a = try TestDaemon(name: "alpha")
        let strangers = try (1...PairingState.maximumRefusedCandidates).map { try TestDaemon(name: "mallory-\($0)") }
        defer { a.remove(); strangers.forEach { $0.remove() } }
        let aKey = await a.daemon.identity.publicKey
        let opener = PairingOpener()
        for (index, stranger) in strangers.enumerated() {
            let listening = Task { await a.daemon.listenForPairing(seconds: 30, holder: opener.id) }
            while await !a.daemon.isPairingOpen() { try await Task.sleep(for: .milliseconds(5)) }
            let (client, server) = try connectedPair("alpha", "169.254.9.\(index + 1)")
            let served = a.serve(server)
            let identity = await stranger.daemon.identity
            let asked = await stranger.daemon.pair(named: "alpha", expecting: aKey) { () throws(HandoffError) in
                try SecureChannel.connect(client, identity: identity, purpose: .pair, secrets: nil)
            }
            let shown = try await listening.value.get()
            let strangerSession = try asked.get().session
            async let declined = a.daemon.confirmPairing(session: shown.session, accept: false)
            async let strangerSide = stranger.daemon.confirmPairing(session: strangerSession, accept: true)
            _ = await (declined, strangerSide)
            await served.value
            #expect(await a.daemon.isPairingOpen() == (index < strangers.count - 1))
        }
        let again = await a.daemon.listenForPairing(seconds: 30, holder: opener.id)
        guard case let .failure(error) = again else { Issue.record("pairing opened again after the refusals"); return }
        #expect(error.code == .declined)
        #expect(await !a.daemon.isPairingOpen())
        // A new run (a new connection) may open it again, once its opener asks.
        let another = PairingOpener()
        #expect(try await a.daemon.openPairing(seconds: 30, holder: another.id).get() > 0)
        #expect(await a.daemon.isPairingOpen())
    }

    /// Round three, 5: pairing lasts as long as what opened it. The command's connection goes,
    /// and pairing closes at once (its beacon with it), and a waiting `pairListen` hears why.
    @Test func pairingClosesWhenItsOpenerGoes() async throws {
        let a = try TestDaemon(name: "alpha")
        defer { a.remove() }
        let command = PairingOpener(), agent = PairingOpener()
        _ = try await a.daemon.openPairing(seconds: 600, holder: agent.id).get()
        let listening = Task { await a.daemon.listenForPairing(seconds: 30, holder: command.id) }
        while await a.daemon.pairing.listeners.isEmpty { try await Task.sleep(for: .milliseconds(5)) }
        await a.daemon.releasePairing(command.id)
        #expect(await a.daemon.isPairingOpen(), "the agent still holds it")
        await a.daemon.releasePairing(agent.id)
        #expect(await !a.daemon.isPairingOpen())
        guard case let .failure(error) = await listening.value else { Issue.record("the listener was not told"); return }
        #expect(error.code == .timedOut)
    }

    /// One side cannot write its trust store: the other, which could, rolls back.
    @Test func aSideThatCannotStoreLeavesNeitherPaired() async throws {
        let (started, _) = try await PairingRun.start()
        let run = try #require(started)
        defer { run.remove() }
        // a's state directory disappears (works as root too, unlike chmod).
        try FileManager.default.removeItem(atPath: run.a.directory)
        let (confirmedA, confirmedB) = await run.confirmBoth()
        #expect(throws: HandoffError.self) { try confirmedA.get() }
        if case let .failure(error) = confirmedA { #expect(error.code == .storage) }
        if case let .failure(error) = confirmedB {
            #expect(error.code == .storage)
            #expect(error.message == "alpha could not store the pairing (or the connection ended first), so this host did not keep it either.")
        } else {
            Issue.record("b kept a pairing a did not store")
        }
        #expect(await run.a.daemon.trust.entries.isEmpty)
        #expect(await run.b.daemon.trust.entries.isEmpty)
        // And b's file agrees with its memory.
        let reloaded = try TrustStore.load(from: StateDirectory(path: run.b.directory))
        #expect(reloaded.entries.isEmpty)
    }

    /// The initiator pairs only with the key of the beacon it chose.
    @Test func aKeyOtherThanTheBeaconsIsRefused() async throws {
        let stranger = try Identity(seed: [UInt8](repeating: 0x44, count: 32)).publicKey
        let (started, initiated) = try await PairingRun.start(expecting: { _ in stranger })
        #expect(started == nil)
        defer { started?.remove() }
        guard case let .failure(error) = initiated else {
            Issue.record("paired with the wrong key")
            return
        }
        #expect(error.code == .trust)
        #expect(error.message.contains("is not the alpha whose pairing beacon"))
    }
}

/// Who may start a pairing handshake while pairing is open: one session per address, a few in all.
@Suite struct PairingAdmissionTests {
    @Test func oneSessionPerAddressAndAFewInAll() {
        var state = PairingState()
        #expect(state.availability(host: "10.0.1.1", open: false) == .closed)
        #expect(state.availability(host: "10.0.1.1", open: true) == .open)
        state.responding[1] = "10.0.1.1"
        #expect(state.availability(host: "10.0.1.1", open: true) == .busy)
        #expect(state.availability(host: "10.0.1.2", open: true) == .open)
        for session in 2...PairingState.maximumCandidates { state.responding[session] = "10.0.\(session).1" }
        #expect(state.availability(host: "10.0.7.7", open: true) == .busy)
        state.responding.removeValue(forKey: 2)
        #expect(state.availability(host: "10.0.7.7", open: true) == .open)
    }

    /// Round three, 4: a stranger with four addresses in one network took every candidate slot.
    @Test func oneNetworkHoldsAtMostItsShareOfTheSlots() {
        var state = PairingState()
        state.responding = [1: "192.168.1.20", 2: "192.168.1.21"]
        #expect(state.availability(host: "192.168.1.22", open: true) == .busy)
        #expect(state.availability(host: "::ffff:192.168.1.23", open: true) == .busy)
        #expect(state.availability(host: "192.168.2.1", open: true) == .open)
        state.responding = [1: "2001:db8:0:1::a", 2: "2001:db8:0:1:ffff::b"]
        #expect(state.availability(host: "2001:db8:0:1::c", open: true) == .busy)
        #expect(state.availability(host: "2001:db8:0:2::c", open: true) == .open)
        #expect(state.availability(host: "192.168.1.20", open: true) == .open)
        // Link-local networks are per link.
        state.responding = [1: "fe80::1%eth0", 2: "fe80::2%eth0"]
        #expect(state.availability(host: "fe80::3%eth0", open: true) == .busy)
        #expect(state.availability(host: "fe80::3%wlan0", open: true) == .open)
    }
}

@Suite struct AddressPrefixTests {
    @Test func addressesGoToTheirNetwork() {
        #expect(AddressPrefix.of("192.168.1.20") == "192.168.1/24")
        #expect(AddressPrefix.of("::ffff:10.0.0.7") == "10.0.0/24")
        #expect(AddressPrefix.of("2001:db8:0:1:ffff::b") == "2001:db8:0:1/64")
        #expect(AddressPrefix.of("fe80::1%eth0") == "fe80:0:0:0/64%eth0")
        #expect(AddressPrefix.of("2001:db8::1%eth0") == "2001:db8:0:0/64")
        // All of IPv4 link-local is on the link: 169.254.1.x and 169.254.2.x are one network.
        #expect(AddressPrefix.of("169.254.1.7") == "169.254/16")
        #expect(AddressPrefix.of("169.254.200.7") == "169.254/16")
        #expect(AddressPrefix.of("laptop-a.local") == nil)
        #expect(AddressPrefix.of("") == nil)
    }
}

/// The pairing-beacon table (finding 8): bounded, fair between sources, newest per key.
@Suite struct PairingBeaconTableTests {
    private func beacon(_ seed: UInt8, host: String, seen: UInt64, name: String = "laptop-b") -> PairingState.Beacon {
        .init(key: try! Identity(seed: [UInt8](repeating: seed, count: 32)).publicKey, name: name, host: host, port: 47181,
              seenMillis: seen, ttlMillis: 15_000)
    }

    @Test func aFloodFromOneSourceEvictsOnlyThatSource() {
        var state = PairingState()
        let real = beacon(1, host: "169.254.10.2", seen: 0)
        state.remember(real)
        for index in 0..<64 { state.remember(beacon(UInt8(10 + index), host: "169.254.10.3", seen: UInt64(index + 1))) }
        #expect(state.beacons[real.key]?.host == real.host)
        #expect(state.beacons.count == 1 + PairingState.maximumBeaconsPerHost)
        // The flood's newest ones are what it keeps.
        #expect(state.beacons.values.filter { $0.host == "169.254.10.3" }.map(\.seenMillis).sorted() == [61, 62, 63, 64])
    }

    @Test func theTableIsBoundedAndTakesFromTheLargestSource() {
        var state = PairingState()
        var seed: UInt8 = 1
        for host in 0..<20 {
            for index in 0..<2 {
                state.remember(beacon(seed, host: "10.0.0.\(host)", seen: UInt64(host * 10 + index)))
                seed += 1
            }
        }
        #expect(state.beacons.count == PairingState.maximumBeacons)
        // Every source still has at least one beacon.
        #expect(Set(state.beacons.values.map(\.host)).count == 20)
    }

    @Test func aKeyHeardAgainIsOneEntryWithTheNewestAddress() {
        var state = PairingState()
        state.remember(beacon(1, host: "10.0.0.1", seen: 1))
        state.remember(beacon(1, host: "10.0.0.2", seen: 2))
        #expect(state.beacons.count == 1)
        #expect(state.beacons.values.first?.host == "10.0.0.2")
    }
}
