import Foundation
import HandoffCore
import HandoffCrypto
import HandoffTransport

// The six transport conditions (Docs/CONDITIONS.md): checked before every
// accept so a failure names the one that fails, and all of them by `doctor`.
extension Daemon {
    // MARK: - Before an accept

    /// Finds the peer to accept from; when it is not there, says which condition explains it.
    func resolveForAccept(_ reference: String, nowMillis now: UInt64) throws(HandoffError) -> Peer {
        do {
            return try peers.resolve(reference)
        } catch where error.code == .notFound {
            throw diagnoseAbsent(reference, nowMillis: now)
        }
    }

    func pairedEntry(matching reference: String) -> TrustStore.Entry? {
        let prefix = DeviceID.normalize(reference) ?? ""
        let matches = trust.entries.values.filter {
            $0.name == reference || (prefix.count >= 4 && Ed25519.deviceID(of: $0.key).compact.hasPrefix(prefix))
        }
        return matches.count == 1 ? matches[0] : nil
    }

    /// A device we hear nothing from: unknown (trust), or paired and then Bluetooth, proximity or the network.
    func diagnoseAbsent(_ reference: String, nowMillis now: UInt64) -> HandoffError {
        guard let entry = pairedEntry(matching: reference) else {
            let paired = trust.entries.values.map(\.name).sorted().joined(separator: ", ")
            return HandoffError(.trust, "No paired device is called '\(reference)'.",
                                fix: "Pair with it first ('handoff-peer pair' there, 'handoff-peer pair \(reference)' here)."
                                    + (paired.isEmpty ? "" : " Paired devices: \(paired)."))
        }
        let name = entry.name.isEmpty ? Ed25519.deviceID(of: entry.key).description : entry.name
        if let local = localBluetoothProblem() { return local }
        if bluetooth != nil {
            if let reading = proximity.readings[entry.key], reading.lastHeardMillis + proximity.settings.freshnessMillis > now {
                return HandoffError(.network, "\(name)'s Bluetooth beacon is heard (\(Int(reading.smoothedRSSI)) dBm) but none of its announcements reach this host over the network.",
                                    fix: networkFix(port: configuration.transferPort) + " Check that both laptops are on the same network.")
            }
            return HandoffError(.proximity, "\(name) is not near: no Bluetooth beacon from it \(beaconAge(entry.key, now)).",
                                fix: "Bring the two laptops closer together and check that Bluetooth and handoffd are on for both ('handoff-peer doctor \(reference)').")
        }
        return HandoffError(.network, "No announcement from \(name) has reached this host within its TTL.",
                            fix: "Check that handoffd runs on \(name) and that both laptops are on the same network. " + networkFix(port: configuration.transferPort))
    }

    func beaconAge(_ key: DeviceKey, _ now: UInt64) -> String {
        guard let reading = proximity.readings[key] else { return "has been heard since handoffd started" }
        return "for \((now &- reading.lastHeardMillis) / 1000) s (last at \(Int(reading.smoothedRSSI)) dBm, threshold \(proximity.settings.thresholdDBM) dBm)"
    }

    func localBluetoothProblem() -> HandoffError? {
        guard let bluetooth, !bluetooth.currentStatus.available else { return nil }
        return HandoffError(.bluetooth, "This host's Bluetooth controller (\(configuration.hci ?? "")) is not working: \(bluetooth.currentStatus.text)",
                            fix: "Check the adapter ('sudo handoff-ble-check', 'rfkill list', 'bluetoothctl power on'); handoffd reconnects by itself.")
    }

    /// enabled, bluetooth and proximity, on this host and the peer, in that order.
    func checkConditions(before peer: Peer, nowMillis now: UInt64) throws(HandoffError) {
        guard settings.enabled else {
            throw HandoffError(.enabled, "Handoff is switched off on this host.", fix: "Run 'handoff-peer enable'.")
        }
        guard !peer.senderState.contains(.disabled) else {
            throw HandoffError(.enabled, "Handoff is switched off on \(peer.name).", fix: "On \(peer.name), run 'handoff-peer enable'.")
        }
        if let local = localBluetoothProblem() { throw local }
        if bluetooth != nil, peer.senderState.contains(.bluetoothConfigured), !peer.senderState.contains(.bluetoothWorking) {
            throw HandoffError(.bluetooth, "\(peer.name) says its Bluetooth controller is not working.",
                               fix: "On \(peer.name), check the adapter ('sudo handoff-ble-check', 'rfkill list').")
        }
        guard isNear(peer.key, nowMillis: now) else {
            throw HandoffError(.proximity, "\(peer.name) is not near: \(proximityEvidence(peer.key, now)).",
                               fix: "Bring the two laptops closer together and check that Bluetooth is on for both.")
        }
    }

