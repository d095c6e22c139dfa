import FoundationEssentials
import Glibc
import HandoffAPI
import HandoffCore
import HandoffDaemon
import HandoffKit
import HandoffTransport
import HandoffRuntime

/// A real handoffd inside the test process: its own state directory and local API socket,
/// its transfer port on 127.0.0.1, and discovery through a `LoopbackHub` instead of the
/// network. Several of them hand off to each other the way two laptops do, in `swift test`,
/// with no namespace; the lab keeps what needs real system parts.
public struct TestHost: Sendable {
    public let name: String
    public let directory: String
    public let daemon: Daemon
    public let hub: LoopbackHub

    public var socketPath: String { directory + "/run/handoff.sock" }

    /// Starts a daemon named `name`; with `directory`, one that ran before (a restart keeps its state).
    /// On `loop` (a test's, on a `ManualClock`: its deadlines and time move when the test says).
    /// `paths` join the hub's (a test's own discovery path).
    public static func start(_ name: String, hub: LoopbackHub, directory: String? = nil,
                             announceIntervalMillis: UInt64 = 1_000, loop: EventLoop = .shared,
                             paths: [any DiscoveryPath] = []) async throws -> TestHost {
        let directory = try directory ?? TemporaryDirectory.make(prefix: "handoff-host-\(name)")
        if mkdir(directory + "/run", 0o700) != 0 && errno != EEXIST { throw SystemError("mkdir") }
        var configuration = DaemonConfiguration(stateDirectory: directory + "/state", socketPath: directory + "/run/handoff.sock", name: name)
        configuration.discovery = []
        configuration.extraDiscoveryPaths = [hub.path()] + paths
        configuration.transferPort = 0
        configuration.transferPortGiven = true
        configuration.announceIntervalMillis = announceIntervalMillis
        configuration.logLevel = .error
        configuration.loop = loop
        let daemon = try Daemon(configuration: configuration)
        try await daemon.start()
        return TestHost(name: name, directory: directory, daemon: daemon, hub: hub)
    }

    /// A client of this host's local API (HandoffKit, as apps and handoff-peer use it).
    public func client(publisher: String? = "tests") throws -> HandoffClient {
        try HandoffClient(socketPath: socketPath, publisher: publisher)
    }

    /// A local API call on a thread of its own. A HandoffClient blocks, and a blocked thread of
    /// the cooperative pool can starve the daemons' actors, which run there too in tests: every
    /// call a test makes goes through here (or `blocking`), never straight from async code.
    public func call<T: Sendable>(publisher: String? = "tests", _ work: @escaping @Sendable (HandoffClient) throws -> T) async throws -> T {
        let path = socketPath
        return try await blocking { try work(try HandoffClient(socketPath: path, publisher: publisher)) }
    }

    /// Stops the daemon as SIGTERM does: goodbye first, then subscribers get their last events.
    public func stop() async {
        let handle = await daemon.shutdown()
        // It waits (up to the bound) for subscribers to take their last events: not on the cooperative pool.
        _ = try? await blocking { handle.finish(withinMillis: 1_000) }
    }

    public func remove() {
        TemporaryDirectory.remove(directory)
    }

    /// Pairs two hosts through their local APIs, as two people at two terminals do:
    /// `a` listens, `b` asks by address, both confirm the same code.
    public static func pair(_ a: TestHost, _ b: TestHost) async throws {
        let port = try await a.call { try $0.status().transferPort }
        let (listener, asker) = try await blocking { (try a.client(), try b.client()) }
        async let shownOnA = blocking { try listener.pairListen(timeoutSeconds: 30) }
        // As a person would: ask once the other host has pairing open (its clear beacon is heard).
        _ = try await eventually("\(a.name) to have pairing open") { try asker.pairable().first { $0.name == a.name } }
        let shownOnB = try await blocking { try asker.pair(peer: nil, address: "127.0.0.1:\(port)") }
        let offerOnA = try await shownOnA
        guard offerOnA.code == shownOnB.code else { throw HandoffError(.signatureMismatch, "the two hosts show different codes", fix: "") }
        async let confirmedOnA = blocking { try listener.pairConfirm(session: offerOnA.session, accept: true) }
        _ = try await blocking { try asker.pairConfirm(session: shownOnB.session, accept: true) }
        _ = try await confirmedOnA
    }
}

