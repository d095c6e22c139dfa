/// What is known about why a handoff with one peer could fail: gathered by
/// the daemon (no decision there), decided by `ConditionDecision.decide`.
/// Times are wall-clock milliseconds; `nowMillis` is the injected clock.
public struct ConditionEvidence: Sendable, Equatable {
    public enum Purpose: Sendable, Equatable {
        /// An accept; `requireApp` (`--app`): no fallback to the browser or the terminal.
        case accept(requireApp: Bool)
        case doctor
    }

    public enum LocalBluetooth: Sendable, Equatable {
        /// No controller given (`--hci none`): proximity is not enforced.
        case notUsed
        case working(String)
        case failed(String)
    }

    /// One TCP connection attempt to the peer's transfer port.
    public enum PortProbe: Sendable, Equatable {
        case open
        /// Reset: nothing listens, or a firewall rejects.
        case refused(host: String)
        /// No answer: a firewall drops, or no link.
        case dropped(host: String)
        case unreachable(String)
    }

    /// A handshake to the peer's transfer port, then a fetch it cannot serve.
    /// Only answers from the device that proved its identity count.
    public enum HandshakeProbe: Sendable, Equatable {
        /// It answered as a device that trusts this one (and is switched on).
        case trusted
        /// Authenticated refusal: it no longer trusts this device.
        case trustRefused
        /// Authenticated refusal: Handoff is switched off there.
        case disabled
        /// The connection was accepted but the handshake got no answer in time: handoffd
        /// there is frozen or hung (the kernel still accepts connections for it).
        case noAnswer
        case failed(String)
    }

    /// What this host's routing and neighbour tables say of the peer's addresses, asked while
    /// its transfer port did not answer (NeighbourProbe). nil: not known (no on-link address,
    /// or the kernel had no verdict in time).
    public enum Layer3: Sendable, Equatable {
        /// This host has no route to its address.
        case noRoute(host: String)
        /// Its address answered on the link (ARP or neighbour discovery) during the probe: it is on this network.
        case answers(host: String)
        /// Asked on the link during the probe; no answer. `gateway`: this host's default gateway,
        /// and how long ago its own link layer last answered this host.
        case silent(host: String, gateway: String?, gatewayAnsweredSecondsAgo: UInt32?)
    }

    public enum Offer: Sendable, Equatable {
        case none
        case offered(type: String, hasWebpage: Bool)
        case declinedHere(type: String, atMillis: UInt64)
        case expired(type: String, atMillis: UInt64)
        /// Withdrawn before its expiry: resigned or invalidated on the peer.
        case withdrawn(type: String, atMillis: UInt64, how: Withdrawal)
    }

    /// How the peer said it withdrew its offer (sender state); `unknown` from a peer that does not say.
    public enum Withdrawal: Sendable, Equatable {
        case resigned, invalidated, unknown
    }

    public struct Beacon: Sendable, Equatable {
        public var lastHeardMillis: UInt64
        public var smoothedRSSI: Double

        public init(lastHeardMillis: UInt64, smoothedRSSI: Double) {
            self.lastHeardMillis = lastHeardMillis
            self.smoothedRSSI = smoothedRSSI
        }
    }

    /// What is known about the paired device the PEER argument names.
    public struct Peer: Sendable, Equatable {
        public var name: String
        /// When a present announcement last arrived, by path ("multicast", "unicast").
        public var announcementsByPath: [DiscoveryPathName: UInt64] = [:]
        public var ttlMillis: UInt64 = 15_000
        /// What it said about itself in its last announcement (nil: never heard since this daemon started).
        public var state: Announcement.SenderState?
        /// When its goodbye (handoffd stopping) arrived.
        public var goodbyeMillis: UInt64?
        public var beacon: Beacon?
        /// A trusted mDNS record of it is seen now.
        public var mdnsSeen = false
        /// Listed without a break since then (nil: not listed now).
        public var listedSinceMillis: UInt64?
        /// When this host last asked it by multicast, to answer by multicast (the active check).
        public var multicastCheckMillis: UInt64?
        /// How long an answer to that check is awaited: `multicastAnswerWaitMillis` for the daemon's
        /// own checks, less when doctor asked and waited itself.
        public var multicastAnswerWaitMillis = ConditionEvidence.multicastAnswerWaitMillis
        public var transferPort: UInt16 = 47181
        public var portProbe: PortProbe?
        public var handshake: HandshakeProbe?
        public var layer3: Layer3?
        public var offer: Offer = .none
        /// Apps here that declare the offered type.
        public var apps: [String] = []

