import Foundation
import HandoffCore
import Testing

@Suite struct VersionTests {
    /// `--version` prints what the package is: the top entry of Packaging/debian/changelog.
    @Test func matchesTheChangelog() throws {
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let changelog = try String(contentsOf: repository.appendingPathComponent("Packaging/debian/changelog"), encoding: .utf8)
        let top = try #require(changelog.split(separator: "\n").first)
        #expect(top.hasPrefix("handoff (\(HandoffVersion.current)) "), "changelog says \(top)")
        #expect(HandoffVersion.line(program: "handoffd") == "handoffd \(HandoffVersion.current)")
    }
}
