import Foundation
import HandoffAPI
import HandoffCore
@testable import HandoffDaemon
import HandoffTransport
import Testing

/// Several publishers through the daemon's own request handler: the most recent wins,
/// and resigning the current one hands back to the one before, with a new sequence.
@Suite struct CurrentActivityTests {
    let tab = Activity(type: "io.github.handoff.browser.firefox", title: "A page", userInfo: ["scrollY": .integer(1200)],
                       targetContentIdentifier: nil, webpageURL: "https://example.org/a", expiresAtMillis: nil, sequence: 0)
    let document = Activity(type: "io.github.handoff.document", title: "notes.md", userInfo: [:],
                            targetContentIdentifier: nil, webpageURL: nil, expiresAtMillis: nil, sequence: 0)

    private func send(_ test: TestDaemon, _ request: Request) async throws -> JSONValue {
        let (client, server) = try connectedPair()
        defer { client.close(); server.close() }
        switch await test.daemon.handle(request, payloadActivity: nil, id: nil, session: LocalSession(connection: server, loop: .shared)) {
        case let .success(reply)?: return reply.result
        case let .failure(error)?: throw error
        case nil: throw HandoffError(.internal, "no reply", fix: "")
        }
    }

    private func current(_ test: TestDaemon) async -> (publisher: String, type: String, sequence: UInt64)? {
        await test.daemon.published.map { ($0.publisher, $0.activity.type, $0.activity.sequence) }
    }

    @Test func resigningTheCurrentPublisherHandsBackToThePreviousOne() async throws {
        let test = try TestDaemon()
        defer { test.remove() }
        _ = try await send(test, .publish(.json(document), publisher: "documents"))
        _ = try await send(test, .publish(.json(tab), publisher: "browser-firefox"))
        let browsing = try #require(await current(test))
        #expect(browsing.publisher == "browser-firefox")
        #expect(try await send(test, .resign(publisher: "browser-firefox"))["resigned"] == .bool(true))
        let handedBack = try #require(await current(test))
        #expect(handedBack.publisher == "documents")
        #expect(handedBack.type == document.type)
        #expect(handedBack.sequence > browsing.sequence) // a new offer, so peers list it again
        let status = await test.daemon.status()
        #expect(status.current?.publisher == "documents")
        // Most recent action first.
        #expect(status.publishers == [
            .init(publisher: "browser-firefox", type: tab.type, state: "resigned"),
            .init(publisher: "documents", type: document.type, state: "current"),
        ])
    }

    @Test func anotherPublishersResignLeavesTheCurrentOffer() async throws {
        let test = try TestDaemon()
        defer { test.remove() }
        _ = try await send(test, .publish(.json(tab), publisher: "browser-chromium"))
        _ = try await send(test, .publish(.json(document), publisher: "documents"))
        let before = try #require(await current(test))
        #expect(try await send(test, .resign(publisher: "browser-chromium"))["resigned"] == .bool(true))
        let after = try #require(await current(test))
        #expect(after.publisher == "documents")
        #expect(after.sequence == before.sequence) // untouched: same offer
        // Invalidating the last one leaves nothing offered.
        #expect(try await send(test, .invalidate(publisher: "documents"))["invalidated"] == .bool(true))
        #expect(await current(test) == nil)
        // The resigned tab can come back.
        _ = try await send(test, .becomeCurrent(publisher: "browser-chromium"))
        #expect(await current(test)?.publisher == "browser-chromium")
    }

    @Test func anInvalidPublishChangesNothing() async throws {
        let test = try TestDaemon()
        defer { test.remove() }
        _ = try await send(test, .publish(.json(document), publisher: "documents"))
        let before = try #require(await current(test))
        var expired = tab
        expired.expiresAtMillis = 1
        await #expect(throws: HandoffError.self) { try await send(test, .publish(.json(expired), publisher: "browser-firefox")) }
        let after = try #require(await current(test))
        #expect(after.publisher == "documents" && after.sequence == before.sequence)
        #expect(await test.daemon.offering.publishers.entry(of: "browser-firefox") == nil)
    }

    @Test func requestsWithoutAPublisherShareTheDefaultOne() async throws {
        let test = try TestDaemon()
        defer { test.remove() }
        _ = try await send(test, .publish(.json(document), publisher: nil))
        #expect(await current(test)?.publisher == Daemon.defaultPublisher)
        #expect(try await send(test, .resign(publisher: nil))["resigned"] == .bool(true))
        #expect(await current(test) == nil)
    }

    /// `handoff-peer resign` / `invalidate` without --publisher: the host stops offering anything,
    /// with nothing handed back (a person at a terminal means all of it).
    @Test func resignOrInvalidateWithoutAPublisherStopsEveryOffer() async throws {
        let test = try TestDaemon()
        defer { test.remove() }
        _ = try await send(test, .publish(.json(document), publisher: "documents"))
        _ = try await send(test, .publish(.json(tab), publisher: "browser-firefox"))
        #expect(try await send(test, .resign(publisher: nil))["resigned"] == .bool(true))
        #expect(await current(test) == nil)
        _ = try await send(test, .becomeCurrent(publisher: "documents"))
        #expect(await current(test)?.publisher == "documents")
        #expect(try await send(test, .invalidate(publisher: nil))["invalidated"] == .bool(true))
        #expect(await current(test) == nil)
        #expect(await test.daemon.offering.publishers.entries.isEmpty)
    }
}

/// Every op the daemon can answer alone (no peer, no app waiting) answers with its declared result type.
@Suite struct DeclaredResultTests {
    @Test func eachReplyReadsAsItsOpsResultType() async throws {
        let test = try TestDaemon()
        defer { test.remove() }
        let activity = Activity(type: "io.github.handoff.document", title: "notes.md")
        let requests: [Request] = [
            .hello, .id, .status, .list, .devices, .pairable, .declarations, .doctor(peer: nil),
            .publish(.json(activity), publisher: "documents"), .becomeCurrent(publisher: "documents"),
            .resign(publisher: "documents"), .invalidate(publisher: "documents"), .disable, .enable,
        ]
        for request in requests {
            let (client, server) = try connectedPair()
            defer { client.close(); server.close() }
            guard case let .success(reply)? = await test.daemon.handle(request, payloadActivity: nil, id: nil, session: LocalSession(connection: server, loop: .shared)) else {
                Issue.record("\(request.op) failed")
                continue
            }
            let type = request.op.resultType
            #expect(throws: Never.self, "\(request.op)") { _ = try type.init(json: reply.result, context: "\(request.op)") }
        }
    }
}