        public init(name: String) {
            self.name = name
        }

        public var lastAnnouncementMillis: UInt64? { announcementsByPath.values.max() }
    }

    /// How long the daemon's own multicast check waits for its answer.
    public static let multicastAnswerWaitMillis: UInt64 = 10_000

    public var purpose: Purpose
    public var nowMillis: UInt64
    /// For the times in messages ("stopped at 14:02"), in the user's zone.
    public var utcOffsetSeconds = 0
    public var hostName: String
    public var enabled = true
    public var bluetooth: LocalBluetooth = .notUsed
    public var thresholdDBM = -70
    public var freshnessMillis: UInt64 = 10_000
    /// Discovery paths that work here ("multicast", "unicast", "mdns"), and what the others say.
    public var workingPaths: [DiscoveryPathName] = []
    /// Interfaces up with a carrier and an address (nil: not known); empty: no link here.
    public var linksUp: [String]?
    public var brokenPaths = ""
    public var transferPort: UInt16 = 47181
    public var pairedNames: [String] = []
    public var declaredTypes: [String] = []
    /// The PEER argument; nil: doctor for this host alone.
    public var reference: String?
    /// The paired device it names; nil: it names none.
    public var peer: Peer?
    /// This host unpaired a device of that name (when), since it started.
    public var unpairedHereMillis: UInt64?

    public init(purpose: Purpose, nowMillis: UInt64, hostName: String) {
        self.purpose = purpose
        self.nowMillis = nowMillis
        self.hostName = hostName
    }
}

/// Every cause a failed accept or doctor run can name; each maps to one code.
/// Docs/CONDITIONS.md holds this table (a unit test keeps the two equal).
public enum ConditionCause: String, CaseIterable, Sendable {
    case notPaired = "not-paired"
    case unpairedHere = "unpaired-here"
    case peerUntrustedUs = "peer-untrusted-us"
    case disabledHere = "disabled-here"
    case peerDisabled = "peer-disabled"
    case peerStopped = "peer-stopped"
    case peerNotRunning = "peer-not-running"
    case peerNotAnswering = "peer-not-answering"
    case peerAsleep = "peer-asleep"
    case bluetoothDownHere = "bluetooth-down-here"
    case peerBluetoothDown = "peer-bluetooth-down"
    case peerWithoutBluetooth = "peer-without-bluetooth"
    case noNetworkHere = "no-network-here"
    case linkDownHere = "link-down-here"
    case noLink = "no-link"
    case peerUnreachable = "peer-unreachable"
    case clientsIsolated = "clients-isolated"
    case announcementsBlocked = "announcements-blocked"
    case multicastFiltered = "multicast-filtered"
    case transferPortDropped = "transfer-port-dropped"
    case transferPortRefused = "transfer-port-refused"
    case outOfRange = "out-of-range"
    case noApp = "no-app"
    case terminalFallback = "terminal-fallback"
    case nothingOffered = "nothing-offered"
    case declinedHere = "declined-here"
    case offerExpired = "offer-expired"
    case offerWithdrawn = "offer-withdrawn"

    public var code: HandoffError.Code {
        switch self {
        case .notPaired, .unpairedHere, .peerUntrustedUs: .trust
        case .disabledHere, .peerDisabled, .peerStopped, .peerNotRunning, .peerNotAnswering, .peerAsleep: .enabled
        case .bluetoothDownHere, .peerBluetoothDown, .peerWithoutBluetooth: .bluetooth
        case .noNetworkHere, .linkDownHere, .noLink, .peerUnreachable, .clientsIsolated, .announcementsBlocked, .multicastFiltered, .transferPortDropped, .transferPortRefused: .network
        case .outOfRange: .proximity
        case .noApp, .terminalFallback: .app
        case .nothingOffered: .notFound
        case .declinedHere: .declined
        case .offerExpired, .offerWithdrawn: .notCurrent
        }
    }

    /// Warnings do not stop an accept: it works, through a fallback.
    public var isWarning: Bool { self == .multicastFiltered || self == .terminalFallback }
}

