// handoff-reader: a terminal reader that hands off the open file and the line
// it shows, and continues what another host hands it in the window that
// already shows that file. With --unsaved, the offered window has unsaved
// edits: the reader that continues it gets them over a continuation stream.
// An example of HandoffKit end to end.
import Foundation  // an app of its own: apps may use all of Foundation (HandoffKit does not)
import HandoffCommandLine
import HandoffCore
import HandoffKit
import Synchronization

let activityType = "org.example.handoff-reader.document"

let spec = CommandSpec(
    name: "handoff-reader",
    abstract: "handoff-reader: an example HandoffKit app. Opens one window per FILE[:LINE], offers the last one to paired hosts, and continues theirs.",
    arguments: [.init("FILE[:LINE]...", optional: true, help: "Files to open, each in its own window (none: wait for a continuation).")],
    options: [
        .init("socket", value: "PATH", help: "handoffd's socket (default $HANDOFF_SOCKET)."),
        .init("log", value: "FILE", help: "Also append what happens to FILE."),
        .init("scroll-to", value: "LINE", help: "After --after seconds, scroll the offered window to LINE (sets needsSave)."),
        .init("after", value: "SECONDS", help: "Delay for --scroll-to and --finally (default 1)."),
        .init("finally", value: "ACTION", help: "resign or invalidate the offered activity after the delay."),
        .init("exit-after", value: "N", help: "Exit after N continuations (default: run until stopped)."),
        .init("unsaved", value: "TEXT", help: "The offered window has unsaved edits TEXT: a reader that continues it gets them over a continuation stream."),
    ])

let arguments: ParsedArguments
do { arguments = try spec.parse(Array(CommandLine.arguments.dropFirst())) } catch {
    FileHandle.standardError.write(Data("Error: \(error)\nSee 'handoff-reader --help'.\n".utf8))
    exit(64)
}
if arguments.wantsHelp {
    print(spec.help, terminator: "")
    exit(0)
}

let logPath = arguments.value("log")
func say(_ line: String) {
    print(line)
    fflush(nil)
    if let logPath, let handle = FileHandle(forWritingAtPath: logPath) ?? {
        FileManager.default.createFile(atPath: logPath, contents: nil)
        return FileHandle(forWritingAtPath: logPath)
    }() {
        handle.seekToEndOfFile()
        handle.write(Data((line + "\n").utf8))
        handle.closeFile()
    }
}

/// A window shows one document at one line.
struct Window {
    var id: String
    var file: String
    var line: Int
    var contentID: String { "document:\((file as NSString).lastPathComponent)" }
}

/// The reader's windows and how continuations are routed among them; one lock, one owner.
final class Reader: ContinuationHandler, @unchecked Sendable {
    // @unchecked Sendable: `windows` is only touched under `lock`.
    private let lock = NSLock()
    private var windows: [Window] = []
    private var continued = 0
    let exitAfter: Int?
    let socketPath: String?

    init(files: [String], exitAfter: Int?, socketPath: String?) {
        self.exitAfter = exitAfter
        self.socketPath = socketPath
        for file in files { _ = open(file) }
    }

    func open(_ spec: String) -> Window {
        lock.lock()
        defer { lock.unlock() }
        let parts = spec.split(separator: ":", maxSplits: 1)
        let window = Window(id: "w\(windows.count + 1)", file: String(parts[0]), line: parts.count > 1 ? Int(parts[1]) ?? 1 : 1)
        windows.append(window)
        say("opened \(window.id): \(window.contentID) at line \(window.line)")
        return window
    }

    var router: WindowRouter {
        lock.lock()
        defer { lock.unlock() }
        // Each open window prefers its own document; new windows come from the one declaration.
        return WindowRouter(declarations: [.init(id: "reader", conditions: ["document:"])],
                            windows: windows.map { .init(id: $0.id, preferring: [$0.contentID]) })
    }

    func willContinue(activityType: String) {
        say("willContinue \(activityType)")
    }

