import HandoffDaemon
import Testing

struct AppStarterTests {
    @Test func usesTheUserManagerOnlyWhenItIsTheParent() {
        let run = "/usr/bin/systemd-run"
        #expect(AppStarter.mode(environment: ["MANAGERPID": "812"], parentPID: 812, systemdRun: run) == .userManager(systemdRun: run))
        // Inherited from a terminal the manager started: another parent.
        #expect(AppStarter.mode(environment: ["MANAGERPID": "812"], parentPID: 4000, systemdRun: run) == .direct)
        #expect(AppStarter.mode(environment: [:], parentPID: 1, systemdRun: run) == .direct)
        #expect(AppStarter.mode(environment: ["MANAGERPID": "1"], parentPID: 1, systemdRun: run) == .direct)
        #expect(AppStarter.mode(environment: ["MANAGERPID": "812"], parentPID: 812, systemdRun: nil) == .direct)
    }

    @Test func startsDirectlyWithItsOwnEnvironmentPlusTheAdditions() {
        let starter = AppStarter(mode: .direct, environment: ["PATH": "/usr/bin", "HANDOFF_SOCKET": "old"])
        let absolute = starter.command(["/opt/reader/bin/reader", "--open"], adding: ["HANDOFF_SOCKET": "/run/user/1000/handoff/handoffd.sock"])
        #expect(absolute.executable == "/opt/reader/bin/reader")
        #expect(absolute.arguments == ["--open"])
        #expect(absolute.environment == ["PATH": "/usr/bin", "HANDOFF_SOCKET": "/run/user/1000/handoff/handoffd.sock"])
        let searched = starter.command(["xdg-open", "https://example.org/"], adding: [:])
        #expect(searched.executable == "/usr/bin/env")
        #expect(searched.arguments == ["xdg-open", "https://example.org/"])
    }

    @Test func escapesDollarSignsTheUserManagerWouldExpand() {
        let starter = AppStarter(mode: .userManager(systemdRun: "/usr/bin/systemd-run"), environment: [:])
        let command = starter.command(["xdg-open", "https://example.org/?a=${HOME}&b=$$"], adding: [:])
        #expect(command.arguments.suffix(2) == ["xdg-open", "https://example.org/?a=$${HOME}&b=$$$$"])
        #expect(command.arguments.contains(#"exec "$0" "$@""#))
    }

    @Test func startsThroughTheUserManagerWithTheAdditionsAsSetenv() {
        let starter = AppStarter(mode: .userManager(systemdRun: "/usr/bin/systemd-run"), environment: ["XDG_RUNTIME_DIR": "/run/user/1000"])
        let command = starter.command(["reader", "--new-window"], adding: ["HANDOFF_LAUNCHED_FOR": "org.example.read", "HANDOFF_DESKTOP_ID": "reader.desktop"])
        #expect(command.executable == "/usr/bin/systemd-run")
        #expect(command.arguments == ["--user", "--wait", "--quiet", "--collect", "--service-type=exec",
                                      "--setenv=HANDOFF_DESKTOP_ID=reader.desktop", "--setenv=HANDOFF_LAUNCHED_FOR=org.example.read",
                                      "--", "/bin/sh", "-c", #"exec "$0" "$@""#, "reader", "--new-window"])
        // systemd-run itself needs only ours (to reach the manager); the app gets the manager's.
        #expect(command.environment == ["XDG_RUNTIME_DIR": "/run/user/1000"])
    }
}
