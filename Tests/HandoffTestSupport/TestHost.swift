import FoundationEssentials
import Glibc
import HandoffAPI
import HandoffCore
import HandoffDaemon
import HandoffKit
import HandoffTransport

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
    public static func start(_ name: String, hub: LoopbackHub, directory: String? = nil,
                             announceIntervalMillis: UInt64 = 1_000) async throws -> TestHost {
        let directory = try directory ?? TemporaryDirectory.make(prefix: "handoff-host-\(name)")
        if mkdir(directory + "/run", 0o700) != 0 && errno != EEXIST { throw SystemError("mkdir") }
        var configuration = DaemonConfiguration(stateDirectory: directory + "/state", socketPath: directory + "/run/handoff.sock", name: name)
        configuration.discovery = []
        configuration.extraDiscoveryPaths = [hub.path()]
        configuration.transferPort = 0
        configuration.transferPortGiven = true
        configuration.announceIntervalMillis = announceIntervalMillis
        configuration.logLevel = .error
        let daemon = try Daemon(configuration: configuration)
        try await daemon.start()
        return TestHost(name: name, directory: directory, daemon: daemon, hub: hub)
    }

    /// A client of this host's local API (HandoffKit, as apps and handoff-peer use it).
    public func client(publisher: String? = "tests") throws -> HandoffClient {
        try HandoffClient(socketPath: socketPath, publisher: publisher)
    }

    /// Stops the daemon as SIGTERM does: goodbye first, then subscribers get their last events.
    public func stop() async {
        let handle = await daemon.shutdown()
        handle.finish(withinMillis: 1_000)
    }

    public func remove() {
        TemporaryDirectory.remove(directory)
    }

    /// Pairs two hosts through their local APIs, as two people at two terminals do:
    /// `a` listens, `b` asks by address, both confirm the same code.
    public static func pair(_ a: TestHost, _ b: TestHost) async throws {
        let port = try a.client().status().transferPort
        let (listener, asker) = (try a.client(), try b.client())
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
