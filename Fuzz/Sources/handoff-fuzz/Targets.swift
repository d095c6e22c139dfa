import Foundation
import HandoffAPI
import HandoffCommandLine
import HandoffCore

/// One entry per parser that reads untrusted bytes or text. Each feeds the
/// input to the parser and, when it is accepted, checks a property the rest of
/// the program relies on (mostly: the encoding is canonical, so decoding and
/// encoding again gives the same bytes). A failed `check` is a finding: it
/// crashes, and libFuzzer keeps the input.
enum Targets {
    static let all: [String: @Sendable ([UInt8]) -> Void] = [
        // The local API, the CLI's --user-info, the trust store and settings files.
        "json": json,
        "activity-json": activityJSON,
        "local-api-message": localAPIMessage,
        // What handoffd asks handoff-launch for, and its answers.
        "launch-message": launchMessage,
        // Payload and its userInfo, fetched from a peer after accept.
        "plist": plist,
        "payload": payload,
        // The receiver's check of a fetched payload, in place: it must agree with the decoder.
        "payload-scan": payloadScan,
        // Datagrams: summaries inside announcements, sealed announcements, the peer table.
        "summary": summary,
        "announcement": announcement,
        "datagram": datagram,
        // The transfer socket's frames.
        "transfer-frame": transferFrame,
        // Continuation streams: control messages, record lengths, the order of records.
        "stream-control": streamControl,
        // mDNS TXT records, device ids and content identifiers typed or received.
        "service-record": serviceRecord,
        "identifiers": identifiers,
        // .desktop files of apps.
        "desktop-entry": desktopEntry,
        // Bluetooth: HCI events, H4 streams, advertising data.
        "hci-event": hciEvent,
        "h4": h4,
        // The kernel's route netlink replies the conditions read (a silent peer's neighbour entry).
        "route-netlink": routeNetlink,
        // handoff-peer's command line.
        "command-line": commandLine,
        // The session's publishers: the browser extension's messages, the recently-used list, documents.conf.
        "native-message": DesktopTargets.nativeMessage,
        "recently-used": DesktopTargets.recentlyUsed,
        "documents": DesktopTargets.documentSettingsAndPlacement,
        // HandoffCrypto: what arrives before any key is trusted.
        "sealed-announcement": CryptoTargets.sealedAnnouncement,
        "handshake-hello-parse": CryptoTargets.handshakeHelloParse,
        "handshake-hello": CryptoTargets.handshakeHello,
        "handshake-server-hello": CryptoTargets.handshakeServerHello,
        "handshake-client-auth": CryptoTargets.handshakeClientAuth,
        "records": CryptoTargets.records,
        // Our AES-256-GCM against libsodium's, on any key, nonce, data and record.
        "aes-gcm": CryptoTargets.aesGCM,
    ]

    static func check(_ condition: @autoclosure () -> Bool, _ what: String) {
        if !condition() {
            // A trap, which libFuzzer reports as a crash with the input that caused it.
            fatalError("handoff-fuzz: property failed: \(what)")
        }
    }

    static func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    /// NUL-separated strings, for parsers that take a list (TXT records, argv).
    static func strings(_ bytes: [UInt8]) -> [String] {
        bytes.split(separator: 0, omittingEmptySubsequences: false).map { text(Array($0)) }
    }

    static func json(_ bytes: [UInt8]) {
        guard let value = try? JSONValue.parse(Data(bytes)) else { return }
        // What the daemon writes back must parse again (replies, trust store).
        check((try? JSONValue.parse(value.encodedLine())) != nil, "encodedLine reparses")
        check((try? JSONValue.parse(value.prettyPrinted())) != nil, "prettyPrinted reparses")
    }

    /// Every reply result and event a client reads (JSONValueCoding): one that is read must
    /// write back to a value that reads as the same thing.
    static func localAPIMessage(_ bytes: [UInt8]) {
        guard let value = try? JSONValue.parse(Data(bytes)) else { return }
        func roundTrip<T: JSONCodable>(_ type: T.Type) {
            guard let decoded = try? T(json: value, context: "fuzz") else { return }
            check((try? T(json: decoded.json, context: "fuzz")) == decoded, "\(T.self) reads back as itself")
        }
        roundTrip(ActivityHeader.self)
        roundTrip(OfferInfo.self)
        roundTrip(PeerEntry.self)
        roundTrip(PublishReceipt.self)
        roundTrip(AcceptResult.self)
        roundTrip(PairingOffer.self)
        roundTrip(PairingResult.self)
        roundTrip(PairableDevice.self)
        roundTrip(DeviceEntry.self)
        roundTrip(AppEntry.self)
        roundTrip(IdentityInfo.self)
        roundTrip(HelloResult.self)
        roundTrip(ContinuedEvent.self)
        roundTrip(TransferProgress.self)
        roundTrip(TransferWaiting.self)
        if let event = try? Event(json: value) {
            check((try? Event(json: event.json)) == event, "an event reads back as itself")
        }
        if let reply = try? Reply(json: value) {
            check((try? Reply(json: reply.json)) == reply, "a reply reads back as itself")
        }
    }

