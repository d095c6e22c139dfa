import Glibc
import HandoffAPI
import HandoffCore
import HandoffTransport
import HandoffRuntime
import Synchronization

/// One local API client, served on the event loop: no thread waits for it. Its request lines
/// are read there one at a time (the next only after the last one's reply is queued), and
/// everything it is sent, replies and events, is written without blocking from whichever
/// thread sends it; what the socket does not take at once is written when it becomes
/// writable. A client that stops reading costs at most `maximumBacklog` queued messages and
/// `stallMillis` of patience, never a thread; then it is disconnected.
///
/// The connection closes once: `close()` (or the peer leaving) shuts it down and stops the
/// watch; its descriptor number is released when the last reference goes (StreamConnection).
final class LocalSession: Sendable {
    static let maximumBacklog = 1024

    let connection: StreamConnection
    private let loop: EventLoop
    private let stallMillis: UInt64
    private let maximumLineBytes: Int

    private struct Message {
        var bytes: [UInt8]
        var sent = 0
        var descriptors: [Int32]
        /// Kept mapped until its descriptor has been passed on.
        var payload: PayloadBuffer?
    }

    private struct State {
        var watch: EventLoop.Watch?
        var outbound: [Message] = []
        /// A request is with the daemon: no more lines are read until its reply is queued.
        var busy = false
        /// Complete lines read and not yet handed on (a client may send several in one write).
        var pending: [[UInt8]] = []
        var nextPending = 0
        var reading = false
        /// The client ended its side: close once everything for it is written.
        var ended = false
        var closed = false
        /// Armed while the socket takes nothing: a client that reads nothing for this long is disconnected.
        var stall: EventLoop.Deadline?
        var onLine: (@Sendable (LocalSession, [UInt8]) -> Void)?
        var onClose: (@Sendable (LocalSession) -> Void)?
    }

    private let state = Locked(State())
    /// Set by `subscribe` or `declare` with `payloads`: the app takes its continuations' payloads by descriptor.
    private let payloads = Atomic<Bool>(false)

    init(connection: StreamConnection, loop: EventLoop, stallMillis: UInt64 = 5_000, maximumLineBytes: Int = Daemon.maximumRequestBytes) {
        self.connection = connection
        self.loop = loop
        self.stallMillis = stallMillis
        self.maximumLineBytes = maximumLineBytes
    }

    var wantsPayloads: Bool {
        get { payloads.load(ordering: .relaxed) }
        set { payloads.store(newValue, ordering: .relaxed) }
    }

    var isClosed: Bool { state.withLock { $0.closed } }

