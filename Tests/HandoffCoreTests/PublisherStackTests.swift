import HandoffCore
import Testing

/// The one rule for several publishers: the most recent user action wins; resigning hands back.
@Suite struct PublisherStackTests {
    @Test func theMostRecentPublishIsCurrent() {
        var stack = PublisherStack<String>()
        #expect(stack.current == nil)
        stack.publish("tab", by: "browser-firefox")
        stack.publish("notes.md", by: "documents")
        #expect(stack.current?.item == "notes.md")
        stack.publish("other tab", by: "browser-firefox")
        #expect(stack.current?.item == "other tab")
        #expect(stack.entries.map(\.publisher) == ["documents", "browser-firefox"])
    }

    @Test func resigningTheCurrentHandsBackToThePreviousOne() {
        var stack = PublisherStack<String>()
        stack.publish("notes.md", by: "documents")
        stack.publish("tab", by: "browser-chromium")
        let before = stack.current?.generation
        let changed1 = stack.resign("browser-chromium")
        #expect(changed1)
        #expect(stack.current?.item == "notes.md")
        #expect(stack.current?.generation != before)
        let changed2 = stack.resign("browser-chromium")
        #expect(!changed2) // already resigned
        let changed3 = stack.resign("documents")
        #expect(changed3)
        #expect(stack.current == nil)
    }

    @Test func resigningAnotherPublishersActivityLeavesTheCurrentOne() {
        // Chromium loses focus after Firefox gained it: its resign must not end Firefox's tab.
        var stack = PublisherStack<String>()
        stack.publish("chromium tab", by: "browser-chromium")
        stack.publish("firefox tab", by: "browser-firefox")
        let current = stack.current
        let changed4 = stack.resign("browser-chromium")
        #expect(changed4)
        #expect(stack.current?.item == current?.item)
        #expect(stack.current?.generation == current?.generation)
        let changed5 = stack.resign("nobody")
        #expect(!changed5)
    }

    @Test func becomeCurrentBringsBackAResignedActivity() {
        var stack = PublisherStack<String>()
        stack.publish("a", by: "app")
        stack.publish("b", by: "cli")
        stack.resign("app")
        let back2195 = stack.becomeCurrent("app")
        #expect(back2195 == "a")
        #expect(stack.current?.publisher == "app")
        let back2297 = stack.becomeCurrent("nobody")
        #expect(back2297 == nil)
    }

    @Test func invalidateEndsOnlyTheCallersActivity() {
        var stack = PublisherStack<String>()
        stack.publish("a", by: "app")
        stack.publish("b", by: "cli")
        let changed6 = stack.invalidate("cli")
        #expect(changed6)
        #expect(stack.current?.item == "a")
        let changed7 = stack.invalidate("cli")
        #expect(!changed7)
        let back2726 = stack.becomeCurrent("cli")
        #expect(back2726 == nil)
    }

    @Test func expiredActivitiesAreDroppedWhereverTheyAre() {
        var stack = PublisherStack<Int>()
        stack.publish(1, by: "a")
        stack.publish(2, by: "b")
        stack.publish(3, by: "c")
        let gone = stack.removeAll { $0 == 2 || $0 == 3 }
        #expect(gone.map(\.publisher) == ["b", "c"])
        #expect(stack.current?.item == 1)
    }

    @Test func boundedNumberOfPublishers() {
        var stack = PublisherStack<Int>()
        for index in 0..<(PublisherStack<Int>.maximumPublishers + 5) { stack.publish(index, by: "p\(index)") }
        #expect(stack.entries.count == PublisherStack<Int>.maximumPublishers)
        #expect(stack.entry(of: "p0") == nil)
        #expect(stack.current?.publisher == "p\(PublisherStack<Int>.maximumPublishers + 4)")
    }

    @Test func publisherNames() {
        #expect(PublisherStack<Int>.validName("browser-firefox"))
        #expect(PublisherStack<Int>.validName("org.example.reader"))
        #expect(!PublisherStack<Int>.validName(""))
        #expect(!PublisherStack<Int>.validName("two words"))
        #expect(!PublisherStack<Int>.validName("é"))
        #expect(!PublisherStack<Int>.validName(String(repeating: "x", count: 65)))
    }
}
