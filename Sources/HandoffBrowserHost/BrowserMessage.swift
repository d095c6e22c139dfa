import HandoffAPI
import HandoffCore

/// Which browser family started the host. Each publishes and continues its own
/// activity type, so a Chromium tab is continued by the extension in Chromium.
public enum BrowserFamily: String, Sendable, CaseIterable {
    case chromium
    case firefox

    public var activityType: String { "io.github.handoff.browser.\(rawValue)" }
    /// Who offers the tab (Docs/LOCAL-API.md, "Which activity is current"): one per family,
    /// so Chromium losing focus after Firefox took it never ends Firefox's tab.
    public var publisher: String { "browser-\(rawValue)" }
    /// The name the host declares with (shown by `handoff-peer apps`).
    public var appName: String {
        switch self {
        case .chromium: "Chromium (Handoff extension)"
        case .firefox: "Firefox (Handoff extension)"
        }
    }

    /// Chromium passes the caller's origin `chrome-extension://ID/` as the first
    /// argument; Firefox passes the path of the host manifest and the extension's id.
    public static func detect(arguments: [String]) throws(HandoffError) -> BrowserFamily {
        let rest = arguments.dropFirst()
        if let origin = rest.first, origin.hasPrefix("chrome-extension://") { return .chromium }
        if rest.count >= 2, rest.first?.hasSuffix(".json") == true { return .firefox }
        throw HandoffError(.invalidRequest, "handoff-webext-host is started by a browser for the Handoff extension, not by hand.",
                           fix: "Install the extension and its native messaging manifest (Docs/INSTALL.md, \"Browser tabs\"); check it with 'handoff-peer doctor'.")
    }
}

/// The tab the extension reports: the active tab of the focused, non-private window.
public struct TabState: Codable, Equatable, Sendable {
    public var url: String
    public var title: String
    public var scrollX: Int64
    public var scrollY: Int64

    public init(url: String, title: String, scrollX: Int64 = 0, scrollY: Int64 = 0) {
        self.url = url
        self.title = title
        self.scrollX = scrollX
        self.scrollY = scrollY
    }

    /// The activity offered for this tab. A title longer than an activity holds
    /// is cut at a character boundary: a long title is no reason not to offer the page.
    public func activity(family: BrowserFamily) -> Activity {
        Activity(type: family.activityType, title: Activity.displayableTitle(title.isEmpty ? url : title),
                 userInfo: ["scrollX": .integer(scrollX), "scrollY": .integer(scrollY)], webpageURL: url)
    }

    /// The tab a continued activity describes: its web page and scroll position.
    public init(continuing activity: Activity) throws(HandoffError) {
        guard let url = activity.webpageURL, ExtensionMessage.isWebURL(url) else {
            throw HandoffError(.invalidActivity, "The continued activity has no http or https web page.",
                               fix: "Continue a browser tab offered by the Handoff extension.")
        }
        self.init(url: url, title: activity.title,
                  scrollX: Self.coordinate(activity.userInfo["scrollX"]), scrollY: Self.coordinate(activity.userInfo["scrollY"]))
    }

    /// A scroll coordinate from userInfo; anything else is 0 (the top of the page).
    private static func coordinate(_ value: PropertyListValue?) -> Int64 {
        switch value {
        case let .integer(number)?: return min(max(number, 0), ExtensionMessage.maximumScroll)
        case let .double(number)? where number.isFinite: return Int64(min(max(number, 0), Double(ExtensionMessage.maximumScroll)))
        default: return 0
        }
    }
}

/// A message from the extension, checked field by field. Anything else is refused
/// with an error naming what was wrong; the host's state does not change.
public enum ExtensionMessage: Equatable, Sendable {
    /// This tab is what the person is looking at now.
    case current(TabState)
    /// The browser lost focus, its last window closed, or the tab is private or not a web page.
    case resign

    /// Scroll offsets beyond this are not a page position (browsers cap layout far below it).
    public static let maximumScroll: Int64 = 1 << 40

