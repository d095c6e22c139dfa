import FoundationEssentials
import Glibc
import HandoffAPI
import HandoffCore
import HandoffTransport
import HandoffRuntime

/// A message from handoffd: its JSON and the payload that came with it by descriptor.
public struct ReceivedMessage: Sendable {
    public var json: JSONValue
    public var payload: PayloadBuffer?
}

/// An event from handoffd. `event` is nil for an event this client does not know
/// (a newer daemon); `json` is the line as it came.
public struct ReceivedEvent: Sendable {
    public var event: Event?
    public var json: JSONValue
    /// The payload of a `continued` delivered to this app, when it asked for payloads.
    public var payload: PayloadBuffer?
}

/// A connection to the local handoffd over its API socket (Docs/LOCAL-API.md).
/// Calls block until the daemon answers; concurrent calls take turns. A client
/// that subscribed to events should be read by one thread only.
public final class HandoffClient: @unchecked Sendable {
    // @unchecked Sendable: the connection is written and read only inside `exchange`'s lock
    // (requests) or by the one thread that reads events; the rest is immutable or locked.
    public let socketPath: String
    /// Who offers what this client publishes (Docs/LOCAL-API.md, "Which activity is
    /// current"): each publisher holds one activity, and resigning hands back to the
    /// one offered before. By default the program's name.
    public let publisher: String?
    private let connection: StreamConnection
    /// One request and its reply at a time; holds the last request id.
    private let exchange = Locked<Int64>(0)
    /// Events that arrived while a request waited for its reply: kept for `nextEvent`, never dropped.
    private let bufferedEvents = Locked<[ReceivedEvent]>([])
    /// A reply or event line: a userInfo travels by descriptor, so lines stay small.
    static let maximumLineBytes = 16 * 1024 * 1024

    /// Connects to `socketPath`, else `$HANDOFF_SOCKET`, else the default path.
    /// Refuses a socket whose directory another user could write (or is a
    /// symbolic link), and a listener that runs as another user.
    /// `publisher` nil: resign and invalidate act on every publisher of this host (`handoff-peer`
    /// without --publisher); publish then uses the shared publisher "default".
    public init(socketPath: String? = nil, publisher: String? = HandoffClient.programName) throws(HandoffError) {
        let path = socketPath ?? LocalAPIPath.socketPath(environment: ProcessInfo.processInfo.environment,
                                                         uid: getuid(), isClient: true)
        guard publisher.map(PublisherStack<Activity>.validName) ?? true else {
            throw HandoffError(.invalidRequest, "The publisher name '\(publisher ?? "")' is not 1 to \(PublisherStack<Activity>.maximumNameBytes) printable ASCII characters.",
                               fix: "Give HandoffClient a short name without spaces.")
        }
        self.publisher = publisher
        self.socketPath = path
        let connection = try Self.connectChecked(path: path)
        self.connection = connection
    }

    /// The running program's file name, when it is a valid publisher name, else "app".
    public static var programName: String {
        let name = CommandLine.arguments.first.map { String($0.split(separator: "/").last ?? "") } ?? ""
        return PublisherStack<Activity>.validName(name) ? name : "app"
    }

    /// Connects to the daemon's socket at `path` after checking its directory, and
    /// checks the listener's uid; HandoffClient and continuation streams both connect this way.
    static func connectChecked(path: String) throws(HandoffError) -> StreamConnection {
        let unreachable = { (reason: String) in
            HandoffError(.daemonUnavailable, "Cannot reach handoffd at \(path): \(reason).",
                         fix: "Start handoffd, or point --socket / HANDOFF_SOCKET at the socket it listens on.")
        }
        // Nothing there is the common case ("is handoffd running?"); say so before judging the directory.
        var info = stat()
        guard lstat(path, &info) == 0 else { throw unreachable(String(cString: strerror(errno))) }
        let directory = LocalAPIPath.directory(of: path)
        guard lstat(directory, &info) == 0 else { throw unreachable(String(cString: strerror(errno))) }
        try LocalAPIPath.checkDirectory(directory, HandoffClient.directoryStatus(info), uid: getuid())
        let connection: StreamConnection
        do {
            connection = try StreamConnection.connect(unixPath: path)
        } catch {
            throw unreachable("\(error)")
        }
        do throws(HandoffError) {
            try LocalAPIPath.checkPeer(uid: try HandoffClient.peerUID(connection, path: path), socketPath: path, uid: getuid())
        } catch {
            connection.close()
            throw error
        }
        return connection
    }