    func proximityEvidence(_ key: DeviceKey, _ now: UInt64) -> String {
        guard let reading = proximity.readings[key] else { return "no beacon heard, threshold \(proximity.settings.thresholdDBM) dBm" }
        return "last beacon \((now &- reading.lastHeardMillis) / 1000) s ago at \(Int(reading.smoothedRSSI)) dBm, threshold \(proximity.settings.thresholdDBM) dBm"
    }

    nonisolated func networkFix(port: UInt16) -> String {
        "If a firewall runs there, open Handoff's ports (installed profiles): 'sudo ufw allow Handoff' or 'sudo firewall-cmd --permanent --add-service=handoff && sudo firewall-cmd --reload' (by hand: 47180/udp, \(port)/tcp, \(port)/udp)."
    }

    // MARK: - doctor

    struct Check {
        enum Status: String { case pass, fail, warn, off }
        var code: HandoffError.Code
        var status: Status
        var evidence: String
        var fix: String = ""

        var json: JSONValue {
            ["code": .string(code.rawValue), "status": .string(status.rawValue), "ok": .bool(status != .fail),
             "evidence": .string(evidence), "fix": .string(fix)]
        }
    }

    /// All six conditions for this host, and for `reference` when given.
    func doctor(reference: String?) async -> JSONValue {
        let now = wallClockMillis()
        var checks = localChecks(nowMillis: now)
        var peerName: JSONValue = .null
        if let reference {
            let (name, peerChecks) = await peerChecks(reference, nowMillis: now)
            peerName = .string(name)
            checks = zip(checks, peerChecks).map { merge($0, $1) }
        }
        return ["host": .string(configuration.name), "peer": peerName,
                "ok": .bool(!checks.contains { $0.status == .fail }),
                "conditions": .array(checks.map(\.json))]
    }

    /// The peer's verdict wins when it is worse; the evidence keeps both.
    private func merge(_ local: Check, _ peer: Check) -> Check {
        let rank: [Check.Status: Int] = [.off: 0, .pass: 1, .warn: 2, .fail: 3]
        let worse = rank[peer.status]! >= rank[local.status]! ? peer : local
        return Check(code: local.code, status: worse.status, evidence: "this host: \(local.evidence); peer: \(peer.evidence)",
                     fix: worse.fix)
    }

    private func localChecks(nowMillis now: UInt64) -> [Check] {
        var checks: [Check] = []
        checks.append(trust.entries.isEmpty
            ? Check(code: .trust, status: .fail, evidence: "no paired devices", fix: "Pair: 'handoff-peer pair' on one host, 'handoff-peer pair NAME' on the other.")
            : Check(code: .trust, status: .pass, evidence: "\(trust.entries.count) paired device(s)"))
        if let bluetooth {
            let state = bluetooth.currentStatus
            checks.append(state.available
                ? Check(code: .bluetooth, status: .pass, evidence: "controller \(configuration.hci ?? "") \(state.text)")
                : Check(code: .bluetooth, status: .fail, evidence: "controller \(configuration.hci ?? ""): \(state.text)",
                        fix: "Check the adapter ('sudo handoff-ble-check', 'rfkill list', 'bluetoothctl power on')."))
        } else {
            checks.append(Check(code: .bluetooth, status: .off, evidence: "not used (no --hci): proximity is not enforced on this host"))
        }
        let working = discoveryPaths.filter { path in
            if let mdns = path as? AvahiDiscoveryStatusReporting { return mdns.isAvailable }
            return !path.state.hasPrefix("no ") && !path.state.hasPrefix("closed")
        }.map(\.name)
        checks.append(working.isEmpty
            ? Check(code: .network, status: .fail, evidence: "no discovery path works: " + discoveryPaths.map { "\($0.name): \($0.state)" }.joined(separator: "; "),
                    fix: "Connect to a network; start avahi-daemon for mDNS.")
            : Check(code: .network, status: .pass,
                    evidence: "transfer port \(transferPort)/tcp listening; discovery by \(working.joined(separator: ", "))"))
        checks.append(settings.enabled
            ? Check(code: .enabled, status: .pass, evidence: "Handoff is on")
            : Check(code: .enabled, status: .fail, evidence: "Handoff is switched off on this host", fix: "Run 'handoff-peer enable'."))
        if bluetooth != nil {
            let near = trust.entries.keys.filter { proximity.isNear($0, nowMillis: now) }.count
            checks.append(Check(code: .proximity, status: .pass, evidence: "\(near) of \(trust.entries.count) paired device(s) near (threshold \(proximity.settings.thresholdDBM) dBm)"))
        } else {
            checks.append(Check(code: .proximity, status: .off, evidence: "not enforced (Bluetooth not used)"))
        }
        let types = declarations.allTypes()
        checks.append(types.isEmpty
            ? Check(code: .app, status: .fail, evidence: "no app declares an activity type",
                    fix: "Install an app that declares X-Handoff-ActivityTypes in its .desktop file (Docs/APPS.md).")
            : Check(code: .app, status: .pass, evidence: "\(types.count) activity type(s) declared: \(types.sorted().prefix(5).joined(separator: ", "))\(types.count > 5 ? ", ..." : "")"))
        return checks
    }