    func continueActivity(_ activity: Activity) {
        guard case let .string(file) = activity.userInfo["file"] ?? .string("?"),
              case let .integer(line) = activity.userInfo["line"] ?? .integer(1) else { return }
        switch router.route(activity) {
        case let .existing(id, step):
            lock.lock()
            if let index = windows.firstIndex(where: { $0.id == id }) { windows[index].line = Int(line) }
            lock.unlock()
            say("continue \(activity.targetContentIdentifier ?? file) at line \(line) in window \(id) (already open, step \(step))")
        case let .new(declaration, step):
            let window = open("\(file):\(line)")
            say("continue \(activity.targetContentIdentifier ?? file) at line \(line) in new window \(window.id) of \(declaration) (step \(step))")
        case .none:
            say("continue \(activity.targetContentIdentifier ?? file): no window can show it")
        }
        if activity.supportsContinuationStreams { receiveUnsavedText(of: activity) }
        finishedOne()
    }

    /// The other reader's unsaved edits come over the stream, not in userInfo: they may be large.
    private func receiveUnsavedText(of activity: Activity) {
        do throws(HandoffError) {
            let stream = try activity.openContinuationStream(socketPath: socketPath)
            defer { stream.close() }
            let bytes = try stream.readToEnd(limit: 16 * 1024 * 1024)
            say("unsaved text (\(bytes.count) bytes) from the stream: \(String(decoding: bytes, as: UTF8.self))")
        } catch {
            say("no unsaved text: \(error.code.rawValue): \(error.message)")
        }
    }

    func didFailToContinue(activityType: String, error: HandoffError) {
        say("didFail \(activityType): \(error.code.rawValue)")
        finishedOne()
    }

    private func finishedOne() {
        lock.lock()
        continued += 1
        let done = exitAfter.map { continued >= $0 } ?? false
        lock.unlock()
        if done { exit(0) }
    }
}

do throws(HandoffError) {
    let socket = arguments.value("socket")
    let reader = Reader(files: arguments.positionals, exitAfter: arguments.value("exit-after").flatMap(Int.init), socketPath: socket)
    let app = try HandoffApp(name: "Handoff Reader", types: [activityType], socketPath: socket)
    app.run(handler: reader)

    // Offer the last opened window, as the focused one.
    if let file = arguments.positionals.last {
        let client = try HandoffClient(socketPath: socket)
        let window = Window(id: "", file: String(file.split(separator: ":")[0]),
                            line: file.split(separator: ":").count > 1 ? Int(file.split(separator: ":")[1]) ?? 1 : 1)
        let current = Mutex(window.line)
        let activity = UserActivity(type: activityType, client: client)
        activity.title = "Reading \((window.file as NSString).lastPathComponent)"
        activity.targetContentIdentifier = window.contentID
        activity.requiredUserInfoKeys = ["file", "line"]
        // Refilled lazily, just before the activity is offered (again).
        activity.willSave = { activity in
            activity.userInfo = ["file": .string(window.file), "line": .integer(Int64(current.withLock { $0 }))]
        }
        activity.onError = { say("error: \($0.message)") }
        let unsaved = arguments.value("unsaved")
        activity.supportsContinuationStreams = unsaved != nil
        activity.needsSave = true
        try activity.becomeCurrent()
        say("offering \(window.contentID) at line \(window.line)")
        if let unsaved {
            // Whoever continues this window gets the edits, then end of stream.
            activity.acceptContinuationStreams { stream in
                do throws(HandoffError) {
                    try stream.write(Array(unsaved.utf8))
                    stream.closeWrite()
                    // Wait for the other side to finish reading and close.
                    _ = try stream.read()
                    say("sent \(unsaved.utf8.count) bytes of unsaved text over a continuation stream")
                } catch {
                    say("stream error: \(error.message)")
                }
                stream.close()
            }
        }
        let delay = Double(arguments.value("after") ?? "1") ?? 1
        if let line = arguments.value("scroll-to").flatMap(Int.init) {
            Thread.sleep(forTimeInterval: delay)
            current.withLock { $0 = line }
            activity.needsSave = true
            say("scrolled to line \(line)")
        }
        if let action = arguments.value("finally") {
            Thread.sleep(forTimeInterval: delay)
            if action == "invalidate" { try activity.invalidate() } else { try activity.resignCurrent() }
            say("\(action == "invalidate" ? "invalidated" : "resigned") \(window.contentID)")
        }
    }
} catch {
    FileHandle.standardError.write(Data("Error: \(error.message)\nFix: \(error.fix)\n".utf8))
    exit(1)
}
dispatchMain()