public struct ConditionVerdict: Sendable, Equatable {
    public var cause: ConditionCause
    public var message: String
    public var fix: String

    public var code: HandoffError.Code { cause.code }
    public var error: HandoffError { HandoffError(cause.code, message, fix: fix) }
}

/// One line of `doctor`: a transport condition, its status, the evidence and the fix.
public struct ConditionLine: Sendable, Equatable {
    public enum Status: String, Sendable { case pass, fail, warn, off }
    public var code: HandoffError.Code
    public var status: Status
    public var evidence: String
    public var fix: String
}

public enum ConditionDecision {
    public static let transportCodes: [HandoffError.Code] = [.trust, .bluetooth, .network, .enabled, .proximity, .app]

    /// The one cause that explains the evidence, or nil when nothing stands in the way.
    /// This host is checked first (a fault here explains everything after it), then
    /// what the peer said about itself, then what the probes found.
    public static func decide(_ e: ConditionEvidence) -> ConditionVerdict? {
        let reference = e.reference ?? ""
        if e.reference != nil, e.peer == nil {
            if let at = e.unpairedHereMillis {
                return verdict(.unpairedHere, "This host unpaired '\(reference)' at \(clock(at, e)).",
                               "Pair again: 'handoff-peer pair' on one host, 'handoff-peer pair NAME' on the other.")
            }
            return verdict(.notPaired, "No paired device is called '\(reference)'.",
                           "Pair with it first ('handoff-peer pair' there, 'handoff-peer pair \(reference)' here)."
                               + (e.pairedNames.isEmpty ? "" : " Paired devices: \(e.pairedNames.sorted().joined(separator: ", "))."))
        }
        if e.reference == nil, e.pairedNames.isEmpty {
            return verdict(.notPaired, "This host is paired with no device.",
                           "Pair: 'handoff-peer pair' on one host, 'handoff-peer pair NAME' on the other.")
        }
        if !e.enabled {
            return verdict(.disabledHere, "Handoff is switched off on this host.", "Run 'handoff-peer enable'.")
        }
        if case let .failed(text) = e.bluetooth {
            return verdict(.bluetoothDownHere, "This host's Bluetooth controller is not working: \(text).",
                           "Check the adapter ('sudo handoff-ble-check', 'rfkill list', 'bluetoothctl power on'); handoffd reconnects by itself.")
        }
        if let links = e.linksUp, links.isEmpty {
            return verdict(.linkDownHere, "This host has no network link: no interface is up with a carrier and an address (cable unplugged, Wi-Fi off or not connected).",
                           "Plug in the network cable or connect to Wi-Fi; handoffd follows the network by itself.")
        }
        if e.workingPaths.isEmpty {
            return verdict(.noNetworkHere, "No discovery path works on this host: \(e.brokenPaths).",
                           "Connect to a network; start avahi-daemon for mDNS.")
        }
        guard let peer = e.peer else {
            return e.declaredTypes.isEmpty
                ? verdict(.terminalFallback, "No app here declares an activity type: 'handoff-peer accept' prints what peers offer.",
                          "To continue activities in an app, install one that declares X-Handoff-ActivityTypes (Docs/APPS.md).")
                : nil
        }
        return decide(peer: peer, e)
    }

