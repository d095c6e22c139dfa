import Foundation
import HandoffCore
import HandoffCrypto
import HandoffTransport

/// The local API (Docs/LOCAL-API.md): one JSON object per line each way.
/// Requests carry `op` and an optional `id` echoed in the reply.
extension Daemon {
    /// Large enough for a userInfo at its hard limit, base64-encoded.
    static let maximumRequestBytes = ActivityLimits.payloadBytes / 3 * 4 + 1024 * 1024
    static let localSendTimeoutMillis = 5_000

    /// Runs on the client's own thread: read a line, hand it to the actor, write the reply.
    nonisolated func serveLocalClient(_ connection: StreamConnection) {
        defer {
            connection.close()
            waitFor { await self.unsubscribe(connection) }
        }
        // A client whose socket stays full this long has stopped reading: it is
        // disconnected rather than holding a writer (and its events) forever.
        try? connection.setSendTimeout(millis: Self.localSendTimeoutMillis)
        while true {
            let line: [UInt8]?
            do {
                line = try connection.readLine(maxBytes: Self.maximumRequestBytes)
            } catch {
                if error.errno == EMSGSIZE {
                    let reply = Self.reply(id: nil, error: .invalidRequest("The request is longer than \(Self.maximumRequestBytes) bytes."))
                    try? connection.write(Array((reply.encodedLine() + "\n").utf8))
                }
                return
            }
            guard let line else { return }
            if line.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\r") }) { continue }
            guard let reply = waitFor({ await self.handle(line: line, connection: connection) }) else { continue }
            // After awaitStream or openStream succeeded, the connection carries the stream's bytes (Daemon+Streams).
            if let relay = StreamRelay.claim(connection) { return relay.serveApp(reply: Array((reply.encodedLine() + "\n").utf8)) }
            guard (try? connection.write(Array((reply.encodedLine() + "\n").utf8))) != nil else { return }
        }
    }

    /// Never throws: a malformed request gets an error reply and changes nothing.
    func handle(line: [UInt8], connection: StreamConnection) async -> JSONValue? {
        guard let request = try? JSONValue.parse(Data(line)), let fields = request.objectValue else {
            return Self.reply(id: nil, error: .invalidRequest("The request is not a JSON object."))
        }
        let id = fields["id"]
        guard let op = fields["op"]?.stringValue else {
            return Self.reply(id: id, error: .invalidRequest("The request has no \"op\"."))
        }
        do throws(HandoffError) {
            guard let result = try await perform(op, fields, connection: connection, id: id) else { return nil }
            return ["id": id ?? .null, "ok": true, "result": result]
        } catch {
            return Self.reply(id: id, error: error)
        }
    }

    static func reply(id: JSONValue?, error: HandoffError) -> JSONValue {
        ["id": id ?? .null, "ok": false, "error": error.json]
    }

