import HandoffCore

/// The host's one piece of state, what it offers now, as a state machine that
/// returns what to do; the caller talks to handoffd and the browser, then says
/// how it went. A refused message changes nothing.
public struct HostState: Sendable {
    public enum Action: Equatable, Sendable {
        /// Publish this activity (make it current), then call `published`.
        case publish(TabState, Activity)
        /// Resign what this host offered, then call `resigned`.
        case resign
        /// Answer the extension; nothing to do with handoffd.
        case reply(HostMessage)
    }

    public let family: BrowserFamily
    /// The tab this host made current, if it still offers one.
    public private(set) var offered: TabState?

    public init(family: BrowserFamily) {
        self.family = family
    }

    /// A message's body (after its header was checked).
    public func receive(_ body: [UInt8]) -> Action {
        let message: ExtensionMessage
        do throws(HandoffError) {
            message = try ExtensionMessage.parse(body)
        } catch {
            return .reply(.error(error))
        }
        switch message {
        case let .current(tab):
            // The same tab again (a page's load, title and favicon events each report it): no new
            // offer, which peers would list anew and notify about again.
            if tab == offered { return .reply(.done("current")) }
            let activity = tab.activity(family: family)
            do throws(HandoffError) {
                try activity.validate()
            } catch {
                return .reply(.error(error))
            }
            return .publish(tab, activity)
        case .resign:
            // Only what this host offered: nothing to resign otherwise (handoffd resigns per publisher).
            return offered == nil ? .reply(.done("resign")) : .resign
        }
    }

    public mutating func published(_ tab: TabState) { offered = tab }
    public mutating func resigned() { offered = nil }
}