    static func directoryStatus(_ info: stat) -> LocalAPIPath.DirectoryStatus {
        let kind: LocalAPIPath.DirectoryStatus.Kind = switch info.st_mode & S_IFMT {
        case S_IFDIR: .directory
        case S_IFLNK: .symbolicLink
        default: .other
        }
        return .init(kind: kind, owner: info.st_uid, permissions: info.st_mode & 0o7777)
    }

    /// The uid of the process on the other end of a connected Unix socket.
    static func peerUID(_ connection: StreamConnection, path: String) throws(HandoffError) -> UInt32 {
        do {
            return try connection.peerUID()
        } catch {
            throw HandoffError(.daemonUnavailable, "Cannot tell who listens on \(path): \(error).",
                               fix: "Point --socket / HANDOFF_SOCKET at a Unix socket of handoffd.")
        }
    }

    deinit { connection.close() }

    /// Sends one request (stating this client's API version) and returns its
    /// `result` with the payload that came by descriptor; a daemon error is thrown
    /// as is. Events that arrive meanwhile go to `onEvent` when given, else they
    /// are kept for `nextEvent`.
    public func send(_ request: Request, passing payload: PayloadBuffer? = nil,
                     onEvent: ((ReceivedEvent) -> Void)? = nil) throws(HandoffError) -> ReceivedMessage {
        try exchange.withLock { (nextID: inout Int64) throws(HandoffError) -> ReceivedMessage in
            nextID += 1
            let envelope = RequestEnvelope(id: .integer(nextID), request: request)
            do throws(SystemError) {
                try withExtendedLifetime(payload) { () throws(SystemError) in
                    try connection.write(JSONWriter.line(envelope.json), passing: payload.map { [$0.descriptorForPassing] } ?? [])
                }
            } catch {
                throw lost(error)
            }
            while true {
                let message = try readMessage()
                // Events may interleave with replies once subscribed; replies carry our id.
                if message.json["event"] != nil {
                    let event = try Self.event(message)
                    if let onEvent {
                        onEvent(event)
                    } else {
                        bufferedEvents.withLock { $0.append(event) }
                    }
                    continue
                }
                guard message.json["id"] == .integer(nextID) else { continue }
                switch try Reply(json: message.json).outcome {
                case let .success(result): return ReceivedMessage(json: result, payload: message.payload)
                case let .failure(error): throw error
                }
            }
        }
    }

    /// Sends one request and returns its `result`.
    @discardableResult
    public func request(_ request: Request) throws(HandoffError) -> JSONValue {
        try send(request).json
    }

    /// Subscribes to events; then read them with `nextEvent()`. With `payloads`, a
    /// `continued` for the app this connection declares brings its payload by descriptor.
    public func subscribe(payloads: Bool = false) throws(HandoffError) {
        _ = try request(.subscribe(payloads: payloads))
    }

    /// Blocks until the daemon sends the next event; nil when the daemon closes the connection.
    public func nextEvent() throws(HandoffError) -> ReceivedEvent? {
        if let buffered = bufferedEvents.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) { return buffered }
        while true {
            let message: ReceivedMessage
            do {
                message = try readMessage()
            } catch where error.code == .daemonUnavailable {
                return nil
            }
            if message.json["event"] != nil { return try Self.event(message) }
        }
    }

    static func event(_ message: ReceivedMessage) throws(HandoffError) -> ReceivedEvent {
        ReceivedEvent(event: try Event(json: message.json), json: message.json, payload: message.payload)
    }

    /// One line and the descriptor it declares, adopted (a sealed memfd, size checked before mapping).
    private func readMessage() throws(HandoffError) -> ReceivedMessage {
        let line: [UInt8]?
        do {
            line = try connection.readLine(maxBytes: Self.maximumLineBytes)
        } catch {
            throw lost(error)
        }
        guard let line else {
            throw HandoffError(.daemonUnavailable, "handoffd closed the connection.", fix: "Check that handoffd is still running (its log says why it stopped).")
        }
        let json = try JSONValue.parse(Data(line))
        guard MessageDescriptors.declared(in: json) > 0 else { return ReceivedMessage(json: json, payload: nil) }
        do {
            let descriptor = try connection.takeDescriptors(1)[0]
            return ReceivedMessage(json: json, payload: try PayloadBuffer(adopting: descriptor, maximumBytes: ActivityLimits.payloadBytes))
        } catch {
            throw HandoffError(.payloadInvalid, "handoffd's payload descriptor is not usable: \(error).",
                               fix: "Make sure the client and handoffd are the same version.")
        }
    }

    private func lost(_ error: SystemError) -> HandoffError {
        HandoffError(.daemonUnavailable, "Lost the connection to handoffd at \(socketPath): \(error).",
                     fix: "Check that handoffd is still running.")
    }
}