    private static func decide(peer p: ConditionEvidence.Peer, _ e: ConditionEvidence) -> ConditionVerdict? {
        let name = p.name
        let now = e.nowMillis
        let usesBluetooth = e.bluetooth != .notUsed
        let last = p.lastAnnouncementMillis
        let live = last.map { $0 + p.ttlMillis > now } ?? false
        let beaconFresh = p.beacon.map { $0.lastHeardMillis + e.freshnessMillis > now } ?? false
        let near = beaconFresh && (p.beacon?.smoothedRSSI ?? -200) >= Double(e.thresholdDBM)
        let port = "\(p.transferPort)/tcp"

        // Its own words first.
        if let goodbye = p.goodbyeMillis, goodbye >= (last ?? 0) {
            return verdict(.peerStopped, "handoffd on \(name) stopped at \(clock(goodbye, e)) (it said goodbye).",
                           "Start handoffd on \(name) ('systemctl --user start handoffd').")
        }
        if p.handshake == .trustRefused {
            return verdict(.peerUntrustedUs, "\(name) no longer trusts this device: pair again.",
                           "Pair again: 'handoff-peer pair' on \(name), 'handoff-peer pair \(name)' here.")
        }
        if (live && p.state?.contains(.disabled) == true) || p.handshake == .disabled {
            return verdict(.peerDisabled, "Handoff is switched off on \(name).", "On \(name), run 'handoff-peer enable'.")
        }
        // Connected, then silence: whatever else its beacon or announcements say, nothing can be fetched.
        if p.handshake == .noAnswer { return notAnswering(p, e) }
        let peerBluetoothDown = p.state.map { $0.contains(.bluetoothConfigured) && !$0.contains(.bluetoothWorking) } ?? false
        let peerWithoutBluetooth = p.state.map { !$0.contains(.bluetoothConfigured) } ?? false

        let lastWords = last.map { "its last announcement arrived at \(clock($0, e))" } ?? "no announcement from it since this host's handoffd started"
        /// Its transfer port cannot be reached and nothing says it is on the link: what the link says decides.
        func unreachable(_ detail: String) -> ConditionVerdict {
            // No route from here: the two are on different networks, whatever else it did.
            if case let .noRoute(host)? = p.layer3 {
                return verdict(.peerUnreachable, "No route from this host to \(name)'s address \(host): \(lastWords). The two laptops are not on the same network.",
                               "Connect both laptops to the same network (cable, Wi-Fi); check 'ip route' here.")
            }
            if let asleep = asleep(p, e) { return asleep }
            if usesBluetooth && !beaconFresh && last == nil && !p.mdnsSeen {
                return verdict(.outOfRange, "\(name) is not near: \(beaconText(p, e)), and nothing else from it reaches this host.",
                               "Bring the two laptops closer together and check that handoffd runs on \(name).")
            }
            let heard = beaconFresh ? " (its Bluetooth beacon is heard, so it is near and running)" : ""
            switch p.layer3 {
            case let .answers(host)?:
                // On the link (it answers ARP or neighbour discovery), yet nothing of Handoff passes:
                // a firewall there drops it.
                return verdict(.transferPortDropped, "\(name) is on this network (its address \(host) answers on the link), but none of its announcements arrive and its transfer port \(port) does not answer: a firewall on \(name) drops Handoff.",
                               firewallFix(name, p.transferPort))
            case let .silent(host, gateway, gatewayAgo)?:
                let asked = "its address \(host) did not answer on the link when this host asked (no ARP or neighbour reply; 'ip neigh' shows it FAILED)"
                // Near and awake (beacon), this host reaches its gateway, yet the peer gives no
                // link-layer answer: an access point that isolates its clients (public and office
                // Wi-Fi) does exactly that.
                if beaconFresh, let gateway, let ago = gatewayAgo, ago <= 120 {
                    return verdict(.clientsIsolated, "\(name) is near and running (its Bluetooth beacon is heard) and this host reaches its gateway \(gateway) (it answered \(ago) s ago), but \(asked): the network isolates its clients from each other.",
                                   "The access point isolates clients (usual on public and office Wi-Fi): use a network without client isolation (home Wi-Fi, a phone hotspot) or ask for it to be turned off. If \(name) is on another Wi-Fi network, join the same one.")
                }
                return verdict(.peerUnreachable, "\(name) is not on this network: \(asked); \(lastWords)\(heard).",
                               "Connect \(name) to the same network as this host (plug in its cable, turn on its Wi-Fi, join the same Wi-Fi) and check that it is switched on.")
            case .noRoute?, nil:
                break
            }
            // Near and awake, yet nothing passes either way: on public and office Wi-Fi the usual
            // cause is an access point that isolates its clients from each other.
            let isolation = beaconFresh
                ? " On public or office Wi-Fi, the access point may isolate clients from each other (both reach the internet, not each other): use a network without client isolation (home Wi-Fi, a phone hotspot) or ask for it to be turned off."
                : ""
            return verdict(.noLink, "No link to \(name): \(lastWords), and its transfer port \(port) cannot be reached (\(detail))\(heard).",
                           "Check both laptops' network connection (cable, Wi-Fi, same network); a firewall that drops everything from this host does the same." + isolation)
        }
        // An announcement younger than the TTL says only that it was on this network a while ago.
        // Whether it still is, while its port gives no connection, the link says: a silent address or
        // no route means it left (cable pulled, isolated, another network); with no word from the
        // link, an announcement overdue means the same: none came for half its TTL, the longest
        // interval between announcements handoffd allows (--announce-interval).
        let overdue = last.map { $0 + max(p.ttlMillis / 2, 1_000) <= now } ?? true
        let leftTheLink = switch p.layer3 { case .silent?, .noRoute?: true; case .answers?: false; case nil: overdue }

        if live {
            if usesBluetooth && peerBluetoothDown {
                return verdict(.peerBluetoothDown, "\(name) says its Bluetooth controller is not working.",
                               "On \(name), check the adapter ('sudo handoff-ble-check', 'rfkill list', 'bluetoothctl power on').")
            }
            if usesBluetooth && peerWithoutBluetooth {
                return verdict(.peerWithoutBluetooth, "\(name) does not use Bluetooth (no bluetoothd there and no --hci), so it sends no beacon.",
                               "Start bluetoothd on \(name) (or give its handoffd --hci), or use no Bluetooth here either.")
            }
            if usesBluetooth && !near {
                if let asleep = asleep(p, e) { return asleep }
                return verdict(.outOfRange, "\(name) is not near: \(beaconText(p, e)).",
                               "Bring the two laptops closer together.")
            }
            switch p.portProbe {
            case let .refused(host)?:
                return verdict(.transferPortRefused, "\(name)'s transfer port \(port) at \(host) refuses connections (a firewall rejects it, or nothing listens).",
                               firewallFix(name, p.transferPort))
            case let .dropped(host)?:
                // Its announcements arrive and it is still on the link: a firewall on it drops the connection.
                guard !leftTheLink else { return unreachable("\(host) does not answer") }
                return verdict(.transferPortDropped, "\(name)'s announcements arrive, but its transfer port \(port) at \(host) does not answer: packets are silently dropped, by a firewall on \(name).",
                               firewallFix(name, p.transferPort))
            case let .unreachable(reason)?:
                guard !leftTheLink else { return unreachable(reason) }
                return verdict(.noLink, "\(name)'s announcements arrive, but its transfer port cannot be reached: \(reason).",
                               "Check both laptops' network connection.")
            case .open?, nil:
                break
            }
            if let offerVerdict = decideOffer(p, e) { return offerVerdict }
            if e.purpose == .accept(requireApp: true), let appVerdict = decideApp(p, e) { return appVerdict }
            // Two warnings: the degraded network first; the terminal fallback is by design.
            // At rest announcements come by unicast; multicast carries first contact and one copy
            // each 15-minute period, at a random time in it (Docs/PROTOCOL.md), so two copies are at
            // most two periods apart. A peer listed that long from which no multicast came in that
            // time, though asked by multicast a minute before (Discovery.multicastChecksDue), has its
            // multicast filtered.
            let window = 2 * ServiceRecord.rotationSeconds * 1000 + p.ttlMillis
            let multicastRecent = p.announcementsByPath[.multicast].map { $0 + window > now } ?? false
            let listedLongEnough = p.listedSinceMillis.map { $0 + window <= now } ?? false
            // The active check: asked by multicast and no multicast answer in time, while its unicast
            // announcements still arrive (one within half its TTL, the longest interval between two:
            // it runs, and the network carries unicast).
            let checkUnanswered = p.multicastCheckMillis.map { checked in
                checked + p.multicastAnswerWaitMillis <= now && (p.announcementsByPath[.multicast] ?? 0) < checked
                    && (p.announcementsByPath[.unicast].map { $0 + max(p.ttlMillis / 2, 1_000) > now } ?? false)
            } ?? false
            if e.workingPaths.contains(.multicast), listedLongEnough && !multicastRecent || checkUnanswered, p.announcementsByPath[.unicast] != nil {
                return verdict(.multicastFiltered, "Announcements from \(name) arrive by unicast (found by mDNS) but not by multicast: the network filters multicast (access-point client isolation or IGMP snooping) or a firewall drops 47180/udp.",
                               "Handoff works through mDNS; to restore multicast, turn off client isolation on the access point or open 47180/udp ('sudo ufw allow 47180/udp').")
            }
            return decideApp(p, e)
        }

        // Silent: nothing from it within its TTL. The probes tell why.
        if p.handshake == .trusted || p.portProbe == .open && p.handshake == nil {
            if usesBluetooth && peerBluetoothDown {
                return verdict(.peerBluetoothDown, "\(name) runs and is reachable, but its Bluetooth controller is not working (it said so at \(clock(last ?? now, e))), so it hears no beacon and sends nothing.",
                               "On \(name), check the adapter ('sudo handoff-ble-check', 'rfkill list', 'bluetoothctl power on').")
            }
            if usesBluetooth && peerWithoutBluetooth {
                return verdict(.peerWithoutBluetooth, "\(name) does not use Bluetooth (no bluetoothd there and no --hci), so it sends no beacon.",
                               "Start bluetoothd on \(name) (or give its handoffd --hci), or use no Bluetooth here either.")
            }
            if usesBluetooth && !near {
                return verdict(.outOfRange, "\(name) runs and is reachable over the network, but it is not near: \(beaconText(p, e)); it sends its offers only to devices it hears.",
                               "Bring the two laptops closer together.")
            }
            return verdict(.announcementsBlocked, "\(name) runs and answers on its transfer port, but none of its announcements reach this host (\(lastWords)).",
                           "A firewall here (or on \(name)) drops Handoff's announcements: open 47180/udp and \(p.transferPort)/udp ('sudo ufw allow Handoff').")
        }
        switch p.portProbe {
        case let .refused(host)?:
            return verdict(.peerNotRunning, "handoffd on \(name) is not running: \(lastWords) and it did not say goodbye (it was killed or crashed), and its transfer port \(port) at \(host) refuses connections.",
                           "Start handoffd on \(name) ('systemctl --user start handoffd'). If it runs, its firewall rejects Handoff: 'sudo ufw allow Handoff' there.")
        case let .dropped(host)?:
            return unreachable("\(host) does not answer")
        case let .unreachable(reason)?:
            return unreachable(reason)
        case .open?, nil:
            break
        }
        if usesBluetooth && !beaconFresh {
            return verdict(.outOfRange, "\(name) is not near: \(beaconText(p, e)).",
                           "Bring the two laptops closer together and check that Bluetooth and handoffd are on for both.")
        }
        return verdict(.announcementsBlocked, "None of \(name)'s announcements reach this host (\(lastWords))" + (beaconFresh ? ", though its Bluetooth beacon is heard." : "."),
                       "Check that handoffd runs on \(name) and both laptops share a network. " + firewallFix(name, p.transferPort))
    }