    public static func parse(_ bytes: [UInt8]) throws(HandoffError) -> ExtensionMessage {
        let json: JSONValue
        do {
            json = try JSONValue.parse(String(decoding: bytes, as: UTF8.self))
        } catch {
            throw invalid("The extension's message is not JSON: \(error.message)")
        }
        guard let fields = json.objectValue else { throw invalid("The extension's message is not a JSON object.") }
        guard let type = fields["type"]?.stringValue else { throw invalid("The extension's message has no \"type\".") }
        switch type {
        case "current":
            try onlyKeys(["type", "url", "title", "scrollX", "scrollY"], in: fields, type: type)
            guard let url = fields["url"]?.stringValue else { throw invalid("A \"current\" message needs \"url\", a string.") }
            guard isWebURL(url) else {
                throw invalid("Only http and https pages are offered; the extension sent another kind of URL.")
            }
            guard url.utf8.count <= ActivityLimits.webpageURLBytes else {
                throw HandoffError(.invalidActivity, "The tab's URL is \(url.utf8.count) bytes; an activity holds at most \(ActivityLimits.webpageURLBytes).",
                                   fix: "This page cannot be offered; a page with a shorter URL can.")
            }
            // The activity's own check, so a tab accepted here is one handoffd accepts (a browser
            // sends hosts in punycode and paths percent-encoded; anything else is refused here).
            try Activity.validateWebpageURL(url)
            guard let title = fields["title"].map({ $0.stringValue }) ?? "" else {
                throw invalid("\"title\" must be a string.")
            }
            return .current(TabState(url: url, title: title, scrollX: try scroll(fields["scrollX"], "scrollX"),
                                     scrollY: try scroll(fields["scrollY"], "scrollY")))
        case "resign":
            try onlyKeys(["type"], in: fields, type: type)
            return .resign
        default:
            throw invalid("The extension sent a message of unknown type \"\(type.prefix(40))\".")
        }
    }

    /// http and https only: Apple's rule for webpageURL, and the only pages another laptop can open.
    public static func isWebURL(_ url: String) -> Bool {
        let lower = url.prefix(8).lowercased()
        let rest: Substring
        if lower.hasPrefix("https://") {
            rest = url.dropFirst(8)
        } else if lower.hasPrefix("http://") {
            rest = url.dropFirst(7)
        } else {
            return false
        }
        // A host must follow; no whitespace or control characters anywhere.
        guard let first = rest.first, first != "/", first != "?", first != "#" else { return false }
        return !url.unicodeScalars.contains { $0.value <= 0x20 || $0.value == 0x7F }
    }

    private static func scroll(_ value: JSONValue?, _ name: String) throws(HandoffError) -> Int64 {
        guard let value else { return 0 }
        guard let number = value.doubleValue, number.isFinite, number >= 0, number <= Double(maximumScroll) else {
            throw invalid("\"\(name)\" must be a number from 0 to \(maximumScroll).")
        }
        return Int64(number.rounded())
    }

    private static func onlyKeys(_ allowed: Set<String>, in fields: [String: JSONValue], type: String) throws(HandoffError) {
        if let unknown = fields.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw invalid("A \"\(type)\" message has an unknown field \"\(unknown.prefix(40))\".")
        }
    }

    static func invalid(_ message: String) -> HandoffError {
        HandoffError(.invalidRequest, message, fix: "Use the Handoff extension of the same release as handoff-webext-host; the message was ignored.")
    }
}

/// Messages from the host to the extension: the case's name under `"type"` beside its fields.
public enum HostMessage: Encodable, Equatable, Sendable {
    /// Open this page in a new tab of the front window and scroll it there.
    case `continue`(TabState)
    /// The tab is offered (`current`) or no longer (`resign`).
    case done(String)
    /// A message was refused, or handoffd refused it; nothing changed.
    case error(HandoffError)

    // `{"type": "ok", "done": "current"}`: the extension's names.
    enum CodingKeys: String, CodingKey { case `continue`, done = "ok", error }
    enum DoneCodingKeys: String, CodingKey { case _0 = "done" }

    public var json: JSONValue { JSONValueCoding.encode(self, tag: "type") }
}