    static func launchMessage(_ bytes: [UInt8]) {
        if let request = try? LaunchRequest.parse(bytes) {
            check((try? LaunchRequest.parse(Array(request.line.dropLast()))) == request, "a launch request reads back as itself")
            check(request.kind == .browser || LaunchRequest.isDesktopID(request.desktopID ?? ""), "an app request names a .desktop file")
        }
        if let reply = try? LaunchReply.parse(bytes) {
            check((try? LaunchReply.parse(Array(reply.line.dropLast()))) == reply, "a launcher reply reads back as itself")
        }
    }

    static func activityJSON(_ bytes: [UInt8]) {
        guard let value = try? JSONValue.parse(Data(bytes)), let activity = try? Activity(json: value) else { return }
        _ = try? PropertyListValue(json: value)
        guard (try? activity.validate()) != nil else { return }
        // A publish the daemon accepts must reach the peer as the same activity.
        let payload = activity.encodedPayload()
        let received = try? Activity(payload: payload)
        check(received == activity, "a validated activity survives its payload encoding")
        check(received?.encodedPayload() == payload, "payload encoding is canonical")
        _ = activity.json.encodedLine()
    }

    static func plist(_ bytes: [UInt8]) {
        var reader = ByteReader(bytes)
        guard let value = try? PropertyListValue(from: &reader) else { return }
        check(value.encoded == Array(bytes[0..<reader.offset]), "one encoding per value")
        check((try? value.validate()) != nil, "a decoded value validates")
        // The JSON form handed to apps maps back to the same value.
        let json = value.json
        check((try? JSONValue.parse(json.encodedLine())) != nil, "its JSON parses")
    }

    static func payload(_ bytes: [UInt8]) {
        guard let activity = try? Activity(payload: bytes) else { return }
        check(activity.encodedPayload() == bytes, "one encoding per payload")
        check((try? activity.validate()) != nil, "a decoded payload validates")
        _ = activity.json.encodedLine()
    }

    static func payloadScan(_ bytes: [UInt8]) {
        let scanned = bytes.withUnsafeBytes { raw in Result { () throws(HandoffError) in try Activity.scanPayload(raw) } }
        let decoded = Result { () throws(HandoffError) in try Activity(payload: bytes) }
        switch (scanned, decoded) {
        case let (.success(header), .success(activity)):
            check(header.type == activity.type && header.title == activity.title && header.sequence == activity.sequence
                  && header.targetContentIdentifier == activity.targetContentIdentifier && header.webpageURL == activity.webpageURL
                  && header.expiresAtMillis == activity.expiresAtMillis, "the scan reads the decoder's fixed fields")
            check(header.userInfoOffset + header.userInfoBytes == bytes.count, "the userInfo runs to the end")
        case let (.failure(scanError), .failure(decodeError)):
            check(scanError == decodeError, "the scan refuses with the decoder's error")
        default:
            check(false, "the scan and the decoder disagree on whether to accept")
        }
    }

    static func summary(_ bytes: [UInt8]) {
        guard let signed = try? SignedSummary(decoding: bytes) else { return }
        check(signed.encoded == bytes, "summary bytes are kept as received")
        check((try? signed.summary.encodedBody()) == signed.body, "one encoding per summary")
    }

    static func announcement(_ bytes: [UInt8]) {
        if let received = try? ReceivedAnnouncement(decoding: bytes) {
            check((try? received.announcement.encodedBody()) == received.body, "one encoding per announcement")
        }
        if let sealed = try? SealedAnnouncement(decoding: bytes) {
            check(sealed.encoded == bytes, "sealed announcement bytes are kept as received")
        }
        _ = SealedAnnouncement.version(of: bytes)
    }

    static func datagram(_ bytes: [UInt8]) {
        CryptoTargets.datagram(bytes)
    }

    static func transferFrame(_ bytes: [UInt8]) {
        if bytes.count >= TransferFrame.headerBytes {
            let header = Array(bytes.prefix(TransferFrame.headerBytes))
            let authenticated = try? TransferFrame.bodyLength(header: header, limits: .authenticated)
            // Before authentication a stranger's header is judged alone: only small handshake
            // frames and refusals pass, and never a length the authenticated limits refuse.
            if let clear = try? TransferFrame.bodyLength(header: header, limits: .clear) {
                check(authenticated.map { $0 == clear } ?? false, "what the clear limits take, the authenticated ones take too")
                check(clear.length <= TransferFrame.maximumRefusalBodyBytes, "the clear limits bound the body")
            }
        }
        guard let frame = try? TransferFrame(decoding: bytes) else { return }
        // Refusal messages are shown to people with unsafe characters dropped, so only they may differ.
        if case .refusal = frame { return }
        check(frame.encoded() == bytes, "one encoding per frame")
        // A resume names a byte inside the largest payload and never byte 0 (that is a plain fetch or payload).
        switch frame {
        case let .fetch(request) where request.offset > 0:
            check(bytes[1] == 15 && request.offset < UInt64(TransferFrame.maximumBodyBytes), "a resumed fetch is kind 15, in range")
        case let .payloadFrom(offset, rest):
            check(offset > 0 && Int(offset) + rest.count <= TransferFrame.maximumBodyBytes, "a resumed payload stays inside the limit")
        default:
            break
        }
    }

