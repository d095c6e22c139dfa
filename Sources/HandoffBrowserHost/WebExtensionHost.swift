import Dispatch
import Glibc
import HandoffAPI
import HandoffCore
import HandoffKit
import HandoffTransport
import HandoffRuntime

/// The native messaging host the Handoff extension starts (`handoff-webext-host`):
/// browser messages on stdin and stdout, handoffd's local API on the other side.
/// It publishes the tab the extension reports, declares its family's activity
/// type while it runs, and hands a continuation of that type to the extension,
/// exactly once (ContinuationTracker).
public final class WebExtensionHost: Sendable {
    public let family: BrowserFamily
    private let socketPath: String?
    private let state: Locked<HostState>
    /// Publishing connection; reopened after handoffd restarts.
    private let publisher = Locked<HandoffClient?>(nil)
    /// The declaring connection lives on its event thread; true while it runs.
    private let declaring = Locked(false)
    private let output = Locked(Int32(1))
    private let input: Int32

    public init(family: BrowserFamily, socketPath: String? = nil, input: Int32 = 0, output: Int32 = 1) {
        self.family = family
        self.socketPath = socketPath
        self.input = input
        state = Locked(HostState(family: family))
        self.output.withLock { $0 = output }
    }

    /// Entry point for the multi-call binary: the browser's arguments; returns the exit status.
    public static func main(arguments: [String]) -> Int32 {
        // No browser passes these (Chromium gives its origin, Firefox a manifest path and an id).
        switch arguments.dropFirst().first {
        case "--version"?:
            print(HandoffVersion.line(program: "handoff-webext-host"))
            return 0
        case "--help"?:
            print("""
                handoff-webext-host: the native messaging host of the Handoff browser extension. Chromium
                and Firefox start it for the extension and talk to it on standard input and output; it
                publishes the focused tab and opens tabs continued from another laptop. Not run by hand.
                Install: Docs/INSTALL.md, "Browser tabs"; check: handoff-peer doctor.
                """)
            return 0
        default:
            break
        }
        let family: BrowserFamily
        do throws(HandoffError) {
            family = try BrowserFamily.detect(arguments: arguments)
        } catch {
            log("\(error.message) Fix: \(error.fix)")
            return 64
        }
        // The browser owns stdout; a closed pipe must be an error, not a signal.
        signal(SIGPIPE, SIG_IGN)
        WebExtensionHost(family: family).run()
        return 0
    }

    /// Serves the browser until it closes stdin (the extension disconnected or the browser quit).
    public func run() {
        log("started for \(family.rawValue)")
        ensureDeclared()
        while true {
            guard let header = readExactly(NativeMessaging.headerBytes) else { break }
            switch NativeMessaging.header(header) {
            case let .message(length):
                guard let body = readExactly(length) else { break }
                handle(body)
                continue
            case let .oversized(length, error):
                log("refused a \(length)-byte message")
                guard skip(length) else { break }
                send(.error(error))
                continue
            }
            break
        }
        // The browser went away: it is no longer what the person looks at.
        if state.withLock({ $0.offered != nil }) {
            try? client().resign()
        }
        log("the browser closed the connection")
    }

    func handle(_ body: [UInt8]) {
        ensureDeclared()
        switch state.withLock({ $0.receive(body) }) {
        case let .reply(message):
            if case let .error(error) = message { log("refused a message: \(error.code.rawValue)") }
            send(message)
        case let .publish(tab, activity):
            do throws(HandoffError) {
                try client().publish(activity)
                state.withLock { $0.published(tab) }
                send(.done("current"))
            } catch {
                dropClient(after: error)
                log("handoffd refused the publish: \(error.code.rawValue)")
                send(.error(error))
            }
        case .resign:
            do throws(HandoffError) {
                try client().resign()
                state.withLock { $0.resigned() }
                send(.done("resign"))
            } catch {
                dropClient(after: error)
                send(.error(error))
            }
        }
    }

    private func client() throws(HandoffError) -> HandoffClient {
        if let existing = publisher.withLock({ $0 }) { return existing }
        let fresh = try HandoffClient(socketPath: socketPath, publisher: family.publisher)
        publisher.withLock { $0 = fresh }
        return fresh
    }

    private func dropClient(after error: HandoffError) {
        if error.code == .daemonUnavailable { publisher.withLock { $0 = nil } }
    }

    /// Declares the family's type on a connection of its own and follows its
    /// events on a thread; after handoffd restarts, the next message declares again.
    private func ensureDeclared() {
        let start = declaring.withLock { running -> Bool in
            defer { running = true }
            return !running
        }
        guard start else { return }
        let events: HandoffClient
        do throws(HandoffError) {
            events = try HandoffClient(socketPath: socketPath)
            try events.subscribe(payloads: true)
            try events.request(.declare(app: family.appName, types: [family.activityType], desktopID: nil, payloads: true))
        } catch {
            log("cannot declare \(family.activityType): \(error.code.rawValue)")
            declaring.withLock { $0 = false }
            return
        }
        // A queue of its own: this loop blocks on handoffd's events for as long as the host runs.
        DispatchQueue(label: "handoff-webext-host events").async { [self] in
            followEvents(events)
            declaring.withLock { $0 = false }
        }
    }

    private func followEvents(_ events: HandoffClient) {
        var tracker = ContinuationTracker(app: family.appName, types: [family.activityType])
        while true {
            let received: ReceivedEvent?
            do throws(HandoffError) { received = try events.nextEvent() } catch { received = nil }
            guard let received else {
                _ = tracker.connectionLost()
                log("lost handoffd; declaring again at the next message")
                return
            }
            guard let event = received.event else { continue }
            for callback in tracker.handle(event, payload: received.payload) {
                switch callback {
                case let .continued(activity):
                    do throws(HandoffError) {
                        send(.continue(try TabState(continuing: activity)))
                        log("handed a continuation to the extension")
                    } catch {
                        log("cannot continue: \(error.code.rawValue)")
                    }
                case let .failed(_, error):
                    log("a continuation failed: \(error.code.rawValue)")
                case .willContinue, .transfer:
                    break
                }
            }
        }
    }

    func send(_ message: HostMessage) {
        let frame: [UInt8]
        do throws(HandoffError) {
            frame = try NativeMessaging.frame(message.json)
        } catch {
            log("not sent: \(error.message)")
            return
        }
        output.withLock { fd in
            var offset = 0
            while offset < frame.count {
                let written = frame[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { return }
                offset += written
            }
        }
    }

    private func readExactly(_ count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        var offset = 0
        while offset < count {
            let got = bytes[offset...].withUnsafeMutableBytes { Glibc.read(input, $0.baseAddress, $0.count) }
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { return nil }
            offset += got
        }
        return bytes
    }

    /// Reads past an oversized message in small pieces, never holding it.
    private func skip(_ count: Int) -> Bool {
        var left = count
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while left > 0 {
            let got = buffer.withUnsafeMutableBytes { Glibc.read(input, $0.baseAddress, min($0.count, left)) }
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { return false }
            left -= got
        }
        return true
    }
}

/// Logs go to stderr (the browser's log), with no titles or URLs.
func log(_ line: String) {
    let text = Array("handoff-webext-host: \(line)\n".utf8)
    _ = text.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}