    /// Everything from it went quiet together: its beacon stopped within one keepalive of its last
    /// announcement, and its address no longer answers at all. A laptop walking out of range keeps
    /// announcing over the network; a network cut keeps its beacon; a suspended or switched-off
    /// laptop stops both, and its address with them (issue 24: this was "bring them closer").
    private static func asleep(_ p: ConditionEvidence.Peer, _ e: ConditionEvidence) -> ConditionVerdict? {
        guard e.bluetooth != .notUsed, let beacon = p.beacon, beacon.lastHeardMillis + e.freshnessMillis <= e.nowMillis,
              let last = p.lastAnnouncementMillis else { return nil }
        let keepalive = max(p.ttlMillis / 3, 1_000)
        guard beacon.lastHeardMillis + keepalive >= last, last + keepalive + e.freshnessMillis >= beacon.lastHeardMillis else { return nil }
        switch p.portProbe {
        case .dropped?, .unreachable?: break
        default: return nil
        }
        // Its address still answers on the link: awake, and something else is wrong.
        if case .answers? = p.layer3 { return nil }
        let when = clock(max(beacon.lastHeardMillis, last), e)
        return verdict(.peerAsleep, "\(p.name) seems to be asleep or switched off: its Bluetooth beacon, its announcements and its network address all went quiet at about \(when).",
                       "Wake \(p.name) (open its lid, press a key); Handoff resumes by itself when it is back.")
    }

