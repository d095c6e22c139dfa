import HandoffAPI
import HandoffCore

/// Whether each browser here can start the native messaging host: the most common
/// failure of browser extensions that talk to a program is a host manifest the
/// browser does not find, or one that names a program that is not there
/// (`handoff-peer doctor`, Docs/INSTALL.md "Browser tabs"). Pure: the caller
/// passes what is on disk through `read` and `isExecutable`.
public enum HostManifestCheck {
    public static let hostName = "io.github.handoff"
    public static let firefoxExtensionID = "handoff@handoff.github.io"
    public static let chromiumExtensionID = "jjhdgmkhiimnlgllgnicilmagagdpoaj"

    public struct Browser: Sendable, Equatable {
        public var name: String
        public var family: BrowserFamily
        /// The browser's own directory in the home: present when it has been run by this user.
        public var profileDirectory: String
        /// Where it looks for the manifest, the user's first (the browser's order).
        public var manifestDirectories: [String]
    }

    /// The browsers that read a host manifest, and where (Firefox: Mozilla's docs; Chromium and
    /// Chrome: Chromium's native messaging docs, Linux paths).
    public static func browsers(home: String) -> [Browser] {
        [
            Browser(name: "Firefox", family: .firefox, profileDirectory: home + "/.mozilla",
                    manifestDirectories: [home + "/.mozilla/native-messaging-hosts", "/usr/lib/mozilla/native-messaging-hosts",
                                          "/usr/lib64/mozilla/native-messaging-hosts"]),
            Browser(name: "Chromium", family: .chromium, profileDirectory: home + "/.config/chromium",
                    manifestDirectories: [home + "/.config/chromium/NativeMessagingHosts", "/etc/chromium/native-messaging-hosts"]),
            Browser(name: "Google Chrome", family: .chromium, profileDirectory: home + "/.config/google-chrome",
                    manifestDirectories: [home + "/.config/google-chrome/NativeMessagingHosts", "/etc/opt/chrome/native-messaging-hosts"]),
        ]
    }

    public struct Finding: JSONCodable {
        public var browser: String
        /// ok, fail, or off (the browser was never run by this user and no manifest is there).
        public var status: String
        public var evidence: String
        public var fix: String
    }

    /// One finding per browser. `read` gives a file's text (nil when absent), `exists` whether a
    /// directory is there, `isExecutable` whether a path is a program this user may run;
    /// `connected` says whether that family's host declares its type now (the extension runs).
    public static func check(home: String, read: (String) -> String?, exists: (String) -> Bool,
                             isExecutable: (String) -> Bool, connected: (BrowserFamily) -> Bool) -> [Finding] {
        browsers(home: home).map { browser in
            let manifests = browser.manifestDirectories.map { $0 + "/" + hostName + ".json" }
            var found: (path: String, text: String)?
            for path in manifests where found == nil {
                if let text = read(path) { found = (path, text) }
            }
            guard let (path, text) = found else {
                if !exists(browser.profileDirectory) {
                    return Finding(browser: browser.name, status: "off", evidence: "not used by this user (no \(browser.profileDirectory))", fix: "")
                }
                return Finding(browser: browser.name, status: "fail",
                               evidence: "no host manifest: \(browser.name) looks for \(manifests.joined(separator: " or ")), and none is there, so the extension cannot reach handoff-webext-host",
                               fix: "Install the handoff package (it puts the manifests where every browser looks), or run Scripts/install --user $USER; then restart \(browser.name).")
            }
            let problem = problems(in: text, family: browser.family, isExecutable: isExecutable)
            if let problem {
                return Finding(browser: browser.name, status: "fail", evidence: "\(path): \(problem.evidence)", fix: problem.fix)
            }
            let live = connected(browser.family)
                ? "the extension is connected now"
                : "the extension is not connected now (\(browser.name) not running, or the extension not installed: Docs/INSTALL.md)"
            return Finding(browser: browser.name, status: "ok", evidence: "\(path) names an executable host; \(live)", fix: "")
        }
    }

    static func problems(in text: String, family: BrowserFamily, isExecutable: (String) -> Bool) -> (evidence: String, fix: String)? {
        let reinstall = "Reinstall it (the handoff package or Scripts/install); it is written by Scripts/build-webext."
        guard let manifest = try? JSONValue.parse(text), let fields = manifest.objectValue else {
            return ("not a JSON object", reinstall)
        }
        guard fields["name"]?.stringValue == hostName, fields["type"]?.stringValue == "stdio" else {
            return ("\"name\" is not \(hostName) or \"type\" is not stdio", reinstall)
        }
        guard let program = fields["path"]?.stringValue, program.hasPrefix("/") else {
            return ("\"path\" is not an absolute path (browsers on Linux require one)", reinstall)
        }
        guard isExecutable(program) else {
            return ("it names \(program), which is not an executable program here", "Install handoff (it provides \(program)), or correct \"path\" to where handoff-webext-host is.")
        }
        let allowed: (key: String, id: String) = family == .firefox
            ? ("allowed_extensions", firefoxExtensionID) : ("allowed_origins", "chrome-extension://\(chromiumExtensionID)/")
        guard fields[allowed.key]?.arrayValue?.contains(.string(allowed.id)) == true else {
            return ("\"\(allowed.key)\" does not name the Handoff extension (\(allowed.id))", reinstall)
        }
        return nil
    }
}
