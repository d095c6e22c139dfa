import Foundation
import HandoffCore
import Testing

private let now: UInt64 = 1_764_513_720_000 // 2025-11-30 14:42:00 UTC
private let minute: UInt64 = 60_000

/// A healthy pair seen from laptop-b: laptop-a announces by multicast and unicast,
/// its beacon is fresh and strong, it offers a type an app here declares.
private func healthy(_ purpose: ConditionEvidence.Purpose = .accept(requireApp: false)) -> ConditionEvidence {
    var e = ConditionEvidence(purpose: purpose, nowMillis: now, hostName: "laptop-b")
    e.bluetooth = .working("unix:/tmp/b.hci advertising and scanning")
    e.workingPaths = [.multicast, .unicast, .mdns]
    e.pairedNames = ["laptop-a"]
    e.declaredTypes = ["org.example.reader.document"]
    e.reference = "laptop-a"
    var p = ConditionEvidence.Peer(name: "laptop-a")
    p.announcementsByPath = [.multicast: now - 500, .unicast: now - 600]
    p.ttlMillis = 15_000
    p.state = [.bluetoothConfigured, .bluetoothWorking]
    p.beacon = .init(lastHeardMillis: now - 300, smoothedRSSI: -50)
    p.mdnsSeen = true
    p.offer = .offered(type: "org.example.reader.document", hasWebpage: false)
    p.apps = ["Reader"]
    e.peer = p
    return e
}

/// laptop-a has been silent for two minutes: no announcement, no beacon, no mDNS record.
private func silent(_ purpose: ConditionEvidence.Purpose = .accept(requireApp: false)) -> ConditionEvidence {
    var e = healthy(purpose)
    e.peer?.announcementsByPath = [.multicast: now - 2 * minute]
    e.peer?.beacon = .init(lastHeardMillis: now - 2 * minute, smoothedRSSI: -50)
    e.peer?.mdnsSeen = false
    e.peer?.offer = .none
    e.peer?.apps = []
    return e
}

private func with(_ e: ConditionEvidence, _ change: (inout ConditionEvidence) -> Void) -> ConditionEvidence {
    var copy = e
    change(&copy)
    return copy
}