    /// Returns nil when the reply was already sent (subscribe).
    private func perform(_ op: String, _ fields: [String: JSONValue], connection: StreamConnection,
                         id: JSONValue?) async throws(HandoffError) -> JSONValue? {
        switch op {
        case "publish":
            guard let body = fields["activity"] else { throw .invalidRequest("publish needs an \"activity\" object.") }
            try requireEnabledToOffer()
            let entry = try publish(try Activity(json: body))
            offerInvalidated = false
            return publishResult(entry)
        case "becomeCurrent":
            guard let activity = resigned ?? published?.activity else {
                throw HandoffError(.notFound, "There is no resigned activity to make current again.",
                                   fix: "Publish the activity instead.")
            }
            try requireEnabledToOffer()
            let entry = try publish(activity)
            offerInvalidated = false
            return publishResult(entry)
        case "resign":
            let had = published != nil
            if let current = published { resigned = current.activity }
            published = nil
            announce()
            return ["resigned": .bool(had)]
        case "invalidate":
            let had = published != nil || resigned != nil
            published = nil
            resigned = nil
            if had { offerInvalidated = true }
            announce()
            return ["invalidated": .bool(had)]
        case "list":
            return ["peers": .array(peerList())]
        case "accept":
            let (peer, activity, timing) = try await accept(try reference(fields), requireApp: fields["requireApp"]?.boolValue ?? false)
            return ["peer": .string(peer.deviceID.description), "name": .string(peer.name), "activity": activity.json,
                    "deliverTo": .string(deliveryTarget(for: activity.type, hasWebpage: activity.webpageURL != nil).app),
                    "handshakeMillis": .double((timing.handshakeMillis * 1000).rounded() / 1000),
                    "transferMillis": .double((timing.transferMillis * 1000).rounded() / 1000)]
        case "decline":
            let peer = try peers.resolve(try reference(fields))
            guard let offer = peer.visibleOffer(nowMillis: wallClockMillis()) else {
                throw HandoffError(.notFound, "\(peer.name) offers nothing to decline.", fix: "Run 'handoff-peer list'.")
            }
            peers.decline(peer.key, sequence: offer.summary.sequence)
            history.declined(peer.key, sequence: offer.summary.sequence, nowMillis: wallClockMillis())
            broadcast(["event": "declined", "peer": .string(peer.deviceID.description), "type": .string(offer.summary.activityType)])
            return ["declined": .string(peer.deviceID.description)]
        case "status":
            return status()
        case "id":
            return ["deviceId": .string(deviceID.description), "publicKey": .string(identity.publicKey.hex),
                    "name": .string(configuration.name)]
        case "pair":
            let result = await startPairing(reference: fields["peer"]?.stringValue, address: fields["address"]?.stringValue)
            return try pairingOffer(result.get())
        case "pairListen":
            let seconds = Int(clamping: fields["timeoutSeconds"]?.integerValue ?? 120)
            guard (1...3600).contains(seconds) else { throw .invalidRequest("\"timeoutSeconds\" must be 1 to 3600.") }
            return try pairingOffer(await listenForPairing(seconds: seconds).get())
        case "pairConfirm":
            guard let session = fields["session"]?.integerValue, let accept = fields["accept"]?.boolValue else {
                throw .invalidRequest("pairConfirm needs \"session\" (from pair or pairListen) and \"accept\" (true or false).")
            }
            let offer = try await confirmPairing(session: Int(clamping: session), accept: accept).get()
            return ["paired": true, "peer": .string(Ed25519.deviceID(of: offer.key).description), "name": .string(offer.name)]
        case "pairable":
            return ["devices": .array(pairableDevices().map {
                ["peer": .string(Ed25519.deviceID(of: $0.key).description), "name": .string($0.name), "host": .string($0.host)]
            })]
        case "devices":
            let inRange = Set(peers.peers.keys)
            return ["devices": .array(trust.entries.values.sorted { $0.name < $1.name }.map {
                ["peer": .string(Ed25519.deviceID(of: $0.key).description), "name": .string($0.name),
                 "publicKey": .string($0.key.hex), "pairedAtMillis": .integer(Int64(clamping: $0.addedAtMillis)),
                 "inRange": .bool(inRange.contains($0.key)),
                 // Paired before discovery secrets existed: it can no longer be found until paired again.
                 "needsPairingAgain": .bool($0.needsRepairing)]
            })]
        case "enable", "disable":
            try setEnabled(op == "enable")
            return ["enabled": .bool(settings.enabled)]
        case "doctor":
            return try await doctor(reference: fields["peer"]?.stringValue)
        case "declare":
            guard let app = fields["app"]?.stringValue, !app.isEmpty, let list = fields["types"]?.arrayValue else {
                throw .invalidRequest("declare needs \"app\" (a name) and \"types\" (a list of activity types).")
            }
            var types: Set<String> = []
            for item in list {
                guard let type = item.stringValue else { throw .invalidRequest("\"types\" must hold strings.") }
                try Activity.validateType(type)
                types.insert(type)
            }
            // Held while this connection stays open: an app that quits stops declaring.
            declarations.registered[ObjectIdentifier(connection)] = (app, types)
            log.info("app \(app) declares \(types.count) activity type(s)")
            deliverPending(to: connection, app: app, desktopID: fields["desktopId"]?.stringValue, types: types)
            return ["declared": .array(types.sorted().map { .string($0) })]
        case "declarations":
            let disk = AppDeclarations.scanDisk().map { entry -> JSONValue in
                ["app": .string(entry.name), "desktopFile": .string(entry.desktopID), "running": false,
                 "types": .array(entry.types.map { .string($0) })]
            }
            let running = declarations.registered.values.map { entry -> JSONValue in
                ["app": .string(entry.app), "running": true, "types": .array(entry.types.sorted().map { .string($0) })]
            }
            return ["apps": .array(running + disk)]
        case "untrust":
            return try untrustRequest(fields)
        case "awaitStream": return try await awaitStream(fields, connection: connection)
        case "openStream": return try await openStream(fields, connection: connection)
        case "subscribe":
            nextSubscriberID += 1
            let sink = EventSink(connection: connection)
            subscribers[nextSubscriberID] = sink
            _ = sink.send(["id": id ?? .null, "ok": true, "result": ["subscribed": true]])
            return nil
        default:
            throw .invalidRequest("Unknown op '\(op)'. Known: publish, becomeCurrent, resign, invalidate, list, accept, decline, status, id, pair, pairListen, pairConfirm, pairable, devices, untrust, enable, disable, doctor, declare, declarations, subscribe.")
        }
    }

