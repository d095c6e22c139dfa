import HandoffBrowserHost
import HandoffCore
import HandoffDocuments

/// What the session's publishers read from other programs: the browser
/// extension's native messages (a page can steer what the extension sends)
/// and the recently-used list and settings files other apps and people write.
enum DesktopTargets {
    /// A native message: the 4-byte length, then the body. An accepted tab is an http(s) page
    /// whose activity validates; the length is judged before anything is allocated.
    static func nativeMessage(_ bytes: [UInt8]) {
        guard bytes.count >= NativeMessaging.headerBytes else { return }
        if case let .message(length) = NativeMessaging.header(Array(bytes.prefix(NativeMessaging.headerBytes))) {
            Targets.check(length <= NativeMessaging.maximumIncomingBytes, "a header over the limit was accepted")
        }
        guard case let .current(tab)? = try? ExtensionMessage.parse(Array(bytes.dropFirst(NativeMessaging.headerBytes))) else { return }
        Targets.check(ExtensionMessage.isWebURL(tab.url), "a tab that is no web page was accepted")
        for family in BrowserFamily.allCases {
            Targets.check((try? tab.activity(family: family).validate()) != nil, "an accepted tab's activity does not validate")
        }
    }

    /// The recently-used list: bounded, and every local path it yields is absolute without NUL.
    static func recentlyUsed(_ bytes: [UInt8]) {
        guard let bookmarks = try? RecentlyUsed.parse(bytes) else { return }
        Targets.check(bookmarks.count <= RecentlyUsed.maximumBookmarks, "too many bookmarks")
        for bookmark in bookmarks {
            if let path = bookmark.path {
                Targets.check(path.hasPrefix("/") && !path.contains("\0"), "a path that is not absolute, or holds NUL")
            }
        }
    }

    /// documents.conf, and where a continued document's path (from a peer) may be saved:
    /// only plain paths under the home directory, never a hidden one.
    static func documentSettingsAndPlacement(_ bytes: [UInt8]) {
        let text = Targets.text(bytes)
        if let settings = try? DocumentSettings.parse(text, home: "/home/ana", path: "fuzz.conf") {
            Targets.check((1 << 20...DocumentSettings.hardMaximumBytes).contains(settings.maximumBytes), "size limit out of range")
            Targets.check(settings.excludedDirectories.allSatisfy { $0.hasPrefix("/") }, "a relative excluded directory")
        }
        let placement = DocumentPolicy.placement(relative: text, home: "/home/ana", from: "laptop-a") { _ in .different }
        if case let .write(path)? = placement {
            let relative = DocumentPolicy.relativePath(path, home: "/home/ana")
            Targets.check(relative.map(DocumentPolicy.relativePathIsPlain) == true, "a continued document placed outside home or hidden: \(path)")
        }
    }
}