    static func streamControl(_ bytes: [UInt8]) {
        if let frame = try? ContinuationStreamFrame(bytes) {
            check(frame.encoded() == bytes, "one encoding per stream control message")
        }
        if let length = bytes.withUnsafeBytes({ try? ContinuationStreamFrame.sealedLength(prefix: $0) }) {
            check(length >= ContinuationStreamFrame.sealOverheadBytes && length <= ContinuationStreamFrame.maximumRecordBytes,
                  "a record length is bounded before anything is read")
        }
        // The bytes as a sequence of (tag, size) records: the receiver's state only moves forward.
        var inbound = StreamInbound()
        for pair in stride(from: 0, to: bytes.count - 1, by: 2) {
            let before = inbound.state
            if (try? inbound.received(tag: bytes[pair] & 3, plaintextBytes: Int(bytes[pair + 1]))) == nil {
                check(inbound.state == before, "a refused record changes nothing")
                return
            }
            check(inbound.state != .control, "after a record the stream is past its control message")
        }
    }

    static func serviceRecord(_ bytes: [UInt8]) {
        guard let record = try? ServiceRecord(txt: strings(bytes)) else { return }
        check((try? ServiceRecord(txt: record.txt)) == record, "a record survives its TXT strings")
    }

    static func identifiers(_ bytes: [UInt8]) {
        let text = text(bytes)
        if let id = DeviceID(parsing: text) {
            check(DeviceID(parsing: id.description) == id, "a device id survives its grouped form")
        }
        _ = DeviceID.normalize(text)
        _ = DeviceID(fingerprint: bytes)
        if let identifier = ContentIdentifier(parsing: text) {
            check(ContentIdentifier(parsing: identifier.description) == identifier, "a content identifier round-trips")
        }
        if let raw = Hex.decode(text) {
            check(Hex.encode(raw) == text.lowercased(), "hex round-trips")
        }
        _ = DeviceKey(hex: text)
        _ = Activity.containsUnsafeCharacters(text)
        _ = try? Activity.validateType(text)
        _ = try? Activity.validateWebpageURL(text)
        _ = text.utf8Prefix(maxBytes: Int(bytes.first ?? 0))
    }

    static func desktopEntry(_ bytes: [UInt8]) {
        _ = try? DesktopEntry(parsing: text(bytes))
    }

    static func hciEvent(_ bytes: [UInt8]) {
        if let event = try? HCIEvent(packet: bytes), case let .advertisingReports(reports) = event {
            for report in reports { _ = Beacon(advertisingData: report.data) }
        }
        if let beacon = Beacon(advertisingData: bytes) {
            check(beacon.token.count == Beacon.tokenBytes, "a beacon's token has its fixed size")
        }
    }

    static func routeNetlink(_ bytes: [UInt8]) {
        guard let messages = try? RouteNetlink.messages(in: bytes) else { return }
        for message in messages {
            _ = RouteNetlink.route(message)
            _ = RouteNetlink.errorNumber(message)
            if let neighbour = RouteNetlink.neighbour(message) {
                check(neighbour.address.count == 4 || neighbour.address.count == 16, "a neighbour's address is IPv4 or IPv6")
            }
        }
    }

    /// The first byte sets the chunk size, so packets split across reads are tried too.
    static func h4(_ bytes: [UInt8]) {
        guard let first = bytes.first else { return }
        let chunk = Int(first % 64) + 1
        var deframer = H4Deframer()
        var rest = bytes.dropFirst()
        while !rest.isEmpty {
            guard (try? deframer.append(Array(rest.prefix(chunk)))) != nil else { return }
            rest = rest.dropFirst(chunk)
            while true {
                guard let packet = (try? deframer.next()) ?? nil else { break }
                if packet.type == HCIEvent.packetType { _ = try? HCIEvent(packet: packet.packet) }
            }
        }
    }

    /// A table shaped like handoff-peer's: flags, options with values, a variadic argument.
    static let spec = CommandSpec(
        name: "publish", abstract: "Offer an activity.",
        arguments: [.init("TYPE", help: "type"), .init("TITLE", optional: true, help: "title"), .init("EXTRA...", optional: true, help: "more")],
        options: [.init("json", help: "JSON"), .init("user-info-file", value: "FILE", help: "userInfo"),
                  .init("expires-in", value: "SECONDS", help: "expiry"), .init("socket", value: "PATH", help: "socket")])

    static func commandLine(_ bytes: [UInt8]) {
        // Long tokens make the edit-distance suggestion quadratic; argv is bounded by the kernel, not by us.
        guard bytes.count <= 4096 else { return }
        _ = try? spec.parse(strings(bytes))
    }
}