    private func reference(_ fields: [String: JSONValue]) throws(HandoffError) -> String {
        guard let peer = fields["peer"]?.stringValue, !peer.isEmpty else {
            throw .invalidRequest("This op needs \"peer\": a device id (or a unique prefix of it) or a device name.")
        }
        return peer
    }

    private func publishResult(_ entry: PublishedActivity) -> JSONValue {
        let userInfoBytes = entry.activity.encodedUserInfoSize
        var warnings: [JSONValue] = []
        if userInfoBytes > ActivityLimits.recommendedUserInfoBytes {
            warnings.append(.string("userInfo is \(userInfoBytes) bytes, above Apple's 3 KB guidance; it still transfers, but keep activities small."))
        }
        return ["sequence": .integer(Int64(clamping: entry.activity.sequence)),
                "payloadBytes": .integer(Int64(entry.payload.count)),
                "userInfoBytes": .integer(Int64(userInfoBytes)),
                "warnings": .array(warnings)]
    }

    func peerList() -> [JSONValue] {
        let now = wallClockMillis()
        // With Bluetooth on, only devices that are near are listed (design: "near each other").
        return peers.peers.values.filter { isNear($0.key, nowMillis: now) }
            .sorted { ($0.name, $0.deviceID) < ($1.name, $1.deviceID) }.map { peer in
            var fields: [String: JSONValue] = [
                "peer": .string(peer.deviceID.description), "name": .string(peer.name),
                "hosts": .array(peer.hosts.map { .string($0) }), "port": .integer(Int64(peer.transferPort)),
                "lastSeenMillisAgo": .integer(Int64(clamping: now &- peer.lastSeenMillis)),
                "paths": .array(paths(of: peer, nowMillis: now).map { .string($0) }),
                "proximity": proximityJSON(peer.key, nowMillis: now),
            ]
            if let offer = peer.visibleOffer(nowMillis: now) {
                var summary = Self.offerJSON(offer.summary)
                if case var .object(values) = summary {
                    values["ageMillis"] = .integer(Int64(clamping: now &- offer.summary.timestampMillis))
                    // Where accepting it would continue it: an app, "browser" or "terminal" (none here declares it).
                    values["deliverTo"] = .string(deliveryTarget(for: offer.summary.activityType,
                                                                 hasWebpage: peer.senderState.contains(.offerHasWebpageURL)).app)
                    summary = .object(values)
                }
                fields["offer"] = summary
            } else {
                fields["offer"] = .null
            }
            return .object(fields)
        }
    }

    func status() -> JSONValue {
        var current: JSONValue = .null
        if let published {
            current = ["type": .string(published.activity.type), "sequence": .integer(Int64(clamping: published.activity.sequence)),
                       "payloadBytes": .integer(Int64(published.payload.count))]
        }
        return [
            "deviceId": .string(deviceID.description), "publicKey": .string(identity.publicKey.hex),
            "name": .string(configuration.name), "transferPort": .integer(Int64(transferPort)),
            "socket": .string(configuration.socketPath), "stateDirectory": .string(configuration.stateDirectory),
            "uptimeSeconds": .integer(Int64((monotonicMillis() - startedAtMillis) / 1000)),
            "discovery": .array(discoveryPaths.map {
                // Off, no beacon goes out, whatever the controller was last told.
                let state = !settings.enabled && $0.name == DiscoveryPathName.bluetooth.rawValue && bluetooth?.currentStatus.available == true
                    ? "scanning only on \(bluetooth?.currentStatus.adapter ?? configuration.hci ?? "the adapter"): no beacon while Handoff is off" : $0.state
                return ["path": .string($0.name), "state": .string(state)]
            }),
            "peers": .integer(Int64(peers.peers.values.filter { isNear($0.key, nowMillis: wallClockMillis()) }.count)), "trustedDevices": .integer(Int64(trust.entries.count)),
            "drops": peers.drops.json, "budgets": budgetStatus(), "current": current, "mdns": mdnsStatus(), "bluetooth": bluetoothStatusOnAir(),
            // Disabled, the current activity is kept but offered to nobody.
            "enabled": .bool(settings.enabled), "offering": .bool(settings.enabled && published != nil),
            "transfers": ["served": .integer(Int64(servedCount)), "refused": .integer(Int64(refusedCount))],
        ]
    }