// MARK: - Typed calls

extension HandoffClient {
    /// Makes `activity` current: peers that trust this device list it. The payload
    /// goes to handoffd in a sealed memfd, never through JSON. Returns the daemon's
    /// receipt, including warnings (for example a userInfo above Apple's 3 KB guidance).
    @discardableResult
    public func publish(_ activity: Activity) throws(HandoffError) -> PublishReceipt {
        try activity.validate()
        let payload = try Self.seal(activity.encodedPayload())
        return try PublishReceipt(json: send(.publish(.descriptor(0), publisher: publisher), passing: payload).json, context: "the publish receipt")
    }

    /// Publishes an activity given in JSON (scripts, small activities).
    @discardableResult
    public func publish(json activity: Activity) throws(HandoffError) -> PublishReceipt {
        try PublishReceipt(json: request(.publish(.json(activity), publisher: publisher)), context: "the publish receipt")
    }

    static func seal(_ bytes: [UInt8]) throws(HandoffError) -> PayloadBuffer {
        let sealed = bytes.withUnsafeBytes { raw in Result { () throws(SystemError) in try PayloadBuffer.sealed(copying: raw) } }
        switch sealed {
        case let .success(buffer): return buffer
        case let .failure(error):
            throw HandoffError(.internal, "Cannot put the \(bytes.count)-byte payload in a memfd: \(error).",
                               fix: "Free some memory, then publish again.")
        }
    }

    /// Stops offering this publisher's activity; true when it was offered.
    @discardableResult
    public func resign() throws(HandoffError) -> Bool { try request(.resign(publisher: publisher), as: ResignResult.self).resigned }
    /// Ends this publisher's activity; true when it had one.
    @discardableResult
    public func invalidate() throws(HandoffError) -> Bool { try request(.invalidate(publisher: publisher), as: InvalidateResult.self).invalidated }
    /// Offers this publisher's resigned activity again.
    @discardableResult
    public func becomeCurrent() throws(HandoffError) -> PublishReceipt {
        try PublishReceipt(json: request(.becomeCurrent(publisher: publisher)), context: "the publish receipt")
    }

    /// Peers in range, each with its current offer (or none).
    public func list() throws(HandoffError) -> [PeerEntry] {
        try request(.list, as: PeerList.self).peers
    }

    /// A request whose result is read as `type`, the result type its op has (Docs/LOCAL-API.md).
    public func request<Result: JSONCodable>(_ request: Request, as type: Result.Type) throws(HandoffError) -> Result {
        try Result(json: self.request(request), context: "the \(request.op.rawValue) result")
    }

    /// An accept's outcome: where it continues, timings, and the activity decoded from the payload's mapping.
    public struct Accepted: Sendable {
        public var result: AcceptResult
        public var activity: Activity
        /// The payload as handoffd verified it (Activity's payload encoding), mapped read-only.
        public var payload: PayloadBuffer
    }

    /// The offer the user chose: the accept is refused (`not-current`) when the peer offers
    /// something else by now.
    public struct Chosen: Equatable, Sendable {
        public var sequence: Int64
        /// Hex, as `list` gives it.
        public var digest: String?

        public init(sequence: Int64, digest: String? = nil) {
            self.sequence = sequence
            self.digest = digest
        }
    }