    /// Its transfer port accepts (the kernel does that for a process that no longer runs its
    /// code), but handoffd there never answers the handshake: frozen, hung or suspended,
    /// not stopped (that refuses) and not the network (that gives no connection at all).
    private static func notAnswering(_ p: ConditionEvidence.Peer, _ e: ConditionEvidence) -> ConditionVerdict {
        verdict(.peerNotAnswering, "handoffd on \(p.name) accepts connections on \(p.transferPort)/tcp but does not answer: it is frozen or hung (stopped with SIGSTOP, stuck, or its laptop is waking up).",
                "On \(p.name), restart handoffd ('systemctl --user restart handoffd'); if it happens again, report it with 'journalctl --user -u handoffd'.")
    }

    private static func decideOffer(_ p: ConditionEvidence.Peer, _ e: ConditionEvidence) -> ConditionVerdict? {
        let name = p.name
        switch p.offer {
        case .offered:
            return nil
        case .none:
            return verdict(.nothingOffered, "\(name) offers nothing to continue right now.",
                           "Make an activity current on \(name) (in an app, or 'handoff-peer publish'), then run 'handoff-peer list'.")
        case let .declinedHere(type, at):
            return verdict(.declinedHere, "You declined \(name)'s offer of \(type) at \(clock(at, e)); it stays hidden until \(name) offers something newer.",
                           "Make the activity current again on \(name) (or publish it again) to offer it anew.")
        case let .expired(type, at):
            return verdict(.offerExpired, "\(name)'s offer of \(type) expired at \(clock(at, e)).",
                           "Make the activity current again on \(name), then run 'handoff-peer list'.")
        case let .withdrawn(type, at, how):
            let what = switch how {
            case .resigned: "resigned its offer of \(type) at \(clock(at, e)): it is not current there now"
            case .invalidated: "invalidated its offer of \(type) at \(clock(at, e)): that activity has ended"
            case .unknown: "stopped offering \(type) at \(clock(at, e)) (it was resigned or invalidated there)"
            }
            return verdict(.offerWithdrawn, "\(name) \(what).",
                           "Make an activity current again on \(name), then run 'handoff-peer list'.")
        }
    }

