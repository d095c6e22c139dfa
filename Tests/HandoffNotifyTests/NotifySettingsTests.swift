import HandoffCore
import HandoffNotify
import Testing

@Suite struct NotifySettingsTests {
    @Test func path() {
        #expect(NotifySettings.path(environment: ["XDG_CONFIG_HOME": "/c", "HOME": "/h"]) == "/c/handoff/notify.conf")
        #expect(NotifySettings.path(environment: ["XDG_CONFIG_HOME": "relative", "HOME": "/h"]) == "/h/.config/handoff/notify.conf")
    }

    @Test func onOffAndComments() throws {
        #expect(try NotifySettings.notificationsEnabled(in: "", path: "f"))
        #expect(try !NotifySettings.notificationsEnabled(in: "# quiet\nnotifications = off\n", path: "f"))
        #expect(try NotifySettings.notificationsEnabled(in: "notifications=on # again", path: "f"))
        #expect(try !NotifySettings.notificationsEnabled(in: "  notifications  =  No\n\n", path: "f"))
    }

    @Test func anythingElseIsReported() {
        for text in ["notification = off", "notifications = maybe", "notifications", "= off"] {
            #expect(throws: HandoffError.self) { try NotifySettings.notificationsEnabled(in: text, path: "f") }
        }
    }
}
