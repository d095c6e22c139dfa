import HandoffBrowserHost
import HandoffCore
import Testing

/// What `handoff-peer doctor` says about each browser's route to the host.
@Suite struct HostManifestCheckTests {
    let home = "/home/ana"
    let firefoxManifest = #"{"name":"io.github.handoff","type":"stdio","path":"/usr/bin/handoff-webext-host","allowed_extensions":["handoff@handoff.github.io"]}"#
    let chromiumManifest = #"{"name":"io.github.handoff","type":"stdio","path":"/usr/bin/handoff-webext-host","allowed_origins":["chrome-extension://jjhdgmkhiimnlgllgnicilmagagdpoaj/"]}"#

    func check(files: [String: String], directories: Set<String>, executables: Set<String> = ["/usr/bin/handoff-webext-host"],
               connected: Set<BrowserFamily> = []) -> [String: HostManifestCheck.Finding] {
        let findings = HostManifestCheck.check(home: home, read: { files[$0] }, exists: { directories.contains($0) },
                                               isExecutable: { executables.contains($0) }, connected: { connected.contains($0) })
        return Dictionary(uniqueKeysWithValues: findings.map { ($0.browser, $0) })
    }

    @Test func thePackagesManifestsServeEveryBrowser() {
        let findings = check(files: ["/usr/lib/mozilla/native-messaging-hosts/io.github.handoff.json": firefoxManifest,
                                     "/etc/chromium/native-messaging-hosts/io.github.handoff.json": chromiumManifest],
                             directories: ["/home/ana/.mozilla", "/home/ana/.config/chromium"], connected: [.firefox])
        #expect(findings["Firefox"]?.status == "ok")
        #expect(findings["Firefox"]?.evidence.contains("connected now") == true)
        #expect(findings["Chromium"]?.status == "ok")
        #expect(findings["Chromium"]?.evidence.contains("not connected now") == true)
        #expect(findings["Google Chrome"]?.status == "off") // never run by this user, and no manifest
    }

    @Test func aBrowserInUseWithoutAManifestIsTheCommonFailure() {
        let findings = check(files: [:], directories: ["/home/ana/.config/google-chrome"])
        let chrome = findings["Google Chrome"]
        #expect(chrome?.status == "fail")
        #expect(chrome?.evidence.contains("/etc/opt/chrome/native-messaging-hosts/io.github.handoff.json") == true)
        #expect(chrome?.fix.contains("restart Google Chrome") == true)
    }

    @Test func aManifestThatLeadsNowhere() {
        let user = "/home/ana/.config/chromium/NativeMessagingHosts/io.github.handoff.json"
        var findings = check(files: [user: chromiumManifest], directories: [], executables: [])
        #expect(findings["Chromium"]?.status == "fail")
        #expect(findings["Chromium"]?.evidence.contains("not an executable program") == true)
        findings = check(files: [user: firefoxManifest], directories: [])
        #expect(findings["Chromium"]?.evidence.contains("allowed_origins") == true)
        findings = check(files: [user: "not json"], directories: [])
        #expect(findings["Chromium"]?.evidence.contains("not a JSON object") == true)
        findings = check(files: [user: chromiumManifest.replacing("/usr/bin/handoff-webext-host", with: "handoff-webext-host")],
                         directories: [])
        #expect(findings["Chromium"]?.evidence.contains("absolute") == true)
    }
}
