import HandoffCore
import Testing

@Suite struct WindowRouterTests {
    typealias Declaration = WindowRouter.Declaration
    typealias Window = WindowRouter.OpenWindow

    @Test func stepOneASingleOpenWindowTakesEverything() {
        let router = WindowRouter(declarations: [Declaration(id: "viewer", conditions: ["document:"])],
                                  windows: [Window(id: "only")])
        #expect(router.route(key: "document:42") == .existing(window: "only", step: 1))
        #expect(router.route(key: nil) == .existing(window: "only", step: 1))
    }

    @Test func stepTwoPreferringBeatsAllowingAndOrderDecidesTies() {
        let router = WindowRouter(windows: [
            Window(id: "allows-all", allowing: ["*"]),
            Window(id: "prefers-doc-1", preferring: ["document:1"]),
            Window(id: "prefers-doc-1-too", preferring: ["document:1"]),
        ])
        #expect(router.route(key: "document:1") == .existing(window: "prefers-doc-1", step: 2))
        #expect(router.route(key: "document:2") == .existing(window: "allows-all", step: 2))
    }

    @Test func conditionsArePrefixes() {
        let router = WindowRouter(windows: [Window(id: "a", preferring: ["document:reader/"]), Window(id: "b")])
        #expect(router.route(key: "document:reader/ch3") == .existing(window: "a", step: 2))
        #expect(router.route(key: "document:other") == .none)
    }

    @Test func stepThreeFirstMatchingDeclarationOpensANewWindow() {
        let router = WindowRouter(declarations: [
            Declaration(id: "fallback", conditions: nil),
            Declaration(id: "photos", conditions: ["photo:"]),
            Declaration(id: "documents", conditions: ["document:"]),
            Declaration(id: "documents-2", conditions: ["document:"]),
        ], windows: [Window(id: "w1", preferring: ["photo:9"]), Window(id: "w2", preferring: ["photo:8"])])
        #expect(router.route(key: "document:7") == .new(declaration: "documents", step: 3))
    }

    @Test func stepFourTheFirstDeclarationWithoutConditions() {
        let router = WindowRouter(declarations: [
            Declaration(id: "photos", conditions: ["photo:"]),
            Declaration(id: "main", conditions: nil),
            Declaration(id: "second", conditions: nil),
        ])
        #expect(router.route(key: "document:7") == .new(declaration: "main", step: 4))
    }

    @Test func anEmptyConditionSetMatchesNothingAndIsNeverTheFallback() {
        let router = WindowRouter(declarations: [Declaration(id: "inspector", conditions: [])])
        #expect(router.route(key: "document:7") == .none)
        #expect(router.route(key: nil) == .none)
        let withFallback = WindowRouter(declarations: [Declaration(id: "inspector", conditions: []), Declaration(id: "main", conditions: nil)])
        #expect(withFallback.route(key: "document:7") == .new(declaration: "main", step: 4))
    }

    @Test func noKeyAtAllOnlyWildcardsOrTheFallbackTakeIt() {
        let router = WindowRouter(declarations: [Declaration(id: "docs", conditions: ["document:"]), Declaration(id: "main", conditions: nil)],
                                  windows: [Window(id: "w1", preferring: ["document:1"]), Window(id: "w2", allowing: ["*"])])
        #expect(router.route(key: nil) == .existing(window: "w2", step: 2))
        let noWildcard = WindowRouter(declarations: [Declaration(id: "docs", conditions: ["document:"]), Declaration(id: "main", conditions: nil)],
                                      windows: [Window(id: "w1", preferring: ["document:1"]), Window(id: "w2")])
        #expect(noWildcard.route(key: nil) == .new(declaration: "main", step: 4))
    }

    @Test func theKeyIsTheContentIdentifierElseTheWebpageURL() {
        let router = WindowRouter(windows: [Window(id: "doc", preferring: ["document:1"]), Window(id: "web", preferring: ["https://example.org/"])])
        var activity = Activity(type: "org.example.reader", title: "", targetContentIdentifier: "document:1", webpageURL: "https://example.org/a")
        #expect(router.route(activity) == .existing(window: "doc", step: 2))
        activity.targetContentIdentifier = nil
        #expect(router.route(activity) == .existing(window: "web", step: 2))
    }
}