    private static func decideApp(_ p: ConditionEvidence.Peer, _ e: ConditionEvidence) -> ConditionVerdict? {
        guard case let .offered(type, hasWebpage) = p.offer, p.apps.isEmpty else { return nil }
        if e.purpose == .accept(requireApp: true) {
            return verdict(.noApp, "No app on this host declares the activity type \(type).",
                           "Install or start an app that continues \(type): it lists the type in X-Handoff-ActivityTypes in its .desktop file, or registers it over the local API (Docs/APPS.md). Without --app, 'handoff-peer accept' prints it.")
        }
        if hasWebpage { return nil }
        return verdict(.terminalFallback, "No app here declares \(type): 'handoff-peer accept' prints the activity instead.",
                       "To continue it in an app, install one that declares \(type) (Docs/APPS.md).")
    }

    // MARK: - doctor

    /// The six lines of `doctor`: the verdict's condition carries it; every other one passes (or is off), with its evidence.
    public static func lines(_ e: ConditionEvidence, verdict: ConditionVerdict?) -> [ConditionLine] {
        transportCodes.map { code in
            if let verdict, verdict.code == code {
                return ConditionLine(code: code, status: verdict.cause.isWarning ? .warn : .fail, evidence: verdict.message, fix: verdict.fix)
            }
            let (status, text) = passing(code, e, verdict: verdict)
            return ConditionLine(code: code, status: status, evidence: text, fix: "")
        }
    }