/// Every cause of Docs/CONDITIONS.md, from the evidence that shows it.
private let table: [(String, ConditionEvidence, ConditionCause)] = [
    ("unknown name", with(healthy()) { $0.reference = "laptop-z"; $0.peer = nil }, .notPaired),
    ("doctor with no paired device", with(healthy(.doctor)) { $0.reference = nil; $0.peer = nil; $0.pairedNames = [] }, .notPaired),
    ("we untrusted the peer", with(healthy()) { $0.peer = nil; $0.unpairedHereMillis = now - minute }, .unpairedHere),
    ("peer untrusted us (silent, authenticated refusal)", with(silent()) { $0.peer?.portProbe = .open; $0.peer?.handshake = .trustRefused }, .peerUntrustedUs),
    ("peer untrusted us (fetch refused, still listed)", with(healthy()) { $0.peer?.handshake = .trustRefused }, .peerUntrustedUs),
    ("disabled here", with(healthy()) { $0.enabled = false }, .disabledHere),
    ("peer disabled, beacon still fresh", with(healthy()) { $0.peer?.state = [.disabled, .bluetoothConfigured, .bluetoothWorking] }, .peerDisabled),
    ("peer disabled, beacon aged out", with(healthy()) {
        $0.peer?.state = [.disabled, .bluetoothConfigured, .bluetoothWorking]
        $0.peer?.beacon = .init(lastHeardMillis: now - minute, smoothedRSSI: -50)
    }, .peerDisabled),
    ("peer's handoffd stopped cleanly", with(silent()) { $0.peer?.goodbyeMillis = now - 2 * minute + 10 }, .peerStopped),
    ("peer's handoffd killed", with(silent()) { $0.peer?.portProbe = .refused(host: "169.254.10.1") }, .peerNotRunning),
    ("peer's handoffd frozen, still listed (SIGSTOP within its TTL)", with(healthy(.doctor)) {
        $0.peer?.portProbe = .open
        $0.peer?.handshake = .noAnswer
    }, .peerNotAnswering),
    ("peer suspended: beacon, announcements and address quiet together", with(silent()) {
        $0.peer?.announcementsByPath = [.multicast: now - 40_000]
        $0.peer?.beacon = .init(lastHeardMillis: now - 39_000, smoothedRSSI: -50)
        $0.peer?.portProbe = .unreachable("169.254.10.1: No route to host")
    }, .peerAsleep),
    ("peer suspended within its TTL", with(healthy()) {
        $0.peer?.announcementsByPath = [.multicast: now - 12_000]
        $0.peer?.beacon = .init(lastHeardMillis: now - 11_500, smoothedRSSI: -50)
        $0.peer?.portProbe = .dropped(host: "169.254.10.1")
    }, .peerAsleep),
    ("peer's handoffd frozen, silent", with(silent()) {
        $0.peer?.portProbe = .open
        $0.peer?.handshake = .noAnswer
    }, .peerNotAnswering),
    ("local controller gone", with(healthy()) { $0.bluetooth = .failed("unix:/tmp/b.hci: unavailable") }, .bluetoothDownHere),
    ("peer's controller gone (listed)", with(healthy()) { $0.peer?.state = [.bluetoothConfigured] }, .peerBluetoothDown),
    ("peer's controller gone (silent, reachable)", with(silent()) {
        $0.peer?.state = [.bluetoothConfigured]
        $0.peer?.portProbe = .open
        $0.peer?.handshake = .trusted
    }, .peerBluetoothDown),
    ("peer without Bluetooth", with(healthy()) { $0.peer?.state = [] }, .peerWithoutBluetooth),
    ("no network here", with(healthy()) { $0.workingPaths = []; $0.brokenPaths = "multicast: no interface" }, .noNetworkHere),
    ("multicast filtered, found by the active check within a minute", with(healthy()) {
        $0.peer?.announcementsByPath = [.multicast: now - 50_000, .unicast: now - 100]
        $0.peer?.listedSinceMillis = now - 50_000
        $0.peer?.multicastCheckMillis = now - 20_000
    }, .multicastFiltered),
    ("this host's cable pulled, the peer still within its TTL", with(healthy()) {
        $0.linksUp = []
        $0.peer?.portProbe = .unreachable("169.254.10.1: Network is unreachable")
    }, .linkDownHere),
    ("cable cut, beacon heard, the link's verdict not known", with(silent()) {
        $0.peer?.beacon = .init(lastHeardMillis: now - 200, smoothedRSSI: -50)
        $0.peer?.portProbe = .dropped(host: "169.254.10.1")
    }, .noLink),
    ("peer's cable cut: its address gives no answer on the link, no gateway here", with(silent()) {
        $0.peer?.beacon = .init(lastHeardMillis: now - 200, smoothedRSSI: -50)
        $0.peer?.portProbe = .dropped(host: "169.254.10.1")
        $0.peer?.layer3 = .silent(host: "169.254.10.1", gateway: nil, gatewayAnsweredSecondsAgo: nil)
    }, .peerUnreachable),
    ("no route to the peer's address", with(silent()) {
        $0.peer?.portProbe = .unreachable("169.254.10.1: Network is unreachable")
        $0.peer?.layer3 = .noRoute(host: "169.254.10.1")
    }, .peerUnreachable),
    ("client isolation: near and awake, the gateway answers, the peer does not", with(silent()) {
        $0.peer?.beacon = .init(lastHeardMillis: now - 200, smoothedRSSI: -50)
        $0.peer?.portProbe = .dropped(host: "169.254.10.1")
        $0.peer?.layer3 = .silent(host: "169.254.10.1", gateway: "169.254.0.1", gatewayAnsweredSecondsAgo: 3)
    }, .clientsIsolated),
    ("a firewall on the peer drops everything: its address answers on the link", with(silent()) {
        $0.peer?.beacon = .init(lastHeardMillis: now - 200, smoothedRSSI: -50)
        $0.peer?.portProbe = .dropped(host: "169.254.10.1")
        $0.peer?.layer3 = .answers(host: "169.254.10.1")
    }, .transferPortDropped),
    ("incoming announcements dropped", with(silent()) {
        $0.peer?.beacon = .init(lastHeardMillis: now - 200, smoothedRSSI: -50)
        $0.peer?.portProbe = .open
        $0.peer?.handshake = .trusted
    }, .announcementsBlocked),
    ("incoming multicast dropped, unicast works", with(healthy()) {
        $0.peer?.announcementsByPath = [.multicast: now - 31 * minute, .unicast: now - 100]
        $0.peer?.listedSinceMillis = now - 40 * minute
    }, .multicastFiltered),
    ("transfer port dropped", with(healthy(.doctor)) { $0.peer?.portProbe = .dropped(host: "169.254.10.1") }, .transferPortDropped),
    ("transfer port refused", with(healthy(.doctor)) { $0.peer?.portProbe = .refused(host: "169.254.10.1") }, .transferPortRefused),
    ("out of range (silent, reachable)", with(silent()) { $0.peer?.portProbe = .open; $0.peer?.handshake = .trusted }, .outOfRange),
    ("out of range (listed, weak)", with(healthy()) { $0.peer?.beacon = .init(lastHeardMillis: now - 100, smoothedRSSI: -85) }, .outOfRange),
    ("no app, --app", with(healthy(.accept(requireApp: true))) { $0.peer?.apps = [] }, .noApp),
    ("no app: the terminal prints it", with(healthy()) { $0.peer?.apps = [] }, .terminalFallback),
    ("nothing offered", with(healthy()) { $0.peer?.offer = .none }, .nothingOffered),
    ("declined here", with(healthy()) { $0.peer?.offer = .declinedHere(type: "org.example.reader.document", atMillis: now - minute) }, .declinedHere),
    ("offer expired", with(healthy()) { $0.peer?.offer = .expired(type: "org.example.reader.document", atMillis: now - minute) }, .offerExpired),
    ("offer resigned", with(healthy()) { $0.peer?.offer = .withdrawn(type: "org.example.reader.document", atMillis: now - minute, how: .resigned) }, .offerWithdrawn),
    ("offer invalidated", with(healthy()) { $0.peer?.offer = .withdrawn(type: "org.example.reader.document", atMillis: now - minute, how: .invalidated) }, .offerWithdrawn),
]