    /// Starts reading request lines; `onLine` runs on the loop for each, and the next comes only
    /// after `requestDone()`. `onClose` runs once, when the session ends (either side).
    func start(onLine: @escaping @Sendable (LocalSession, [UInt8]) -> Void, onClose: @escaping @Sendable (LocalSession) -> Void) {
        let started = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.onLine = onLine
            state.onClose = onClose
            state.reading = true
            return true
        }
        if started { loop.execute { [self] in ensureWatched() } } else { onClose(self) }
    }

    /// Queues one message (a reply or an event line, with the payload's descriptor attached to its
    /// first byte). False once the client is gone or hopelessly behind: then it is disconnected.
    @discardableResult
    func send(line: [UInt8], payload: PayloadBuffer? = nil) -> Bool {
        // nil: over the backlog. `waiting`: the socket took not all of it, and nothing was waiting before.
        let outcome = state.withLock { state -> (taken: Bool, waiting: Bool)? in
            guard !state.closed else { return (false, false) }
            guard state.outbound.count < Self.maximumBacklog else { return nil }
            state.outbound.append(Message(bytes: line, descriptors: payload.map { [$0.descriptorForPassing] } ?? [], payload: payload))
            guard state.outbound.count == 1 else { return (true, false) }
            flush(&state)
            return (!state.closed, !state.closed && !state.outbound.isEmpty)
        }
        guard let outcome else {
            close()
            return false
        }
        // The rest goes when the socket is writable: the loop watches for that from now on.
        if outcome.waiting { loop.execute { [self] in ensureWatched() } }
        return outcome.taken
    }

    func send(_ event: Event, payload: PayloadBuffer? = nil) -> Bool {
        send(line: JSONWriter.line(event.json), payload: payload)
    }

    /// The request read last has its reply queued: read the next one.
    func requestDone() {
        loop.execute { [self] in
            state.withLock { $0.busy = false }
            process()
        }
    }

    /// Stops serving on the loop and gives the connection to `take`, on a thread of its own (a
    /// continuation stream's relay, after its success reply); the session ends when `take` returns.
    /// What was still queued for the client is written first, on that thread.
    func handOver(_ take: @escaping @Sendable () -> Void) {
        loop.execute { [self] in
            let (watch, stall, onClose, queued) = state.withLock { state in
                state.closed = true
                defer { (state.watch, state.stall, state.onClose, state.onLine, state.outbound) = (nil, nil, nil, nil, []) }
                return (state.watch, state.stall, state.onClose, state.outbound)
            }
            if let stall { loop.cancel(stall) }
            watch?.close()
            Threads.start("stream relay") { [self] in
                for message in queued {
                    let written = withExtendedLifetime(message.payload) {
                        (try? connection.write(Array(message.bytes[message.sent...]), passing: message.sent == 0 ? message.descriptors : [])) != nil
                    }
                    if !written { break }
                }
                // Whether or not those went: the relay's own first write fails on a dead socket, and it
                // tells the waiting side so (it must never be left waiting for the reply).
                take()
                connection.close()
                onClose?(self)
            }
        }
    }

    /// Ends the session: the connection is shut down at once and the watch stops on the loop.
    func close() {
        let first = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.closed = true
            state.outbound.removeAll()
            return true
        }
        if first { finishClosing() }
    }

    /// Before the daemon exits: waits at most `millis` for every session's queued messages to be
    /// written, then ends them all. Blocks the calling thread, never an actor or the loop.
    static func finish(_ sessions: [LocalSession], withinMillis millis: Int) {
        let end = monotonicMillis() &+ UInt64(max(0, millis))
        while monotonicMillis() < end, sessions.contains(where: { $0.state.withLock { !$0.closed && !$0.outbound.isEmpty } }) {
            usleep(2_000)
        }
        for session in sessions { session.close() }
    }

    // MARK: - On the loop

    /// Registers the connection with the loop (once), or brings its interest up to date.
    private func ensureWatched() {
        let (current, interest, closed) = state.withLock { state in (state.watch, wantedInterest(state), state.closed) }
        guard !closed else { return }
        if let current {
            current.update(interest)
            return
        }
        do {
            let watch = try loop.watch(borrowing: connection.descriptor, interest) { [self] readiness in ready(readiness) }
            let keep = state.withLock { state -> Bool in
                guard !state.closed else { return false }
                state.watch = watch
                return true
            }
            if !keep { watch.close() }
        } catch {
            close()
        }
    }

    private func wantedInterest(_ state: State) -> EventLoop.Interest {
        var interest: EventLoop.Interest = []
        // The next request is read once the last reply is written, not just queued: a client that
        // pipelines requests gets them answered at the pace it reads, never disconnected for it.
        if state.reading && !state.busy && !state.ended && state.nextPending == state.pending.count && state.outbound.isEmpty {
            interest.insert(.readable)
        }
        if !state.outbound.isEmpty { interest.insert(.writable) }
        return interest
    }

    private func ready(_ readiness: EventLoop.Readiness) {
        if readiness.isWritable { state.withLock { flush(&$0) } }
        if readiness.isReadable { receive() }
        // Hung up with nothing more to read (or failed): nobody is there to answer.
        if readiness.isFailed || (readiness.isHungUp && !readiness.isReadable) {
            close()
            return
        }
        process()
    }

    /// Reads what is waiting, a bounded amount per turn (the descriptor stays ready for the rest).
    private func receive() {
        for _ in 0..<16 {
            let arrival: StreamConnection.Arrival
            do {
                arrival = try connection.receiveWaiting()
            } catch {
                close()
                return
            }
            switch arrival {
            case .bytes: continue
            case .nothing: return
            case .ended:
                state.withLock { $0.ended = true }
                return
            }
        }
    }

    /// Hands on the next complete line when no request is in flight; closes an ended session
    /// once its last reply is written; keeps the watch's interest in step.
    private func process() {
        let handler = state.withLock { state -> (@Sendable (LocalSession, [UInt8]) -> Void)? in
            guard !state.closed, state.reading, !state.busy, state.outbound.isEmpty else { return nil }
            return state.onLine
        }
        if let handler {
            var line: [UInt8]?
            do {
                line = try nextLine()
            } catch {
                if error.errno == EMSGSIZE {
                    let reply = Reply(id: nil, outcome: .failure(.invalidRequest("The request is longer than \(maximumLineBytes) bytes; a larger userInfo goes by descriptor (payloadFd), as HandoffKit and handoff-peer publish send it.")))
                    send(line: JSONWriter.line(reply.json))
                }
                state.withLock { $0.ended = true }
                finishIfEnded()
                return
            }
            if let line {
                state.withLock { $0.busy = true }
                updateInterest()
                handler(self, line)
                return
            }
        }
        finishIfEnded()
        updateInterest()
    }

    /// The next line read and not handed on. Every complete line buffered is taken at once, so the
    /// buffer moves once per read, not once per line.
    private func nextLine() throws(SystemError) -> [UInt8]? {
        if let line = state.withLock({ state -> [UInt8]? in
            guard state.nextPending < state.pending.count else { return nil }
            defer { state.nextPending += 1 }
            return state.pending[state.nextPending]
        }) { return line }
        var lines = try connection.bufferedLines(maxBytes: maximumLineBytes)
        guard !lines.isEmpty else { return nil }
        let first = lines.removeFirst()
        state.withLock { state in
            state.pending = lines
            state.nextPending = 0
        }
        return first
    }

    private func finishIfEnded() {
        let done = state.withLock { $0.ended && !$0.busy && $0.outbound.isEmpty && !$0.closed && $0.nextPending == $0.pending.count }
        if done { close() }
    }

    private func updateInterest() {
        let (watch, interest) = state.withLock { ($0.watch, wantedInterest($0)) }
        watch?.update(interest)
    }

    /// Writes queued messages until the socket takes no more. On the caller's thread, under the lock.
    private func flush(_ state: inout State) {
        while !state.closed, var message = state.outbound.first {
            let sent: Int
            do {
                sent = try connection.sendWaiting(message.bytes, from: message.sent, passing: message.descriptors)
            } catch {
                state.closed = true
                state.outbound.removeAll()
                // The rest of the ending (the watch, onClose) happens on the loop.
                loop.execute { [self] in finishClosing() }
                return
            }
            if sent == 0 {
                if state.stall == nil {
                    state.stall = loop.after(millis: stallMillis) { [self] in close() }
                }
                return
            }
            if let stall = state.stall {
                loop.cancel(stall)
                state.stall = nil
            }
            message.sent += sent
            if message.sent == message.bytes.count {
                state.outbound.removeFirst()
            } else {
                message.descriptors = []
                state.outbound[0] = message
            }
        }
        if state.outbound.isEmpty, state.ended, !state.busy, !state.closed { loop.execute { [self] in finishIfEnded() } }
    }

    /// After `closed` was set (by `close()`, or by a write that failed under the lock): shuts the
    /// connection down, stops the watch and tells the owner, once.
    private func finishClosing() {
        let (watch, stall, onClose) = state.withLock { state -> (EventLoop.Watch?, EventLoop.Deadline?, (@Sendable (LocalSession) -> Void)?) in
            defer { (state.watch, state.stall, state.onClose, state.onLine) = (nil, nil, nil, nil) }
            return (state.watch, state.stall, state.onClose)
        }
        if let stall { loop.cancel(stall) }
        connection.close()
        watch?.close()
        onClose?(self)
    }
}
