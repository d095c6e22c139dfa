import HandoffCore
import HandoffNotify
import Testing

@Suite struct NotifySettingsTests {
    @Test func path() {
        #expect(NotifySettings.path(environment: ["XDG_CONFIG_HOME": "/c", "HOME": "/h"]) == "/c/handoff/notify.conf")
        #expect(NotifySettings.path(environment: ["XDG_CONFIG_HOME": "relative", "HOME": "/h"]) == "/h/.config/handoff/notify.conf")
    }

    @Test func onOffAndComments() throws {
        #expect(try NotifySettings.parse("", path: "f") == NotifySettings(notifications: true, panel: true))
        #expect(try NotifySettings.parse("# quiet\nnotifications = off\n", path: "f") == NotifySettings(notifications: false, panel: true))
        #expect(try NotifySettings.parse("notifications=on # again", path: "f") == NotifySettings(notifications: true, panel: true))
        #expect(try NotifySettings.parse("  notifications  =  No\n\n", path: "f") == NotifySettings(notifications: false, panel: true))
        #expect(try NotifySettings.parse("panel = off\nnotifications = yes", path: "f") == NotifySettings(notifications: true, panel: false))
    }

    @Test func anythingElseIsReported() {
        for text in ["notification = off", "notifications = maybe", "notifications", "= off", "panel = hidden", "tray = off"] {
            #expect(throws: HandoffError.self) { try NotifySettings.parse(text, path: "f") }
        }
    }
}