    /// Fetches and verifies the offer of `peer` (device id, unique prefix, or name);
    /// the payload comes by descriptor and is decoded from its mapping. The accept carries a
    /// fresh ticket (`AcceptTickets`), so the app that continues it knows this user accepted.
    public func accept(peer: String, requireApp: Bool = false, chosen: Chosen? = nil,
                       onEvent: ((ReceivedEvent) -> Void)? = nil) throws(HandoffError) -> Accepted {
        let reply = try send(.accept(peer: peer, requireApp: requireApp, payload: true, sequence: chosen?.sequence, digest: chosen?.digest,
                                     ticket: AcceptTickets.mint(peer: peer)), onEvent: onEvent)
        let result = try AcceptResult(json: reply.json, context: "the accept result")
        guard let payload = reply.payload else {
            throw HandoffError(.internal, "handoffd accepted but passed no payload.", fix: "Make sure the client and handoffd are the same version.")
        }
        return Accepted(result: result, activity: try Self.activity(from: payload), payload: payload)
    }

    /// Accepts without taking the payload (it goes to the app that continues the activity).
    public func acceptWithoutPayload(peer: String, requireApp: Bool = false, chosen: Chosen? = nil) throws(HandoffError) -> AcceptResult {
        try AcceptResult(json: request(.accept(peer: peer, requireApp: requireApp, payload: false, sequence: chosen?.sequence,
                                               digest: chosen?.digest, ticket: AcceptTickets.mint(peer: peer))), context: "the accept result")
    }

    /// Decodes an activity from a payload mapping (Activity's payload encoding, as verified by handoffd).
    public static func activity(from payload: PayloadBuffer) throws(HandoffError) -> Activity {
        try Activity(payload: Array(payload.bytes))
    }

    /// Hides the offer of `peer`; with `sequence`, only that offer (`not-current` when it changed).
    public func decline(peer: String, sequence: Int64? = nil) throws(HandoffError) -> String {
        try request(.decline(peer: peer, sequence: sequence), as: DeclineResult.self).declined
    }

    public func identity() throws(HandoffError) -> IdentityInfo {
        try IdentityInfo(json: request(.id), context: "id")
    }

    public func pairable() throws(HandoffError) -> [PairableDevice] {
        try request(.pairable, as: PairableList.self).devices
    }

    public func devices() throws(HandoffError) -> [DeviceEntry] {
        try request(.devices, as: DeviceList.self).devices
    }

    public func declarations() throws(HandoffError) -> [AppEntry] {
        try request(.declarations, as: AppList.self).apps
    }

    public func pair(peer: String?, address: String?) throws(HandoffError) -> PairingOffer {
        try PairingOffer(json: request(.pair(peer: peer, address: address)), context: "pair")
    }

    public func pairListen(timeoutSeconds: Int64) throws(HandoffError) -> PairingOffer {
        try PairingOffer(json: request(.pairListen(timeoutSeconds: timeoutSeconds)), context: "pairListen")
    }

    /// Opens pairing for `timeoutSeconds` without waiting: devices that ask reach subscribers as `pairingCode`.
    public func pairOpen(timeoutSeconds: Int64) throws(HandoffError) -> PairingWindow {
        try request(.pairOpen(timeoutSeconds: timeoutSeconds), as: PairingWindow.self)
    }

    public func pairConfirm(session: Int64, accept: Bool) throws(HandoffError) -> PairingResult {
        try PairingResult(json: request(.pairConfirm(session: session, accept: accept)), context: "pairConfirm")
    }

    public func status() throws(HandoffError) -> StatusReport {
        try request(.status, as: StatusReport.self)
    }

    public func doctor(peer: String?) throws(HandoffError) -> DoctorReport {
        try request(.doctor(peer: peer), as: DoctorReport.self)
    }

    public func untrust(peer: String) throws(HandoffError) -> UntrustResult {
        try request(.untrust(peer: peer), as: UntrustResult.self)
    }

    @discardableResult
    public func setEnabled(_ enabled: Bool) throws(HandoffError) -> Bool {
        try request(enabled ? .enable : .disable, as: EnabledResult.self).enabled
    }

    /// The daemon's version and the range it accepts.
    public func hello() throws(HandoffError) -> HelloResult {
        try HelloResult(json: request(.hello), context: "hello")
    }
}