@Suite struct ConditionDecisionTests {
    @Test func aHealthyPairHasNoVerdict() {
        #expect(ConditionDecision.decide(healthy()) == nil)
        // At rest only unicast keepalives arrive; the first contact came by multicast long ago.
        #expect(ConditionDecision.decide(with(healthy()) { $0.peer?.announcementsByPath = [.multicast: now - 20 * minute, .unicast: now - 100] }) == nil)
        // Listed for less than two periods, heard by unicast alone: no multicast was due yet.
        #expect(ConditionDecision.decide(with(healthy()) {
            $0.peer?.announcementsByPath = [.unicast: now - 100]
            $0.peer?.listedSinceMillis = now - 10 * minute
        }) == nil)
        // Listed for two periods and more, and no multicast in that time: multicast stopped reaching this host.
        #expect(ConditionDecision.decide(with(healthy()) {
            $0.peer?.announcementsByPath = [.unicast: now - 100]
            $0.peer?.listedSinceMillis = now - 31 * minute
        })?.cause == .multicastFiltered)
        #expect(ConditionDecision.decide(healthy(.doctor)) == nil)
        let lines = ConditionDecision.lines(healthy(.doctor), verdict: nil)
        #expect(lines.map(\.code) == [.trust, .bluetooth, .network, .enabled, .proximity, .app])
        #expect(lines.allSatisfy { $0.status == .pass })
    }

    @Test(arguments: table.indices)
    func eachCauseIsNamedFromItsEvidence(_ index: Int) throws {
        let (name, evidence, cause) = table[index]
        let verdict = try #require(ConditionDecision.decide(evidence), "\(name)")
        #expect(verdict.cause == cause, "\(name): \(verdict.message)")
        #expect(verdict.code == cause.code)
        #expect(!verdict.message.isEmpty && !verdict.fix.isEmpty)
    }

    @Test func theTableCoversEveryCause() {
        #expect(Set(table.map(\.2)) == Set(ConditionCause.allCases))
    }

    /// Doctor names the verdict on exactly one line; the other five hold (or are off).
    @Test(arguments: table.indices)
    func doctorNamesExactlyOneCondition(_ index: Int) throws {
        var evidence = table[index].1
        evidence.purpose = .doctor
        guard let verdict = ConditionDecision.decide(evidence) else { return }
        let lines = ConditionDecision.lines(evidence, verdict: verdict)
        let named = lines.filter { $0.status == .fail || $0.status == .warn }
        if verdict.code.isTransportCondition {
            #expect(named.map(\.code) == [verdict.code], "\(table[index].0)")
            #expect(named.first?.fix == verdict.fix)
        } else {
            #expect(named.isEmpty, "\(table[index].0)")
        }
    }

    @Test func doctorDoesNotBlameOffersOrProximityOfADisabledPeer() {
        var evidence = with(healthy(.doctor)) {
            $0.peer?.state = [.disabled, .bluetoothConfigured, .bluetoothWorking]
            $0.peer?.beacon = .init(lastHeardMillis: now - minute, smoothedRSSI: -50)
            $0.peer?.offer = .none
        }
        #expect(ConditionDecision.decide(evidence)?.cause == .peerDisabled)
        evidence.peer?.state = [.bluetoothConfigured, .bluetoothWorking]
        evidence.peer?.beacon = .init(lastHeardMillis: now - 100, smoothedRSSI: -50)
        // Enabled again: nothing is wrong with the conditions; doctor says why nothing continues.
        let verdict = ConditionDecision.decide(evidence)
        #expect(verdict?.cause == .nothingOffered)
        #expect(ConditionDecision.lines(evidence, verdict: verdict).allSatisfy { $0.status == .pass })
    }

    /// Behind a failure, stale evidence does not read as a pass: what is not known now is off.
    @Test func linesBehindAFailureAreOffUnlessEstablished() throws {
        let evidence = with(silent(.doctor)) { $0.peer?.goodbyeMillis = now - 2 * minute + 10 }
        let verdict = try #require(ConditionDecision.decide(evidence))
        let status = Dictionary(uniqueKeysWithValues: ConditionDecision.lines(evidence, verdict: verdict).map { ($0.code, $0.status) })
        #expect(status == [.trust: .pass, .bluetooth: .off, .network: .off, .enabled: .fail, .proximity: .off, .app: .pass])
    }

    @Test func aStopIsToldWithItsTimeInTheUsersZone() throws {
        var evidence = with(silent()) {
            $0.peer?.announcementsByPath = [.multicast: now - 41 * minute]
            $0.peer?.goodbyeMillis = now - 40 * minute
        }
        evidence.utcOffsetSeconds = 3600
        let verdict = try #require(ConditionDecision.decide(evidence))
        #expect(verdict.message == "handoffd on laptop-a stopped at 15:02 (it said goodbye).")
        #expect(verdict.fix.contains("Start handoffd on laptop-a"))
    }

    /// A restart after a goodbye: the newer announcement wins.
    @Test func aWithdrawnOfferSaysHow() {
        func message(_ how: ConditionEvidence.Withdrawal) -> String? {
            ConditionDecision.decide(with(healthy()) { $0.peer?.offer = .withdrawn(type: "org.example.x", atMillis: now, how: how) })?.message
        }
        #expect(message(.resigned) == "laptop-a resigned its offer of org.example.x at 14:42: it is not current there now.")
        #expect(message(.invalidated) == "laptop-a invalidated its offer of org.example.x at 14:42: that activity has ended.")
        #expect(message(.unknown) == "laptop-a stopped offering org.example.x at 14:42 (it was resigned or invalidated there).")
    }

    /// Client isolation needs all three: near and awake, this host's gateway answering lately,
    /// the peer's address silent on the link. Short of one, it is the peer off this network.
    @Test func isolationIsNamedOnlyOnAllItsEvidence() {
        let isolated = with(silent()) {
            $0.peer?.beacon = .init(lastHeardMillis: now - 200, smoothedRSSI: -50)
            $0.peer?.portProbe = .dropped(host: "169.254.10.1")
            $0.peer?.layer3 = .silent(host: "169.254.10.1", gateway: "169.254.0.1", gatewayAnsweredSecondsAgo: 3)
        }
        #expect(ConditionDecision.decide(isolated)?.cause == .clientsIsolated)
        #expect(ConditionDecision.decide(isolated)?.message.contains("gateway 169.254.0.1 (it answered 3 s ago)") == true)
        #expect(ConditionDecision.decide(with(isolated) {
            $0.peer?.layer3 = .silent(host: "169.254.10.1", gateway: "169.254.0.1", gatewayAnsweredSecondsAgo: 600)
        })?.cause == .peerUnreachable)
        #expect(ConditionDecision.decide(with(isolated) { $0.peer?.beacon = nil; $0.bluetooth = .notUsed })?.cause == .peerUnreachable)
    }

    /// Within its TTL (100 s by default) the last announcement still counts as live after the peer
    /// left the network: what the link says of its address decides, never "a firewall" by default.
    @Test func withinItsTTLALinkThatLostThePeerIsNotAFirewall() {
        let cablePulled = with(healthy()) {
            $0.peer?.ttlMillis = 100_000
            $0.peer?.announcementsByPath = [.multicast: now - 15_000, .unicast: now - 15_000]
            $0.peer?.portProbe = .dropped(host: "169.254.10.1")
            $0.peer?.layer3 = .silent(host: "169.254.10.1", gateway: nil, gatewayAnsweredSecondsAgo: nil)
        }
        #expect(ConditionDecision.decide(cablePulled)?.cause == .peerUnreachable)
        #expect(ConditionDecision.decide(cablePulled)?.message.contains("is not on this network") == true)
        let isolated = with(cablePulled) {
            $0.peer?.layer3 = .silent(host: "169.254.10.1", gateway: "169.254.0.1", gatewayAnsweredSecondsAgo: 2)
        }
        #expect(ConditionDecision.decide(isolated)?.cause == .clientsIsolated)
        #expect(ConditionDecision.decide(with(cablePulled) { $0.peer?.layer3 = .noRoute(host: "169.254.10.1") })?.cause == .peerUnreachable)
        #expect(ConditionDecision.decide(with(cablePulled) {
            $0.peer?.portProbe = .unreachable("169.254.10.1: No route to host")
        })?.cause == .peerUnreachable)
        // Its address answers: on the link, so a firewall on it drops the port.
        #expect(ConditionDecision.decide(with(cablePulled) { $0.peer?.layer3 = .answers(host: "169.254.10.1") })?.cause == .transferPortDropped)
        // No word from the link: a fresh announcement still says it is here (a firewall), an overdue one does not.
        let fresh = with(cablePulled) { $0.peer?.layer3 = nil }
        #expect(ConditionDecision.decide(fresh)?.cause == .transferPortDropped)
        #expect(ConditionDecision.decide(with(cablePulled) {
            $0.peer?.layer3 = nil
            $0.peer?.announcementsByPath = [.unicast: now - 55_000]  // none for half its TTL
        })?.cause == .noLink)
    }

    /// doctor's own check waits 2 s for the multicast answer; the daemon's waits 10 s.
    @Test func doctorsOwnMulticastCheckNamesAFilterAfterItsShortWait() {
        let asked = with(healthy(.doctor)) {
            $0.peer?.ttlMillis = 100_000
            $0.peer?.announcementsByPath = [.multicast: now - 10 * minute, .unicast: now - 20_000]
            $0.peer?.listedSinceMillis = now - 11 * minute
            $0.peer?.multicastCheckMillis = now - 2_100
        }
        #expect(ConditionDecision.decide(asked) == nil)
        #expect(ConditionDecision.decide(with(asked) { $0.peer?.multicastAnswerWaitMillis = 2_000 })?.cause == .multicastFiltered)
        // Its multicast answer came: nothing filters it.
        #expect(ConditionDecision.decide(with(asked) {
            $0.peer?.multicastAnswerWaitMillis = 2_000
            $0.peer?.announcementsByPath[.multicast] = now - 2_000
        }) == nil)
    }

    /// A laptop whose address still answers on the link is awake, whatever its beacon did.
    @Test func anAddressThatAnswersIsNotAsleep() {
        let suspended = with(silent()) {
            $0.peer?.announcementsByPath = [.multicast: now - 40_000]
            $0.peer?.beacon = .init(lastHeardMillis: now - 39_000, smoothedRSSI: -50)
            $0.peer?.portProbe = .dropped(host: "169.254.10.1")
        }
        #expect(ConditionDecision.decide(suspended)?.cause == .peerAsleep)
        #expect(ConditionDecision.decide(with(suspended) { $0.peer?.layer3 = .answers(host: "169.254.10.1") })?.cause == .transferPortDropped)
    }

    @Test func anAnnouncementAfterAGoodbyeMeansItRunsAgain() {
        let evidence = with(healthy()) { $0.peer?.goodbyeMillis = now - minute }
        #expect(ConditionDecision.decide(evidence) == nil)
    }

    @Test func aTrustRefusalIsNeverCalledNetwork() {
        for probe in [ConditionEvidence.PortProbe.open, .dropped(host: "x"), .refused(host: "x")] {
            let evidence = with(silent()) { $0.peer?.portProbe = probe; $0.peer?.handshake = .trustRefused }
            #expect(ConditionDecision.decide(evidence)?.code == .trust)
        }
    }

    @Test func aWebPageWithNoAppNeedsNoWarning() {
        let evidence = with(healthy()) { $0.peer?.apps = []; $0.peer?.offer = .offered(type: "org.example.page", hasWebpage: true) }
        #expect(ConditionDecision.decide(evidence) == nil)
        #expect(ConditionDecision.decide(with(evidence) { $0.purpose = .accept(requireApp: true) })?.cause == .noApp)
    }

    @Test func withoutBluetoothHereProximityIsOffAndASilentPeerIsANetworkMatter() {
        let evidence = with(silent()) { $0.bluetooth = .notUsed; $0.peer?.portProbe = .open; $0.peer?.handshake = .trusted }
        #expect(ConditionDecision.decide(evidence)?.cause == .announcementsBlocked)
        let lines = ConditionDecision.lines(with(healthy(.doctor)) { $0.bluetooth = .notUsed }, verdict: nil)
        #expect(lines.first { $0.code == .proximity }?.status == .off)
        #expect(lines.first { $0.code == .bluetooth }?.status == .off)
    }

    /// Docs/CONDITIONS.md's cause table lists exactly these causes, each with its code.
    @Test func theDocumentedTableMatchesTheDecision() throws {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Docs/CONDITIONS.md")
        let text = try String(contentsOf: docs, encoding: .utf8)
        guard let start = text.range(of: "<!-- cause table -->"), let end = text.range(of: "<!-- end cause table -->") else {
            Issue.record("Docs/CONDITIONS.md has no cause table markers")
            return
        }
        var documented: [String: String] = [:]
        for line in text[start.upperBound..<end.lowerBound].split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 2 else { continue }
            documented[cells[0].trimmingCharacters(in: CharacterSet(charactersIn: "`"))] = cells[1].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
        }
        let expected = Dictionary(uniqueKeysWithValues: ConditionCause.allCases.map { ($0.rawValue, $0.code.rawValue) })
        #expect(documented == expected)
    }
}