/// Runs blocking work (a HandoffClient call) on a thread of its own.
public func blocking<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Threads.start("test call") {
            do {
                continuation.resume(returning: try work())
            } catch {
                continuation.resume(throwing: error)
            }
        }
    }
}

/// Polls `condition` every 20 ms until it holds, or fails after `seconds`.
public func eventually<T: Sendable>(_ what: String, within seconds: Double = 10,
                                    _ condition: @escaping @Sendable () throws -> T?) async throws -> T {
    let deadline = monotonicMillis() + UInt64(seconds * 1000)
    while true {
        if let value = try await blocking(condition) { return value }
        guard monotonicMillis() < deadline else {
            throw HandoffError(.timedOut, "waited \(seconds) s for \(what)", fix: "")
        }
        try await Task.sleep(for: .milliseconds(20))
    }
}

public enum TemporaryDirectory {
    /// A new directory only this user can enter (the local API socket's directory must be).
    public static func make(prefix: String) throws -> String {
        var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buffer in buffer.baseAddress.flatMap { mkdtemp($0) } != nil }
        guard made else { throw SystemError("mkdtemp") }
        return String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    public static func remove(_ path: String) {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// The hosts of one test, on one hub: `withTestLab` stops every host still running and
/// removes every directory when the test ends, passed or not, before the test returns
/// (a cleanup left to a detached task could race the test process's exit).
public final class TestLab: Sendable {
    public let hub = LoopbackHub()
    /// Where the hosts' deadlines run and what their time is.
    public let loop: EventLoop
    private let hosts = Locked<[(host: TestHost, running: Bool)]>([])

    public init(loop: EventLoop = .shared) {
        self.loop = loop
    }

    public func start(_ name: String, directory: String? = nil, announceIntervalMillis: UInt64 = 1_000) async throws -> TestHost {
        let host = try await TestHost.start(name, hub: hub, directory: directory, announceIntervalMillis: announceIntervalMillis, loop: loop)
        hosts.withLock { $0.append((host, true)) }
        return host
    }

    /// Stops `host` now (its goodbye goes out); its directory stays for a restart.
    public func stop(_ host: TestHost) async {
        let running = hosts.withLock { hosts in
            guard let index = hosts.firstIndex(where: { $0.host.daemon === host.daemon && $0.running }) else { return false }
            hosts[index].running = false
            return true
        }
        if running { await host.stop() }
    }

    /// laptop-a and laptop-b, paired, b listing a.
    public func pairedHosts(announceIntervalMillis: UInt64 = 1_000) async throws -> (a: TestHost, b: TestHost) {
        let a = try await start("laptop-a", announceIntervalMillis: announceIntervalMillis)
        let b = try await start("laptop-b", announceIntervalMillis: announceIntervalMillis)
        try await TestHost.pair(a, b)
        _ = try await eventually("b to list a") { try b.client().list().first { $0.name == "laptop-a" } }
        return (a, b)
    }

    fileprivate func finish() async {
        for (host, running) in hosts.withLock({ $0 }) {
            if running { await host.stop() }
        }
        for directory in Set(hosts.withLock { $0.map(\.host.directory) }) { TemporaryDirectory.remove(directory) }
    }
}

public func withTestLab<T: Sendable>(loop: EventLoop = .shared, _ body: (TestLab) async throws -> T) async throws -> T {
    let lab = TestLab(loop: loop)
    do {
        let result = try await body(lab)
        await lab.finish()
        return result
    } catch {
        await lab.finish()
        throw error
    }
}