    /// Work refused to unauthenticated senders because a budget ran out (Docs/SECURITY.md).
    private func budgetStatus() -> JSONValue {
        func listener(_ listener: StreamListener?) -> JSONValue {
            guard let counters = listener?.counters else { return .null }
            return ["active": .integer(Int64(counters.active)), "refusedOverLimit": .integer(Int64(counters.refusedOverLimit)),
                    "acceptFailures": .integer(Int64(counters.acceptFailures))]
        }
        return ["discovery": inbox?.counters.json ?? .null,
                "transferConnections": listener(transferListener), "localConnections": listener(apiListener)]
    }

    /// Handoff off: no beacon goes out, whatever the controller does.
    private func bluetoothStatusOnAir() -> JSONValue {
        guard case var .object(fields) = bluetoothStatus(), fields["available"] == .bool(true) else { return bluetoothStatus() }
        fields["beacon"] = .bool(settings.enabled)
        if !settings.enabled { fields["state"] = .string("scanning only on \(bluetooth?.currentStatus.adapter ?? configuration.hci ?? "the adapter"): no beacon while Handoff is off") }
        return .object(fields)
    }

    /// Disabled, nothing is offered: publishing then would be a success that offers nothing.
    private func requireEnabledToOffer() throws(HandoffError) {
        guard settings.enabled else {
            throw HandoffError(.enabled, "Handoff is switched off on this host: nothing would be offered.",
                               fix: "Run 'handoff-peer enable', then publish again.")
        }
    }

    private func mdnsStatus() -> JSONValue {
        guard let mdns else { return ["enabled": false] }
        let state = mdns.currentStatus
        let recognised = recognisedSightings(nowMillis: wallClockMillis())
        return ["enabled": true, "available": .bool(state.available), "state": .string(state.text),
                "instance": state.publishedInstance.map { .string($0) } ?? .null,
                "servicesSeen": .integer(Int64(sightings.count)),
                "trustedServicesSeen": .integer(Int64(Set(recognised.map(\.sighting.instance)).count))]
    }

    private func pairingOffer(_ offer: PairingState.Offer) -> JSONValue {
        ["session": .integer(Int64(offer.session)), "code": .string(offer.code), "name": .string(offer.name),
         "peer": .string(Ed25519.deviceID(of: offer.key).description)]
    }

    private func untrustRequest(_ fields: [String: JSONValue]) throws(HandoffError) -> JSONValue {
        guard let text = fields["peer"]?.stringValue, !text.isEmpty else {
            throw .invalidRequest("untrust needs \"peer\": a device name, device id (or a unique prefix) or public key.")
        }
        guard let key = try pairedKey(matching: text), let entry = trust.entries[key] else {
            throw HandoffError(.notFound, "No paired device is called or has the id '\(text)'.",
                               fix: "Run 'handoff-peer devices' to see the paired devices, their names and ids.")
        }
        try trust.remove(entry.key, nowMillis: wallClockMillis())
        history.unpairedHere(entry.key, name: entry.name, nowMillis: wallClockMillis())
        emit(peers.remove(entry.key))
        trustChanged()
        log.info("no longer trusting \(Ed25519.deviceID(of: entry.key))")
        return ["untrusted": .string(Ed25519.deviceID(of: entry.key).description)]
    }

    /// A local client went away: its subscription and its app registration end.
    func unsubscribe(_ connection: StreamConnection) {
        subscribers = subscribers.filter { $0.value.connection !== connection }
        if declarations.registered.removeValue(forKey: ObjectIdentifier(connection)) != nil {
            log.info("an app's run-time declaration ended with its connection")
        }
    }
}
