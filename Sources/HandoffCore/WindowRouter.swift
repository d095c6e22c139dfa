/// Picks the window a continued activity lands in, by the four steps SwiftUI
/// uses (design.md), so a document already open is not opened again:
///
/// 1. exactly one window is open: that window;
/// 2. an open window that prefers the match key, else one that allows it: that window;
/// 3. the first window declaration whose conditions match: a new window of it;
/// 4. the first declaration with no conditions at all: a new window of it.
///
/// The match key is the targetContentIdentifier, else the webpageURL as an
/// absolute string. A condition matches a key it is a prefix of; "*" matches
/// every key, and also an activity without a key. A declaration whose
/// condition set is empty matches nothing and is never the fallback.
public struct WindowRouter: Sendable {
    public struct Declaration: Sendable, Equatable {
        public var id: String
        /// nil: no conditions (eligible as the fallback); []: matches nothing.
        public var conditions: Set<String>?

        public init(id: String, conditions: Set<String>?) {
            self.id = id
            self.conditions = conditions
        }
    }

    public struct OpenWindow: Sendable, Equatable {
        public var id: String
        public var preferring: Set<String>
        public var allowing: Set<String>

        public init(id: String, preferring: Set<String> = [], allowing: Set<String> = []) {
            self.id = id
            self.preferring = preferring
            self.allowing = allowing
        }
    }

    public enum Target: Equatable, Sendable {
        case existing(window: String, step: Int)
        case new(declaration: String, step: Int)
        /// No window can take it; the app should report it as failed.
        case none
    }

    public var declarations: [Declaration]
    public var windows: [OpenWindow]

    public init(declarations: [Declaration] = [], windows: [OpenWindow] = []) {
        self.declarations = declarations
        self.windows = windows
    }

    public static func matchKey(targetContentIdentifier: String?, webpageURL: String?) -> String? {
        targetContentIdentifier ?? webpageURL
    }

    static func matches(_ conditions: Set<String>, key: String?) -> Bool {
        if conditions.contains("*") { return true }
        guard let key else { return false }
        return conditions.contains { !$0.isEmpty && key.hasPrefix($0) }
    }

    public func route(key: String?) -> Target {
        if windows.count == 1 { return .existing(window: windows[0].id, step: 1) }
        if let preferred = windows.first(where: { Self.matches($0.preferring, key: key) }) {
            return .existing(window: preferred.id, step: 2)
        }
        if let allowed = windows.first(where: { Self.matches($0.allowing, key: key) }) {
            return .existing(window: allowed.id, step: 2)
        }
        if let declared = declarations.first(where: { $0.conditions.map { Self.matches($0, key: key) } ?? false }) {
            return .new(declaration: declared.id, step: 3)
        }
        if let fallback = declarations.first(where: { $0.conditions == nil }) {
            return .new(declaration: fallback.id, step: 4)
        }
        return .none
    }

    public func route(_ activity: Activity) -> Target {
        route(key: Self.matchKey(targetContentIdentifier: activity.targetContentIdentifier, webpageURL: activity.webpageURL))
    }
}