    private func peerChecks(_ reference: String, nowMillis now: UInt64) async -> (String, [Check]) {
        let codes: [HandoffError.Code] = [.trust, .bluetooth, .network, .enabled, .proximity, .app]
        guard let entry = pairedEntry(matching: reference) else {
            let unpaired = Check(code: .trust, status: .fail, evidence: "'\(reference)' is not a paired device",
                                 fix: "Pair with it first ('handoff-peer pair' there, 'handoff-peer pair \(reference)' here).")
            return (reference, [unpaired] + codes.dropFirst().map { Check(code: $0, status: .off, evidence: "not checked: not paired") })
        }
        let name = entry.name.isEmpty ? Ed25519.deviceID(of: entry.key).description : entry.name
        let peer = peers.peers[entry.key]
        var checks: [Check] = []
        checks.append(Check(code: .trust, status: .pass, evidence: peer == nil ? "paired" : "paired; its announcements verify"))

        // bluetooth: what the peer says about its controller, and whether we hear it at all.
        if bluetooth == nil {
            checks.append(Check(code: .bluetooth, status: .off, evidence: "not used on this host"))
        } else if let peer, peer.senderState.contains(.bluetoothConfigured) && !peer.senderState.contains(.bluetoothWorking) {
            checks.append(Check(code: .bluetooth, status: .fail, evidence: "\(name) says its controller is not working",
                                fix: "On \(name), check the adapter ('sudo handoff-ble-check', 'rfkill list')."))
        } else if let peer, !peer.senderState.contains(.bluetoothConfigured) {
            checks.append(Check(code: .bluetooth, status: .fail, evidence: "\(name) does not use Bluetooth (no --hci), so it sends no beacon",
                                fix: "Start handoffd on \(name) with --hci hci0, or without --hci here too."))
        } else {
            checks.append(Check(code: .bluetooth, status: .pass, evidence: peer == nil ? "state unknown (no announcement yet)" : "\(name)'s controller works"))
        }

        checks.append(await networkCheck(entry: entry, name: name, peer: peer, nowMillis: now))

        if let peer, peer.senderState.contains(.disabled) {
            checks.append(Check(code: .enabled, status: .fail, evidence: "Handoff is switched off on \(name)", fix: "On \(name), run 'handoff-peer enable'."))
        } else {
            checks.append(Check(code: .enabled, status: peer == nil ? .warn : .pass, evidence: peer == nil ? "unknown (no announcement from \(name))" : "on"))
        }

        if bluetooth == nil {
            checks.append(Check(code: .proximity, status: .off, evidence: "not enforced (Bluetooth not used on this host)"))
        } else if proximity.isNear(entry.key, nowMillis: now) {
            checks.append(Check(code: .proximity, status: .pass, evidence: proximityEvidence(entry.key, now)))
        } else {
            checks.append(Check(code: .proximity, status: .fail, evidence: proximityEvidence(entry.key, now),
                                fix: "Bring the two laptops closer together and check that Bluetooth is on for both."))
        }

        if let offer = peer?.offer?.summary {
            let apps = declarations.apps(for: offer.activityType)
            checks.append(apps.isEmpty
                ? Check(code: .app, status: .fail, evidence: "\(name) offers \(offer.activityType), which no app here declares",
                        fix: "Install or start an app that continues \(offer.activityType) (Docs/APPS.md).")
                : Check(code: .app, status: .pass, evidence: "\(offer.activityType) is continued here by \(apps.joined(separator: ", "))"))
        } else {
            checks.append(Check(code: .app, status: .pass, evidence: "\(name) offers nothing now; \(declarations.allTypes().count) type(s) declared here"))
        }
        return (name, checks)
    }