    /// A line the verdict does not name. With no failure, the decision found nothing in the
    /// way: it passes. Behind a failure, only what is established now passes; the rest is
    /// `off` (not known while the failure hides it), so no stale evidence reads as a pass.
    private static func passing(_ code: HandoffError.Code, _ e: ConditionEvidence, verdict: ConditionVerdict?) -> (ConditionLine.Status, String) {
        let hidden = verdict.map { !$0.cause.isWarning && $0.code.isTransportCondition } ?? false
        func status(_ established: Bool) -> ConditionLine.Status { established || !hidden ? .pass : .off }
        guard let p = e.peer else {
            switch code {
            case .trust: return (.pass, "\(e.pairedNames.count) paired device(s)")
            case .bluetooth:
                if case let .working(text) = e.bluetooth { return (.pass, "controller \(text)") }
                return (.off, "not used (no bluetoothd, no --hci): proximity is not enforced on this host")
            case .network: return (.pass, "transfer port \(e.transferPort)/tcp listening; discovery by \(e.workingPaths.map(\.rawValue).joined(separator: ", "))")
            case .enabled: return (.pass, "Handoff is on")
            case .proximity:
                guard e.bluetooth != .notUsed else { return (.off, "not enforced (Bluetooth not used on this host)") }
                return (.pass, "threshold \(e.thresholdDBM) dBm, beacons fresh for \(e.freshnessMillis / 1000) s")
            default: return (.pass, "\(e.declaredTypes.count) activity type(s) declared here")
            }
        }
        let live = p.announcementsByPath.filter { $0.value + p.ttlMillis > e.nowMillis }.keys.sorted().map(\.rawValue)
        let established = hidden ? " (not known while \(verdict?.code.rawValue ?? "") fails)" : ""
        switch code {
        case .trust:
            return (.pass, "paired with \(p.name)" + (p.handshake == .trusted ? "; it proved its identity and trusts this host" : ""))
        case .bluetooth:
            guard case let .working(text) = e.bluetooth else { return (.off, "not used (no bluetoothd, no --hci): proximity is not enforced on this host") }
            let works = !live.isEmpty && p.state?.contains(.bluetoothWorking) == true
            return (status(works), "controller \(text); " + (works ? "\(p.name)'s controller works" : "\(p.name)'s controller" + (established.isEmpty ? " state not announced" : established)))
        case .network:
            var text = "transfer port \(e.transferPort)/tcp listening; discovery by \(e.workingPaths.map(\.rawValue).joined(separator: ", "))"
            if !live.isEmpty { text += "; \(p.name)'s announcements by \(live.joined(separator: ", "))" }
            if p.portProbe == .open { text += "; its transfer port \(p.transferPort)/tcp open" }
            return (status(!live.isEmpty || p.portProbe == .open), text)
        case .enabled:
            let on = !live.isEmpty && p.state.map { !$0.contains(.disabled) } == true
            return (status(on), on ? "on here and on \(p.name)" : "on here; \(p.name)" + (established.isEmpty ? ": not heard" : established))
        case .proximity:
            guard e.bluetooth != .notUsed else { return (.off, "not enforced (Bluetooth not used on this host)") }
            let near = p.beacon.map { $0.lastHeardMillis + e.freshnessMillis > e.nowMillis && $0.smoothedRSSI >= Double(e.thresholdDBM) } ?? false
            return (status(near), beaconText(p, e))
        default:
            guard case let .offered(type, hasWebpage) = p.offer else {
                return (.pass, "\(e.declaredTypes.count) activity type(s) declared here")
            }
            if !p.apps.isEmpty { return (.pass, "\(type) is continued here by \(p.apps.joined(separator: ", "))") }
            return (.pass, hasWebpage ? "no app declares \(type); its web page opens in the browser" : "no app declares \(type)")
        }
    }

    // MARK: - Wording

    private static func verdict(_ cause: ConditionCause, _ message: String, _ fix: String) -> ConditionVerdict {
        ConditionVerdict(cause: cause, message: message, fix: fix)
    }

    private static func beaconText(_ p: ConditionEvidence.Peer, _ e: ConditionEvidence) -> String {
        guard let beacon = p.beacon else { return "no Bluetooth beacon heard from it, threshold \(e.thresholdDBM) dBm" }
        return "last beacon \((e.nowMillis &- beacon.lastHeardMillis) / 1000) s ago at \(Int(beacon.smoothedRSSI.rounded())) dBm, threshold \(e.thresholdDBM) dBm"
    }

    static func firewallFix(_ name: String, _ port: UInt16) -> String {
        "If a firewall runs on \(name), open Handoff's ports (installed profiles): 'sudo ufw allow Handoff' or 'sudo firewall-cmd --permanent --add-service=handoff && sudo firewall-cmd --reload' (by hand: 47180/udp, \(port)/tcp, \(port)/udp)."
    }

    /// HH:MM in the user's zone.
    static func clock(_ millis: UInt64, _ e: ConditionEvidence) -> String {
        let seconds = Int64(clamping: millis / 1000) + Int64(e.utcOffsetSeconds)
        let minutes = ((seconds / 60) % 1440 + 1440) % 1440
        let hours = minutes / 60, rest = minutes % 60
        return (hours < 10 ? "0" : "") + "\(hours):" + (rest < 10 ? "0" : "") + "\(rest)"
    }
}

extension HandoffError.Code {
    /// The six transport conditions of the design brief.
    public var isTransportCondition: Bool { ConditionDecision.transportCodes.contains(self) }
}
