import FoundationEssentials
import Glibc
import HandoffAPI
import HandoffCore
@testable import HandoffDaemon
import HandoffTransport
import Testing

/// handoff-launch decides from the `.desktop` file alone: a daemon that asks for anything
/// else (another program, an undeclared type, a file that is not there) gets a refusal.
struct LauncherTests {
    let reader = AppDeclarations.DiskDeclaration(desktopID: "org.example.Reader.desktop", name: "Reader",
                                                 exec: "reader --continue %u", types: ["org.example.read"])
    let socket = "/run/user/1000/handoff/handoffd.sock"

    @Test func startsADeclaredAppWithTheExecLineOfItsOwnFile() throws {
        let plan = try Launcher.plan(.app(desktopID: reader.desktopID, type: "org.example.read", socket: socket),
                                     declarations: [reader], environment: [:]).get()
        #expect(plan.words == ["reader", "--continue"])
        #expect(plan.environment == ["HANDOFF_SOCKET": socket, "HANDOFF_LAUNCHED_FOR": "org.example.read",
                                     "HANDOFF_DESKTOP_ID": reader.desktopID])
    }

    @Test func refusesWhatNoFileDeclares() {
        func refusal(_ request: LaunchRequest) -> HandoffError? {
            if case let .failure(error) = Launcher.plan(request, declarations: [reader], environment: [:]) { return error }
            return nil
        }
        #expect(refusal(.app(desktopID: "evil.desktop", type: "org.example.read", socket: socket))?.code == .app)
        #expect(refusal(.app(desktopID: reader.desktopID, type: "org.example.other", socket: socket))?.message
                == "org.example.Reader.desktop does not declare org.example.other, so it is not started for it.")
        let empty = AppDeclarations.DiskDeclaration(desktopID: "empty.desktop", name: "Empty", exec: "%u", types: ["t"])
        #expect(Launcher.plan(.app(desktopID: "empty.desktop", type: "t", socket: socket), declarations: [empty], environment: [:])
                .map(\.words) == .failure(HandoffError(.app, "Empty declares t, but the Exec line of empty.desktop is empty.",
                                                       fix: "Fix or reinstall empty.desktop (Docs/APPS.md).")))
    }

    @Test func opensOnlyWebPagesInTheBrowser() throws {
        let url = "https://example.org/a?b=c"
        #expect(try Launcher.plan(.browser(url: url), declarations: [], environment: [:]).get().words == ["xdg-open", url])
        #expect(try Launcher.plan(.browser(url: url), declarations: [], environment: ["BROWSER": "firefox %s:chromium"]).get().words
                == ["firefox", url])
        #expect(Launcher.browserCommand(url: url, environment: ["BROWSER": "chromium --new-window"]) == ["chromium", "--new-window", url])
        var file = LaunchRequest.browser(url: url)
        file.url = "file:///etc/passwd"
        #expect((try? Launcher.plan(file, declarations: [], environment: [:]).get()) == nil)
    }

    @Test func readsOnlyWellFormedRequestsOfItsVersion() throws {
        let request = LaunchRequest.app(desktopID: reader.desktopID, type: "org.example.read", socket: socket)
        #expect(try LaunchRequest.parse(Array(request.line.dropLast())) == request)
        #expect(String(decoding: request.line, as: UTF8.self)
                == #"{"desktopID":"org.example.Reader.desktop","kind":"app","socket":"/run/user/1000/handoff/handoffd.sock","type":"org.example.read","v":1}"# + "\n")
        func refused(_ text: String) -> Bool { (try? LaunchRequest.parse(Array(text.utf8))) == nil }
        #expect(refused(#"{"v":2,"kind":"browser","url":"https://example.org/"}"#))
        #expect(refused(#"{"v":1,"kind":"app","desktopID":"../../bin/sh.desktop","type":"t","socket":"/s"}"#))
        #expect(refused(#"{"v":1,"kind":"app","desktopID":".hidden.desktop","type":"t","socket":"/s"}"#))
        #expect(refused(#"{"v":1,"kind":"app","desktopID":"a.desktop","type":"t"}"#))
        #expect(refused(#"{"v":1,"kind":"app","desktopID":"a.desktop","type":"t","socket":"relative"}"#))
        #expect(refused(#"{"v":1,"kind":"browser","url":"javascript:alert(1)"}"#))
        #expect(refused(#"{"v":1,"kind":"shell","url":"https://example.org/"}"#))
        #expect(refused(String(repeating: " ", count: LaunchRequest.maximumBytes + 1)))
        #expect(try LaunchRequest.parse(Array(#"{"v":1,"kind":"browser","url":"https://example.org/"}"#.utf8)) == .browser(url: "https://example.org/"))
    }

    @Test func servesOneRequestAndReportsTheExit() throws {
        let script = AppDeclarations.DiskDeclaration(desktopID: "fails.desktop", name: "Fails", exec: "/bin/sh -c \"exit 3\"", types: ["t"])
        let (daemon, launcher) = try connectedPair("handoffd", "launcher")
        defer { daemon.close() }
        try daemon.write(LaunchRequest.app(desktopID: "fails.desktop", type: "t", socket: socket).line)
        let status = Launcher.serve(launcher, log: Log(level: .error, program: "handoff-launch"), declarations: { [script] },
                                    environment: [:], starter: AppStarter(mode: .direct, environment: ["PATH": "/usr/bin:/bin"]))
        #expect(status == 0)
        #expect(try LaunchReply.parse(#require(try daemon.readLine(maxBytes: 8192))) == .started)
        #expect(try LaunchReply.parse(#require(try daemon.readLine(maxBytes: 8192))) == .exited(3))
        #expect(try daemon.readLine(maxBytes: 8192) == nil)
    }

    @Test func refusesOnTheConnectionAndStartsNothing() throws {
        let (daemon, launcher) = try connectedPair("handoffd", "launcher")
        defer { daemon.close() }
        try daemon.write(LaunchRequest.app(desktopID: "sh.desktop", type: "t", socket: socket).line)
        let status = Launcher.serve(launcher, log: Log(level: .error, program: "handoff-launch"), declarations: { [reader] },
                                    environment: [:], starter: AppStarter(mode: .direct, environment: [:]))
        #expect(status == 1)
        let reply = try LaunchReply.parse(#require(try daemon.readLine(maxBytes: 8192)))
        #expect(reply.state == .refused)
        #expect(reply.error?.code == .app)
        #expect(try daemon.readLine(maxBytes: 8192) == nil)
    }
}