    /// Tells apart: nothing heard at all; multicast filtered while unicast works;
    /// the transfer port refused or silently dropped.
    private func networkCheck(entry: TrustStore.Entry, name: String, peer: Peer?, nowMillis now: UInt64) async -> Check {
        guard let peer else {
            let sighted = recognisedSightings(nowMillis: now).contains { $0.key == entry.key }
            let beacon = proximity.readings[entry.key].map { $0.lastHeardMillis + proximity.settings.freshnessMillis > now } ?? false
            var evidence = "no announcement from \(name) reaches this host"
            if sighted { evidence += ", though mDNS shows its service" }
            if beacon { evidence += ", though its Bluetooth beacon is heard" }
            if bluetooth != nil && !beacon && !sighted {
                return Check(code: .network, status: .warn, evidence: evidence + "; it may be out of range (it sends summaries only to devices it hears)",
                             fix: "See the proximity line.")
            }
            return Check(code: .network, status: .fail, evidence: evidence,
                         fix: "Check that handoffd runs on \(name) and both laptops share a network. " + networkFix(port: configuration.transferPort))
        }
        let paths = paths(of: peer, nowMillis: now)
        let (hosts, port) = (peer.hosts, peer.transferPort)
        let probe = await onThread(name: "doctor probe") { Daemon.probeTransferPort(hosts: hosts, port: port) }
        switch probe {
        case .refused(let host):
            return Check(code: .network, status: .fail, evidence: "\(name)'s transfer port \(port)/tcp at \(host) refuses connections (a firewall rejects it, or nothing listens)",
                         fix: "On \(name): 'sudo ufw allow Handoff' or 'sudo firewall-cmd --permanent --add-service=handoff && sudo firewall-cmd --reload' (or open \(port)/tcp by hand).")
        case .dropped(let host):
            return Check(code: .network, status: .fail, evidence: "\(name)'s transfer port \(port)/tcp at \(host) does not answer: packets are silently dropped (a firewall)",
                         fix: "On \(name): 'sudo ufw allow Handoff' or 'sudo firewall-cmd --permanent --add-service=handoff && sudo firewall-cmd --reload' (or open \(port)/tcp by hand).")
        case .unreachable(let reason):
            return Check(code: .network, status: .fail, evidence: "no usable link to \(name): \(reason)", fix: "Check both laptops' network connection.")
        case .open:
            let multicastHere = discoveryPaths.contains { $0.name == "multicast" }
            let multicastLive = paths.contains("multicast")
            if multicastHere && !multicastLive && paths.contains("unicast") {
                return Check(code: .network, status: .warn,
                             evidence: "announcements from \(name) arrive by unicast (found by mDNS) but not by multicast: the network filters multicast (access-point client isolation or IGMP snooping) or a firewall drops 47180/udp; transfer port \(port)/tcp open",
                             fix: "Handoff works through mDNS; to restore multicast, turn off client isolation on the access point or open 47180/udp ('sudo ufw allow 47180/udp').")
            }
            return Check(code: .network, status: .pass, evidence: "announcements by \(paths.joined(separator: ", ")); transfer port \(port)/tcp open")
        }
    }

    enum PortProbe: Sendable {
        case open, refused(String), dropped(String), unreachable(String)
    }

    /// One TCP connection attempt per address: open, refused (RST), or no answer (dropped).
    nonisolated static func probeTransferPort(hosts: [String], port: UInt16) -> PortProbe {
        var result = PortProbe.unreachable("no address known")
        for host in hosts {
            do {
                let connection = try StreamConnection.connect(to: try SocketAddress(host: host, port: port), timeoutMillis: 2000)
                connection.close()
                return .open
            } catch {
                switch error.errno {
                case ECONNREFUSED: result = .refused(host)
                case ETIMEDOUT: result = .dropped(host)
                default: result = .unreachable("\(host): \(error)")
                }
            }
        }
        return result
    }
}

/// Lets doctor ask the mDNS path whether avahi-daemon is there, without the
/// conditions code knowing the Avahi types.
protocol AvahiDiscoveryStatusReporting {
    var isAvailable: Bool { get }
}
